"""Reading shell commands the way a shell would, without running them: Dockerfile instructions
and shell scripts as logical lines (continuations joined), words (quotes removed), simple
commands, and `${VAR}` expansion from what the file itself assigns. Shared by the patch stack
(which `git apply` commands apply what) and the install lines (which `pip install` pins what).
"""

from __future__ import annotations

import re
import shlex
from typing import Iterator

from sglang_contracts.infra.lines import numbered_lines

UNSET = "\0"  # a variable nothing sets: stands for any path segment
SEPARATORS = {";", "&&", "||", "|", "&", "\n", "(", ")", "do", "then", "else", "elif", "{", "}"}
SHELL_SUFFIXES = (".sh", ".bash")
MAX_WORD = 4096  # characters of an expanded word
MAX_LEXED = 4096  # characters of a command line read with shlex (see words)
LEADING = {"if", "!", "while", "until", "time", "sudo", "command", "exec"}
# `${NAME}`, `${NAME:-word}`, `$NAME`; and an unclosed `${NAME:-...`, read once to the end as a
# variable nothing sets (tried from each `${` of a long unclosed run, the first alternative read
# the rest again each time: time quadratic in the run's length).
VARIABLE = re.compile(r"\$\{(\w+)(?:(:?[-=+?])([^}]*+))?\}|\$(\w+)|\$\{\w+:?[-=+?][^}]*+\Z")


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) with backslash continuations joined and comment lines dropped."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, line in enumerate(numbered_lines(text), start=1):
        if line.lstrip().startswith("#"):
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    if pending:
        out.append((start, pending))
    return out


def expand(word: str, env: dict[str, str], keep: frozenset[str] = frozenset(), depth: int = 0,
           known: dict[tuple[str, int], str] | None = None) -> str:
    """Variables replaced (recursively, bounded); `keep` names stay as they are (loop variables,
    bound per iteration); a variable nothing sets becomes UNSET."""
    if depth > 8:
        return UNSET
    # Each variable's value is expanded once a level, not once a use: values that each name the
    # next k times cost k^8 expansions of one word (sixth campaign M02: 777 bytes, 82 s).
    known = {} if known is None else known
    produced = 0

    def value(match: re.Match) -> str:
        nonlocal produced
        if produced > MAX_WORD:  # already too long to keep: nothing more is expanded
            return ""
        name = match.group(1) or match.group(4)
        if name in keep:
            found = "${" + name + "}"
        elif name in env:
            if (name, depth) not in known:
                known[name, depth] = expand(env[name], env, keep, depth + 1, known)
            found = known[name, depth]
        elif match.group(2) and match.group(2).lstrip(":") in "-=":
            found = expand(match.group(3), env, keep, depth + 1, known)
        else:
            found = UNSET
        produced += len(found)
        return found

    word = re.sub(r"\$\([^)]*\)?|`[^`]*`", UNSET, word)  # command substitution: not known
    unclosed = word.find("${", word.rfind("}") + 1)  # what the shell split off the end of a word cut in two
    if unclosed >= 0:
        word = word[:unclosed] + UNSET
    expanded = VARIABLE.sub(value, word)
    return expanded if len(expanded) <= MAX_WORD else UNSET  # `a=$a$a` over and over doubles a word


def words(line: str) -> list[str]:
    """The shell words of a command line (quotes removed, `;&|()` runs apart). shlex builds a
    word a character at a time, in time quadratic in the word's length: a line longer than
    MAX_LEXED (none of the real scripts' joined lines is half of it) is read as plain words."""
    if len(line) > MAX_LEXED:
        return line.split()
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: read as plain words
        return line.split()


def split_commands(words: list[str]) -> Iterator[tuple[list[str], str]]:
    """Each simple command, without the keywords that lead into them (`if ! git apply ...`),
    with the separator that ends it (`;;`, `)`, `{`: what a reader of the script's structure
    needs); empty between two separators."""
    current: list[str] = []
    for word in [*words, ";"]:
        if word in SEPARATORS or set(word) <= set(";&|()"):
            while current and current[0] in LEADING:
                current.pop(0)
            yield current, word
            current = []
        else:
            current.append(word)


def commands(words: list[str]) -> list[list[str]]:
    """Simple commands, without the keywords that lead into them (`if ! git apply ...`)."""
    return [command for command, _ in split_commands(words) if command]
