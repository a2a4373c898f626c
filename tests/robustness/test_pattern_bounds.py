"""No regular expression of the tool takes more than linear time on the text a project holds
(issue 38, section 2). The tool runs in CI on pull requests, so that text is an attacker's, and
a pattern that backtracks over a long run of what it half-matches hung a check for minutes
(`"sglang-" * 800` in a build script's string, `"match " * 20000` in a requirement's comment,
"`'" repeated after a `Remove when:`, `"${A:-" * 40000` in a Dockerfile's FROM).

The patterns are collected, not listed, so that a new one is covered when it is written: every
compiled pattern a module of sglang_contracts holds (in its globals, or in a list, tuple or dict
of them there), and every literal pattern handed to a `re` function inside a function. A pattern
a function builds from names is in BUILT (or NOT_PROJECT_TEXT, with why), and a test fails when a
function that builds one is in neither. Each pattern is run on inputs of 128 kB, each a beginning
of what it matches, or one character, repeated; a pattern the code scans text with (`search`,
`finditer`, `sub`, or handed on) is scanned over them, one it only ever `match`es or `fullmatch`es
is matched there. On 128 kB a linear pattern takes milliseconds and a quadratic one seconds (each
of the twelve this test found took more than BOUND); a megabyte would take eight times as long
and find no more.

The end-to-end tests run the real check, in a fresh process, on each input the issue reported,
at a size the old patterns took well over ten seconds on (the check takes about one).
"""

from __future__ import annotations

import ast
import importlib
import re
import re._constants as sre  # a pattern's parsed form: the inputs are built from what it matches
import re._parser as sre_parse
import signal
import subprocess
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import pytest

from sglang_contracts.check import incremental
from sglang_contracts.diagnostics import MOST_LISTED
from sglang_contracts.contracts import commandline as commandline_contracts
from sglang_contracts.infra.shell import UNSET, expand, words
from sglang_contracts.patch import rebase, stack_rebase
from sglang_contracts.project import commandline as commandline_project
from tests.helpers import package_syntax
from tests.helpers import write_tree as write
from tests.robustness.bump import OK_FINDING, cli

SECONDS = 15
BOUND = 1.0  # seconds for one pattern on one input (or one function on a megabyte)
INPUT_CHARS = 1 << 17
SCANNING = {"search", "finditer", "findall", "sub", "subn", "split"}
ANCHORED = {"match", "fullmatch"}

# Patterns functions build from names, (module, function) -> one built as that function builds it.
BUILT: dict[tuple[str, str], Callable[[], re.Pattern]] = {
    ("sglang_contracts.check.incremental", "_attribute_chains"): lambda: incremental._attribute_chains(["np", "torch"]),
    ("sglang_contracts.patch.rebase", "_definition_of"): lambda: rebase._definition_of("release_memory_occupation"),
    ("sglang_contracts.contracts.commandline", "_mention_pattern"): lambda: commandline_contracts._mention_pattern("tp_size"),
    ("sglang_contracts.project.commandline", "_flag_pattern"): lambda: commandline_project._flag_pattern("--tool-"),
    ("sglang_contracts.patch.stack_rebase", "folder_pattern"): lambda: stack_rebase.folder_pattern("v0.5.14"),
}
# Functions that build a pattern no project text is searched with.
NOT_PROJECT_TEXT = {
    ("sglang_contracts.contracts.attributes", "_set_by_name"): "searches the release's own source files",
    ("sglang_contracts.analysis.hints", "_declaration"): "matches a line of the release's own source",
    ("sglang_contracts.diagnostics.suppressions", "_pattern"): "fnmatch.translate of configured globs (PathGlobs), "
                                                                "which emulates atomic groups for `*`: matched against "
                                                                "project paths only",
    ("sglang_contracts.contracts.doubles", "_matches"): "the pattern is the project's own (a source probe, SGC603), run "
                                                         "on the release's source only when its backtracking is bounded "
                                                         "(test_a_source_probe_whose_pattern_could_backtrack...)",
}


class TooSlow(Exception):
    pass


@contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Stop what runs inside after `seconds` with TooSlow, so that a regression fails and does not
    hang the suite (`re` looks at signals while it matches)."""
    def stop(*_) -> None:
        raise TooSlow(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- the patterns --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Use:
    """A pattern, where it is written, and how the code reads text with it: `finditer` for any
    scan (it reads at least as much as search, findall, sub or split), else `match` and/or
    `fullmatch`, tried where the caller starts them."""

    where: str
    pattern: re.Pattern
    methods: frozenset[str]


SCAN = frozenset({"finditer"})


def _methods(used: set[str]) -> frozenset[str]:
    return frozenset(used) if used <= ANCHORED else SCAN


MODULES = {name: tree for name, (path, tree) in package_syntax().items()
           if path.name != "__main__.py"}  # __main__ runs the CLI


def _in_functions(tree: ast.Module) -> Iterator[tuple[ast.AST, str | None]]:
    """Each node (in ast.walk's order) with the innermost function it is in (its decorators and
    defaults too), or None: one walk, where a walk of each function's nodes took a second."""
    todo = deque([(tree, None)])
    while todo:
        node, function = todo.popleft()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        todo.extend((child, function) for child in ast.iter_child_nodes(node))
        yield node, function


def _re_calls() -> Iterator[tuple[str, str | None, ast.Call]]:
    """(module, innermost function or None, call) of each `re.<function>(pattern, ...)`."""
    for module, tree in MODULES.items():
        for node, function in _in_functions(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" \
                    and node.func.attr in SCANNING | ANCHORED | {"compile"}:
                yield module, function, node


def _flag_value(node: ast.AST) -> int:
    """`re.M`, `re.I | re.S` as written in a call."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flag_value(node.left) | _flag_value(node.right)
    return getattr(re, node.attr)


def _flags(call: ast.Call) -> int:
    """The flags a `re` call passes, by position or keyword."""
    position = {"compile": 1, "sub": 4, "subn": 4, "split": 3}.get(call.func.attr, 2)
    given = [keyword.value for keyword in call.keywords if keyword.arg == "flags"] or call.args[position:position + 1]
    return _flag_value(given[0]) if given else 0


def _uses_of_names() -> dict[str, set[str]]:
    """How the code uses each name it reads: the method called on it, or "other" (handed on)."""
    uses: dict[str, set[str]] = {}
    for tree in MODULES.values():
        nodes = list(ast.walk(tree))
        # A name's method is the attribute read on it (`NAME.search`): the node is an attribute's value.
        methods = {id(node.value): node.attr for node in nodes if isinstance(node, ast.Attribute)}
        for node in nodes:
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                uses.setdefault(node.id if isinstance(node, ast.Name) else node.attr, set()).add(
                    methods.get(id(node), "other"))
    return uses


def _held(value: object) -> Iterator[tuple[str, re.Pattern]]:
    """The patterns in a list, tuple or dict, and in its lists and tuples (MENTIONS' (kind, pattern))."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else []
    for key, item in items:
        if isinstance(item, re.Pattern):
            yield f"[{key!r}]", item
        elif isinstance(item, (list, tuple)):
            yield from ((f"[{key!r}]{inner}", held) for inner, held in _held(item))


def _module_patterns() -> Iterator[Use]:
    uses = _uses_of_names()
    for module, tree in MODULES.items():
        loaded = vars(importlib.import_module(module))
        defined = {target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                   for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                   if isinstance(target, ast.Name)}
        for name in sorted(defined):
            value = loaded.get(name)
            if isinstance(value, re.Pattern):  # by name anywhere: a name two modules give a pattern counts for both
                yield Use(f"{module}.{name}", value, _methods(uses.get(name, {"other"})))
            for key, held in _held(value):
                yield Use(f"{module}.{name}{key}", held, SCAN)


def _inline_patterns() -> Iterator[Use]:
    for module, function, call in _re_calls():
        if function is not None and call.args and isinstance(call.args[0], ast.Constant):
            yield Use(f"{module}:{call.lineno}", re.compile(call.args[0].value, _flags(call)),
                      _methods({call.func.attr}))  # a compiled one is taken to be scanned with


def _built_patterns() -> Iterator[Use]:
    for (module, function), build in BUILT.items():
        yield Use(f"{module}.{function}", build(), SCAN)


def all_uses() -> list[Use]:
    """Each pattern once (per way of use), named by every place it is written."""
    places: dict[tuple[str, int, frozenset[str]], list[Use]] = {}
    for use in [*_module_patterns(), *_inline_patterns(), *_built_patterns()]:
        places.setdefault((use.pattern.pattern, use.pattern.flags, use.methods), []).append(use)
    return sorted((Use(" ".join(use.where for use in same), same[0].pattern, same[0].methods)
                   for same in places.values()), key=lambda use: use.where)


# -- inputs built from what a pattern matches ------------------------------------------------------

SAMPLE_CHARACTERS = "a1 _-./:$#{}\"'`\t\n(),;=@[]<>!?+*~&|\\%^AZ"  # a set's members are picked from these
FILLERS = ["a", "A", "1", " ", "\t", "-", ".", "/", "#", "'", '"', "`", "$", "{", "\n", "_"]
LONGEST_PIECE = 8  # characters of a beginning repeated
EXAMPLES = 16  # paths through a pattern followed


def _in_set(items, char: str) -> bool:
    """Whether `char` is in a parsed set (`[^}]`, `[\\w.\\-/]`)."""
    word = char.isalnum() or char == "_"
    categories = {sre.CATEGORY_DIGIT: char.isdigit(), sre.CATEGORY_NOT_DIGIT: not char.isdigit(),
                  sre.CATEGORY_SPACE: char.isspace(), sre.CATEGORY_NOT_SPACE: not char.isspace(),
                  sre.CATEGORY_WORD: word, sre.CATEGORY_NOT_WORD: not word}
    negated = bool(items) and items[0][0] is sre.NEGATE
    hit = any((op is sre.LITERAL and ord(char) == value) or (op is sre.RANGE and value[0] <= ord(char) <= value[1])
              or (op is sre.CATEGORY and categories.get(value, False)) for op, value in items[negated:])
    return hit != negated


def _inner(op, value) -> list:
    """The parsed sequences inside a group, a repeat, a branch or a lookaround."""
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        return [value[2]]
    if op is sre.BRANCH:
        return value[1]
    if op is sre.SUBPATTERN:
        return [value[3]]
    if op is sre.ATOMIC_GROUP:
        return [value]
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [value[1]]
    return []


def _stoppers(parsed) -> set[str]:
    """The characters a negated set stops at (`}` for `[^}]*`): a run ending in one is what sends
    a scan for it back to try again."""
    found = set()
    for op, value in parsed:
        if op is sre.NOT_LITERAL:
            found.add(chr(value))
        elif op is sre.IN and value and value[0][0] is sre.NEGATE:
            found |= {char for char in SAMPLE_CHARACTERS if not _in_set(value, char)}
        for inner in _inner(op, value):
            found |= _stoppers(inner)
    return found


def _examples(parsed) -> list[str]:
    """Strings along paths through a parsed pattern, at most EXAMPLES: each branch, a few members
    of each set, each repeat left out when it may be and taken as often as it must be."""
    found = [""]
    for op, value in parsed:
        if op is sre.LITERAL:
            choices = [chr(value)]
        elif op is sre.NOT_LITERAL:
            choices = ["a" if value != ord("a") else " "]
        elif op is sre.ANY:
            choices = ["a"]
        elif op is sre.IN:
            choices = [char for char in SAMPLE_CHARACTERS if _in_set(value, char)][:4]
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, inner = value
            choices = ([""] if low == 0 else []) + [example * min(max(low, 1), 4) for example in _examples(inner)]
        elif op in (sre.BRANCH, sre.SUBPATTERN, sre.ATOMIC_GROUP):
            choices = [example for inner in _inner(op, value) for example in _examples(inner)]
        else:  # an anchor, a lookaround, a back reference: nothing of its own to read
            choices = [""]
        # Only beginnings are repeated: paths that differ later are one, and the cap cuts fewer.
        found = list(dict.fromkeys((start + choice)[:LONGEST_PIECE] for start in found for choice in choices or [""]))
        found = found[:EXAMPLES]
    return found


def _reads(parsed, char: str) -> bool:
    """Whether some part of a parsed pattern reads `char` (a character nothing reads stops every try)."""
    for op, value in parsed:
        if (op is sre.LITERAL and value == ord(char)) or (op is sre.NOT_LITERAL and value != ord(char)) \
                or op is sre.ANY or (op is sre.IN and _in_set(value, char)) \
                or any(_reads(inner, char) for inner in _inner(op, value)):
            return True
    return False


def adversarial_inputs(pattern: re.Pattern) -> Iterator[str]:
    """INPUT_CHARS each: a beginning of what the pattern matches (alone or, when it ends a word,
    followed by a space), or a character it reads, repeated; then a character nothing in the
    pattern reads, or first every character a negated set of it stops at (the `}` that `[^}]*`
    looks for)."""
    parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    pieces = {example[:end] for example in _examples(parsed) for end in range(1, min(len(example), LONGEST_PIECE) + 1)}
    pieces |= {piece + " " for piece in pieces if piece[-1].isalnum()}  # words apart: `\b` holds before each
    pieces |= {char for char in FILLERS if _reads(parsed, char)}
    endings = {"\0", "".join(sorted(_stoppers(parsed))) + "\0"}
    for piece in sorted(pieces):
        for ending in sorted(endings):
            yield piece * (INPUT_CHARS // len(piece)) + ending


def run(use: Use, text: str) -> None:
    subject = text.encode("utf-8", "surrogatepass") if isinstance(use.pattern.pattern, bytes) else text  # a frame's header
    if use.methods == SCAN:
        for _ in use.pattern.finditer(subject):
            pass
    for method in use.methods & ANCHORED:
        getattr(use.pattern, method)(subject)


USES = all_uses()


@pytest.mark.parametrize("use", USES, ids=[use.where for use in USES])
def test_each_pattern_is_linear_on_repeated_beginnings_of_what_it_matches(use: Use) -> None:
    slow = []
    for text in adversarial_inputs(use.pattern):
        try:
            with time_bound(BOUND):
                run(use, text)
        except TooSlow:
            slow.append(repr(text[:24]) + "...")
            if len(slow) == 3:  # enough to show the shape; each costs BOUND
                break
    assert not slow, f"{use.pattern.pattern!r} takes more than {BOUND} s on: " + ", ".join(slow)


def test_every_function_that_builds_a_pattern_is_known() -> None:
    building = {(module, function) for module, function, call in _re_calls()
                if function is not None and call.args and not isinstance(call.args[0], ast.Constant)}
    assert building == BUILT.keys() | NOT_PROJECT_TEXT.keys()


def test_the_patterns_are_collected() -> None:
    """The collection finds what it is for: patterns of each kind, from the modules that read projects."""
    where = " ".join(use.where for use in USES)
    for expected in ("sglang_contracts.project.images.IMAGE_REFERENCE", "sglang_contracts.project.stack.MENTIONS[0][1]",
                     "sglang_contracts.project.stack:", "sglang_contracts.infra.shell.VARIABLE",
                     "sglang_contracts.project.commandline._flag_pattern"):
        assert expected in where
    assert next(use for use in USES if "project.images.STOCK_BRANCH" in use.where).methods == {"fullmatch"}


# -- the real check on the reported inputs -----------------------------------------------------------

def checked_in_time(project, releases) -> str:
    """The check's output; a failure, not a hang, when it takes more than SECONDS."""
    try:
        status, out, err = cli(project, releases, timeout=SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the check took more than {SECONDS} s")
    assert status == 1, err
    assert OK_FINDING in out  # the rest of the project was checked
    return out


def test_d3_a_string_of_image_name_pieces_in_python_is_read_in_time(project, releases) -> None:
    # IMAGE_REFERENCE was tried from every character of the string and backtracked over it.
    write(project, {"app/build.py": '# built on sglang 0.1.0\nIMAGE = "' + "sglang-" * 600 + '"\n'})
    checked_in_time(project, releases)


def test_d3_a_line_of_image_name_pieces_in_a_stack_file_is_read_in_time(project, releases) -> None:
    # The image tag mention was tried once per run, but backtracked from each `sglang` in it.
    write(project, {"README.md": "Built on sglang:\n" + "sglang-" * 50000 + "\n"})
    checked_in_time(project, releases)


def test_d4_a_requirement_comment_of_cue_words_is_read_in_time(project, releases) -> None:
    # MATCHES_STACK read the rest of the comment again from every "match" (`[^#]*` then "sglang").
    for release in releases:  # SGLang pins transformers: the line's comment is then read
        write(release, {"pyproject.toml": '[project]\nname = "sglang"\ndependencies = ["transformers==4.50.0"]\n'})
    write(project, {"requirements.txt": "transformers==4.50.0  # " + "match " * 12000 + "\n"})
    checked_in_time(project, releases)


def test_d5_a_removal_condition_followed_by_quotes_is_read_in_time(project, releases) -> None:
    # REQUIREMENT_END was tried from each quote of the run and backtracked over the rest of it.
    write(project, {"app/overlay.py": "# Remove when: sglang>=0.2.0" + "`'" * 10000 + "x\nx = 1\n"})
    checked_in_time(project, releases)


def test_d6_a_from_line_of_unclosed_variables_is_read_in_time(project, releases) -> None:
    # VARIABLE was tried from each `${` and read the rest of the line again for its `}`.
    write(project, {"Dockerfile": "FROM lmsysorg/sglang:" + "${A:-" * 20000 + "\n"})
    checked_in_time(project, releases)


def test_d6_a_shell_word_of_unclosed_variables_before_a_brace_expands_in_time() -> None:
    # The cut of an unclosed `${...` at a word's end was a pattern tried from each `${`, reading
    # on to the `}` each time; it is a search for the last `}` now.
    with time_bound(BOUND):
        assert expand("${" * 500_000 + "}x", {}) == UNSET


def test_n01_a_long_word_in_a_build_script_beside_a_patch_is_read_in_time(project, releases) -> None:
    # helper-41's audit: shlex builds a word a character at a time (1 MB word: 17 s, 8 MB: about
    # 18 minutes) when the project holds a patch and its Dockerfile's commands are read for it.
    with time_bound(BOUND):
        assert words("RUN echo " + "a" * 1_000_000 + " 'b c'") == ["RUN", "echo", "a" * 1_000_000, "'b", "c'"]
    assert words("git apply 'my patch.patch' && echo ok") == ["git", "apply", "my patch.patch", "&&", "echo", "ok"]
    write(project, {"docker/Dockerfile": "FROM lmsysorg/sglang:v0.1.0\nRUN echo " + "a" * 1_000_000 + "\n",
                    "docker/patch/x.patch": "diff --git a/python/sglang/a.py b/python/sglang/a.py\n"})
    checked_in_time(project, releases)


def test_a_source_probe_whose_pattern_could_backtrack_without_bound_is_not_run(project, releases) -> None:
    # SGC603 runs the project's own pattern on the release's source: `(\w|\w)*@` takes 2**n steps
    # on an n-character word without an `@`. Such a pattern is "cannot tell", never run.
    for release in releases:
        write(release, {"sglang/srt/slow.py": "def slow():\n    return " + "a" * 40 + "\n"})
    write(project, {"app/probe.py": "import inspect\nimport re\n\nfrom sglang.srt.slow import slow\n\n"
                                    "FIXED = re.search(r'(\\w|\\w)*@', inspect.getsource(slow))\n"})
    checked_in_time(project, releases)


@pytest.mark.parametrize("pattern", [
    r"[^Q]*[^Q]*Q",  # helper-7's audit: each try runs to the end of the source, from every position (over 90 s)
    r"[^Q]{0,100000}[^Q]{0,100000}Q",  # helper-8's audit: a large counted repeat was counted as bounded
])
def test_a_source_probe_whose_repeats_span_the_source_is_not_run(pattern: str, project, releases) -> None:
    for release in releases:
        write(release, {"sglang/srt/big.py": "class Big:\n    def f(self):\n" + "        x = 1  # a line\n" * 8000})
    write(project, {"app/probe.py": "import inspect\nimport re\n\nfrom sglang.srt.big import Big\n\n"
                                    f"FIXED = re.sub(r'{pattern}', '', inspect.getsource(Big))\n"})
    checked_in_time(project, releases)


def test_a_long_run_of_space_after_sglang_in_a_comment_is_read_in_time(project, releases) -> None:
    # helper-7's audit: SGLANG_VERSION_IN_PROSE's two `\s*` around an optional operator split one
    # run of spaces every way (200,000 spaces: minutes).
    write(project, {"app/m.py": "x = 1  # sglang" + " " * 200_000 + "x\n"})
    checked_in_time(project, releases)


def test_a_dotted_sglang_name_of_many_parts_is_resolved_in_time(project, releases) -> None:
    # helper-8's audit: each prefix of `sglang.a.a.a...` (100,000 parts) was joined and looked up.
    write(project, {"app/copied.py": "# copied from sglang" + ".a" * 100_000 + "(\n",
                    "app/patched.py": "from unittest import mock\n\nmock.patch('sglang" + ".a" * 20_000 + "')\n"})
    checked_in_time(project, releases)


# -- work per finding, and per match, on one long line (not patterns: campaign 4) ----------------

def test_a_line_of_thousands_of_findings_is_reported_in_time(project, releases) -> None:
    # D06: each finding's fingerprint collapsed and hashed its whole line again (52 s of CPU for
    # 16,000 findings on a 400 kB line of install.md).
    # Each is judged; a file lists MOST_LISTED of a rule's, and one more counts the rest (R02).
    write(project, {"docs/install.md": "pip install sglang==0.1.0 " * 12000 + "\n"})
    out = checked_in_time(project, releases)
    assert out.count("docs/install.md:1:") == MOST_LISTED + 1
    assert f"SGC702 warning: {12000 - MOST_LISTED:,} more SGC702 findings in this file are not listed" in out


def test_a_comment_of_a_hundred_thousand_imports_is_read_in_time(project, releases) -> None:
    # D07: matches_at_line_start took the text from the line's start to each match (196 s on 1 MB).
    write(project, {"app/words.py": "# " + "import " * 100000 + "\nx = 1\n"})
    checked_in_time(project, releases)
