"""Output that a hostile name or value could turn into something else (issue 38, section 5).

The tool runs in CI on pull requests, on files an attacker named and wrote. Whatever a file
name, a line of a patch or a Dockerfile value holds, no command's output may carry a GitHub
workflow command (a line starting with `::` after spaces, or `##[` anywhere: the runner reads
both), a raw control character (a terminal escape, a line break of the attacker's choosing),
markdown that renders an image or a mention, or a location that names a file that does not
exist. Each command that prints project text runs here on a project full of such names.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import unicodedata
import urllib.parse
from pathlib import Path

import pytest

from markdown_it import MarkdownIt

from sglang_contracts.cli import main
from sglang_contracts.infra.display import printable, printable_path
from tests.helpers import write_tree as write

OLD = {"sglang/__init__.py": "", "sglang/version.py": '__version__ = "1.0.0"\n', "sglang/srt/__init__.py": "",
       "sglang/srt/a.py": "def moved(): ...\ndef gone(): ...\n"}
NEW = {**OLD, "sglang/version.py": '__version__ = "1.0.1"\n', "sglang/srt/a.py": "",
       "sglang/srt/b.py": "def moved(): ...\n"}
# SGC102 twice (`fix` moves `moved` to sglang.srt.b); a line that `fix --diff` shows as context.
BROKEN = 'from sglang.srt.a import gone, moved\nNOTE = """\n::warning title=Context::x ##[stop-commands]t\n"""\n'

# File names an attacker can give files in a pull request (paths: `/` makes folders).
COMMAND = "::warning title=Approved::LGTM.py"
HOSTILE_NAMES = [
    COMMAND,
    "  ::notice title=Indented::x.py",  # the runner trims leading spaces before it looks for `::`
    "x##[stop-commands]token.py",  # the runner's older form, anywhere in a line
    "tick`![x](https:/evil.example/p.png)`@octocat.py",
    "``@octocat``.py",
    "esc\x1b[31mred\x1b]0;title\x07.py",
    "new\n::error::line.py",
    "cr\r::error::line.py",
    "c1\x9b31m.py",
    "bidi\u202egnp.py",
    "50%25 a,b:c.py",
    "caf\udcff.py",  # a byte that is not UTF-8, as os.fsdecode reads it
]
# Dockerfile values that reach a note on standard error and the markdown report: a fork's
# branch, and a default the tag's variable overrides (the pin, as written, in the checklist).
HOSTILE_VALUE = "x`![v](https:/evil.example/v.png)`@octocat\x1b[31m##[stop-commands]t"
HOSTILE_DEFAULT = "`![d](https:/evil.example/d.png)`@octocat\x1b]0;t\x07"
DOCKERFILE = "pipe|![t](https:/evil.example/t.png)|/Dockerfile"  # a `|` ends a markdown table's cell

LINE_BREAKS = re.compile(r"\r\n|\r|\n")  # where the Actions runner splits a step's output into lines
ZWJ = "\u200d"


def make_project(root: Path) -> Path:
    write(root, {"pyproject.toml": '[project]\nname = "app"\n',
                 DOCKERFILE: f"ARG SGLANG_BRANCH={HOSTILE_VALUE}\nARG TAG=v1.0.0\n"
                               f"FROM lmsysorg/sglang:${{TAG:-{HOSTILE_DEFAULT}}}\n"})
    for name in HOSTILE_NAMES:
        path = os.fsencode(root / name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(BROKEN.encode())
    return root


@pytest.fixture
def bump(tmp_path: Path, monkeypatch) -> list[str]:
    """The hostile project as the working directory, and the options of a check of it."""
    old, new = write(tmp_path / "old", OLD), write(tmp_path / "new", NEW)
    monkeypatch.chdir(make_project(tmp_path / "project"))
    return ["--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache")]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def raw_controls(text: str, allowed: str = "\n") -> list[str]:
    """Characters a terminal or a log viewer acts on rather than shows: C0 and C1 controls,
    format characters (bidi overrides), line separators, lone surrogates."""
    return [char for char in text if char not in allowed
            and unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp")]


def workflow_commands(text: str, stops: bool = False) -> list[str]:
    """The lines of `text` the Actions runner would run as workflow commands; with `stops`, none
    between a `::stop-commands::TOKEN` line (a random token) and `::TOKEN::`."""
    found, token = [], None
    for line in LINE_BREAKS.split(text):
        stripped = line.lstrip()
        if token is not None:
            token = None if stripped == f"::{token}::" else token
        elif stops and (stop := re.fullmatch(r"::stop-commands::([0-9a-f]{32})", stripped)):
            token = stop.group(1)
        elif stripped.startswith("::") or "##[" in line:
            found.append(line)
    return found


def github_command(line: str) -> tuple[str, dict[str, str], str]:
    """(name, properties, message) of a workflow command, decoded as the runner decodes them."""
    assert line.startswith("::"), line
    info, separator, data = line[2:].partition("::")
    assert separator, line
    name, _, listed = info.partition(" ")
    properties = dict(item.split("=", 1) for item in listed.split(","))
    decode = lambda value, codes: re.sub("|".join(codes), lambda m: codes[m.group()], value)  # noqa: E731
    data_codes = {"%0D": "\r", "%0A": "\n", "%25": "%"}
    property_codes = {**data_codes, "%3A": ":", "%2C": ","}
    return name, {key: decode(value, property_codes) for key, value in properties.items()}, decode(data, data_codes)


def assert_inert(text: str, allowed: str = "\n") -> None:
    assert workflow_commands(text) == []
    assert raw_controls(text, allowed) == []


def markdown_code(markdown: str) -> list[str]:
    """What `markdown` shows as code (inline code, then blocks), asserting that it renders
    nothing else from the project: no image, link or HTML, no mention (`@name` in text)."""
    assert_inert(markdown, allowed="\n" + ZWJ)
    blocks = MarkdownIt("commonmark").enable("table").parse(markdown)
    inline = [child for block in blocks if block.type == "inline" for child in block.children or []]
    assert [t.type for t in blocks + inline if t.type in ("image", "link_open", "html_inline", "html_block")] == []
    assert [t.content for t in inline if t.type == "text" and re.search(r"@\w", t.content)] == []
    return [t.content for t in inline if t.type == "code_inline"] + [b.content for b in blocks if b.type == "fence"]


# -- the class: every command, every format ----------------------------------------------------

@pytest.mark.parametrize("format", ["text", "json", "sarif"])
def test_a_check_of_hostile_names_prints_no_command_and_no_control_character(bump, capsys, format):
    status, out, err = run(capsys, "check", "--format", format, *bump)
    assert status == 1, err
    assert_inert(out)
    assert_inert(err)


def test_github_commands_are_the_findings_only(bump, capsys):
    status, out, err = run(capsys, "check", "--format", "github", *bump)
    assert status == 1, err
    commands = [github_command(line) for line in out.splitlines()]
    # two a hostile file, and one the Dockerfile's `ARG TAG=v1.0.0`, which still names the release replaced
    assert len(commands) == 2 * len(HOSTILE_NAMES) + 1
    # A line the runner parses as a `::` command is that command alone: it never looks for `##[` in it.
    assert all(name in ("error", "warning") and properties["title"].startswith("SGC")
               for name, properties, _ in commands)
    assert raw_controls(out) == []
    assert_inert(err)


def test_fix_prints_no_command_and_no_control_character(bump, capsys):
    status, out, err = run(capsys, "fix", "--diff", *bump)
    assert status == 1, err
    assert out.count("\n+from sglang.srt.b import moved\n") == len(HOSTILE_NAMES)
    assert_inert("".join(line for line in out.splitlines(keepends=True) if line.startswith(("--- ", "+++ "))))
    assert_inert(err)
    status, out, err = run(capsys, "fix", *bump)
    assert status == 1, err
    assert len(out.splitlines()) == len(HOSTILE_NAMES)  # `gone` in each file (the count on standard error)
    assert_inert(out)
    assert_inert(err)


def test_a_patch_on_standard_output_is_the_project_s_text_but_runs_no_command(bump, capsys, monkeypatch):
    """`fix --diff` prints the project's lines as they are (it is a patch), `::warning` and
    `##[stop-commands]` among them: in a GitHub Actions log, commands are stopped around it."""
    patch = run(capsys, "fix", "--diff", *bump)[1]
    assert "##[stop-commands]" in patch and workflow_commands(patch) != []
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    logged = run(capsys, "fix", "--diff", *bump)[1]
    assert workflow_commands(logged, stops=True) == []
    first, *inside, last = logged.splitlines(keepends=True)
    assert "".join(inside) == patch and last == f"::{first.split('::')[2].strip()}::\n"


def test_a_patch_on_a_terminal_is_shown_printable():
    from sglang_contracts.infra.display import patch_for

    class Terminal:
        def isatty(self) -> bool:
            return True

    shown = patch_for(Terminal(), " ARG X=\x1b[31m##[x]\n+\tline\r\n ::error::x\n")
    assert shown == " ARG X=\\x1b[31m#\\x23[x]\n+\tline\n \\x3a:error::x\n"


def test_an_error_naming_what_the_user_gave_prints_no_command_and_no_control_character(capsys):
    status, out, err = run(capsys, "explain", "\n::warning title=Approved::x\x1b[31m")
    assert status == 2 and out == ""
    assert err.startswith("sglang-contracts: error: \\n::WARNING") and err.count("\n") == 1
    assert_inert(err)


# Patches over hostile names, hostile lines in their hunks (`patch classify`, `patch rebase`).
# git quotes a name's bytes above 0x7f in octal, which patchfile reads back per byte, not as
# UTF-8: the names here are ASCII.
PATCHED_NAMES = [name for name in HOSTILE_NAMES if name.isascii()]
CODE = ('import os\n\n\ndef f(v):  # `![x](https:/evil.example/p.png)`@octocat\x1b[2J\n'
        '    """\n    ::warning title=Code::x\n    ##[stop-commands]t\x1b[31m\n    """\n    v = 2\n    v = 3\n'
        + "".join(f"    w = {i}\n" for i in range(12)) + "    return v\n")
# The patched side of the conflict ends the plan's ``` block early if its fence is no longer.
PATCHED = (CODE.replace("title=Code::x\n", "title=Patched::x\n```\n![c](https:/evil.example/c.png) @octocat\n")
           .replace("w = 9", "w = 90"))
UPSTREAM = CODE.replace("title=Code", "title=Upstream")  # the patch's first hunk conflicts on it


def git_diff(folder: Path, before: dict[str, str], after: dict[str, str]) -> str:
    git = lambda *a: subprocess.run(["git", *a], cwd=folder, check=True, capture_output=True).stdout  # noqa: E731
    write(folder, before)
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "A")
    write(folder, after)
    return git("diff").decode("utf-8", "surrogateescape")


def in_release(text: str) -> dict[str, str]:
    return {f"python/sglang/srt/{name}": text for name in PATCHED_NAMES}


@pytest.fixture
def patches(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    """A project patch over every hostile name (one hunk conflicting on B), named as a command;
    a skeleton making only its second hunk; releases A and B."""
    monkeypatch.chdir(tmp_path)
    mine = Path(COMMAND.replace(".py", ".patch"))
    mine.write_text(git_diff(tmp_path / "mine", in_release(CODE), in_release(PATCHED)), "utf-8", "surrogateescape")
    skeleton = Path("skeleton.patch")
    skeleton.write_text(git_diff(tmp_path / "skeleton", in_release(CODE), in_release(CODE.replace("w = 9", "w = 90"))))
    release = lambda text: {"sglang/__init__.py": "", **{k.removeprefix("python/"): v for k, v in in_release(text).items()}}  # noqa: E731
    return {"mine": mine, "skeleton": skeleton, "A": write(tmp_path / "A", release(CODE)),
            "B": write(tmp_path / "B", release(UPSTREAM))}


@pytest.mark.parametrize("format", ["text", "json"])
def test_patch_classify_prints_no_command_and_no_control_character(patches, capsys, format):
    status, out, err = run(capsys, "patch", "classify", str(patches["mine"]), str(patches["skeleton"]), "--format", format)
    assert status == 0, err
    assert out.count("extra changes on a shared file" if format == "text" else "shared-with-extra") == len(PATCHED_NAMES)
    assert_inert(out)
    assert err == ""
    if format == "text":  # lines start with the patch's name, as given
        assert f"\n  ./{patches['mine']}:5: extra  @@ -3,7 +3," in out


def test_patch_rebase_prints_no_command_and_no_control_character(patches, capsys, tmp_path):
    status, out, err = run(capsys, "patch", "rebase", str(patches["mine"]), "--old", str(patches["A"]),
                           "--new", str(patches["B"]), "--cache-dir", str(tmp_path / "cache"))
    assert status == 1, err  # a hunk per file is left in conflict
    assert err.count(": conflict hunk #1 of python/sglang/srt/") == len(PATCHED_NAMES)
    assert "Patched::x" not in err  # the conflict's lines are the plan's (test_d7_the_rebase_plan_...)
    assert_inert(err)
    assert workflow_commands(out) != []  # the patch holds the project's lines as they are ...
    assert out.count("\n+    w = 90\n") == len(PATCHED_NAMES)


# -- D7: markdown that a backtick turns into an image or a mention ------------------------------

def test_d7_a_backtick_in_a_file_name_stays_inside_its_code_span(bump, capsys):
    status, out, err = run(capsys, "check", "--format", "markdown", *bump)
    assert status == 1, err
    shown = markdown_code(out)
    assert {f"{printable_path(name)}:1" for name in HOSTILE_NAMES} <= set(shown)
    assert_inert(err)


def test_d7_dockerfile_values_in_the_markdown_report_render_as_code(bump, capsys):
    shown = markdown_code(run(capsys, "check", "--format", "markdown", *bump)[1])
    assert f"ARG TAG=v1.0.0 (FROM lmsysorg/sglang:${{TAG:-{printable(HOSTILE_DEFAULT)}}})" in shown  # the checklist
    assert printable(HOSTILE_VALUE) in shown and DOCKERFILE in shown  # the note, the pins table


def test_d7_the_rebase_plan_fences_code_longer_than_its_backtick_runs(patches, capsys, tmp_path):
    status, _, err = run(capsys, "patch", "rebase", str(patches["mine"]), "--old", str(patches["A"]),
                         "--new", str(patches["B"]), "--cache-dir", str(tmp_path / "cache"), "--plan", "plan.md")
    assert status == 1, err
    shown = markdown_code(Path("plan.md").read_text())
    patched = "    \\x3a:warning title=Patched::x\n```\n![c](https:/evil.example/c.png) @octocat\n"
    assert shown.count(patched) == len(PATCHED_NAMES)  # each conflict's patched side, whole, as code
    assert {printable(f"python/sglang/srt/{name}") for name in PATCHED_NAMES} <= set(shown)
    assert printable_path(str(patches["mine"])) in shown  # the title


def test_markdown_code_spans_are_fenced_by_a_longer_run_and_prose_links_no_one():
    from sglang_contracts.infra.markdown import code, code_spans, inline, plain

    assert code("a``b") == "```a``b```" and code("`a") == "`` `a ``" and code(" a ") == "`  a  `"
    assert plain("@octocat #12 ![x](y)") == f"@{ZWJ}octocat \\#{ZWJ}12 !\\[x\\](y)"
    assert code_spans("a `` b` `` c ```") == [(False, "a "), (True, "b`"), (False, " c ```")]
    # Two spans side by side are one: `x``y` would read as one unclosed run of two.
    assert inline("`x`snake_name `![i](u)` and `a`") == "`xsnake_name` `![i](u)` and `a`"
    for message in ("tag `a`![x](https:/e/p.png)`@octocat` kept", "x ``` y ` z `` w", "`" * 7):
        markdown_code(inline(message))


# -- D26: locations that name the file as it is named -------------------------------------------

# A workflow command cannot carry these (the runner decodes only %, CR, LF, `:` and `,`).
NOT_CARRIED = {name for name in HOSTILE_NAMES if not all(char.isprintable() or char in " \r\n" for char in name)}


def test_d26_github_annotations_name_the_file_as_it_is_named(bump, capsys):
    out = run(capsys, "check", "--format", "github", *bump)[1]
    annotated = set()
    for _, properties, message in map(github_command, out.splitlines()):
        if "file" in properties:
            assert Path(properties["file"]).is_file(), properties["file"]
            annotated.add(properties["file"])
        else:  # named in the message, as the text format names it
            assert re.match(r"\S+:1:\d+: (gone|moved) is no longer importable", message), message
    assert annotated == set(HOSTILE_NAMES) - NOT_CARRIED | {DOCKERFILE}  # its tag's ARG: an SGC702
    assert "new\n::error::line.py" in annotated and "50%25 a,b:c.py" in annotated
    assert {"esc\x1b[31mred\x1b]0;title\x07.py", "caf\udcff.py"} <= NOT_CARRIED


def test_d26_sarif_uris_are_uri_references_to_the_file_s_bytes(bump, capsys):
    log = json.loads(run(capsys, "check", "--format", "sarif", *bump)[1])
    uris = {result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for result in log["runs"][0]["results"]}
    # RFC 3986: unreserved, sub-delims, `@`, `/` and percent-encodings; no `:`, which would read as a scheme.
    assert all(re.fullmatch(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=@/]|%[0-9A-F]{2})+", uri) for uri in uris), uris
    assert {urllib.parse.unquote_to_bytes(uri) for uri in uris} == set(map(os.fsencode, [*HOSTILE_NAMES, DOCKERFILE]))
    assert all(os.path.isfile(urllib.parse.unquote_to_bytes(uri)) for uri in uris)


def test_github_escaping_of_a_path_and_a_message():
    from sglang_contracts.diagnostics import Diagnostic
    from sglang_contracts.reporters.github import format_command

    d = Diagnostic("x", 3, 4, "SGC102", "info", "50% done\nsecond \x1b[2J line: x, y", "sglang.x")
    assert format_command(d, "a\nb,c:d%.py") == (
        "::notice file=a%0Ab%2Cc%3Ad%25.py,line=3,col=4,title=SGC102::50%25 done%0Asecond \\x1b[2J line: x, y")
    assert format_command(d, "e\x1b.py") == (
        "::notice title=SGC102::e\\x1b.py:3:4: 50%25 done%0Asecond \\x1b[2J line: x, y")


# -- D8: a file named as a workflow command ------------------------------------------------------

def test_d8_a_file_named_as_a_workflow_command_is_shown_under_dot_slash(bump, capsys):
    out = run(capsys, "check", *bump)[1]
    assert f"./{COMMAND}:1:26: SGC102 gone is no longer importable" in out
    assert f"./  ::notice title=Indented::x.py:1:26: SGC102" in out
    assert "x#\\x23[stop-commands]token.py:1:26: SGC102" in out


def test_d8_a_message_with_a_line_break_stays_on_its_line():
    from sglang_contracts.diagnostics import Diagnostic
    from sglang_contracts.reporters.text import format_line

    d = Diagnostic("a.py", 1, 1, "SGC102", "error", "first\n::error::second\r::error::third", "sglang.x")
    assert format_line(d) == "a.py:1:1: SGC102 first\\n::error::second\\r::error::third"


# -- D9: terminal escapes from the project ------------------------------------------------------

def test_d9_an_escape_sequence_in_a_dockerfile_value_is_shown_escaped_on_standard_error(bump, capsys):
    err = run(capsys, "check", *bump)[2]
    (note,) = [line for line in err.splitlines() if "installs SGLang from the branch" in line]
    assert "\x1b" not in note and "@octocat\\x1b[31m#\\x23[stop-commands]t" in note


def test_an_escape_sequence_in_a_file_name_is_shown_escaped(bump, capsys):
    out = run(capsys, "check", *bump)[1]
    assert "esc\\x1b[31mred\\x1b]0;title\\x07.py:1:26: SGC102" in out
    assert "c1\\x9b31m.py:1:26:" in out and "bidi\\u202egnp.py:1:26:" in out


def test_a_report_to_a_non_blocking_pipe_reaches_a_slow_reader_whole(tmp_path: Path) -> None:
    """A parent may leave standard output a non-blocking pipe (a Node-based CI step can): the
    report, 300 kB, larger than the pipe, reached a reader that waits a moment cut at 64 kB with
    exit 1 and no word (issue 38's second campaign). It arrives whole."""
    import fcntl
    import sys
    import time

    from tests.helpers import checkout_env

    old = write(tmp_path / "old", {**OLD, "sglang/srt/a.py": "def f(a, b=1):\n    return a\n"})
    new = write(tmp_path / "new", {**NEW, "sglang/srt/a.py": "def f(a, c=1):\n    return a\n"})
    calls = "".join(f"f(1, b={number})\n" for number in range(1000))  # as many as a file lists of a rule
    project = write(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n',
                                     **{f"use{part}.py": f"from sglang.srt.a import f\n{calls}" for part in range(3)}})
    command = [sys.executable, "-m", "sglang_contracts", "check", "--old", str(old), "--new", str(new),
               "--cache-dir", str(tmp_path / "cache")]
    whole = subprocess.run(command, cwd=project, capture_output=True, env=checkout_env()).stdout
    assert len(whole) > 200_000
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    process = subprocess.Popen(command, cwd=project, stdout=write_end, stderr=subprocess.PIPE, env=checkout_env())
    os.close(write_end)
    time.sleep(3)  # the reader waits: the pipe fills
    received = b""
    while chunk := os.read(read_end, 1 << 16):
        received += chunk
    os.close(read_end)
    assert (process.wait(), process.stderr.read()) == (1, b"")
    assert received == whole


@pytest.mark.parametrize("closed", ["stdout", "stderr"])
def test_a_standard_stream_closed_at_start_costs_only_what_it_would_carry(closed: str, tmp_path: Path) -> None:
    """`check >&-` (a daemonised CI step) ended in a traceback and an internal error; `2>&-`
    reported no finding and printed the internal error on standard output (second campaign).
    The open stream gets what is its, and the run its own status."""
    import sys

    from tests.helpers import checkout_env

    old = write(tmp_path / "old", {**OLD, "sglang/srt/a.py": "def f(a, b=1):\n    return a\n"})
    new = write(tmp_path / "new", {**NEW, "sglang/srt/a.py": "def f(a, c=1):\n    return a\n"})
    project = write(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n',
                                     "use.py": "from sglang.srt.a import f\nf(1, b=2)\n"})
    command = [sys.executable, "-m", "sglang_contracts", "check", "--old", str(old), "--new", str(new),
               "--cache-dir", str(tmp_path / "cache")]
    fd = 1 if closed == "stdout" else 2
    completed = subprocess.run(["sh", "-c", f'"$@" {fd}>&-', "sh", *command], cwd=project, env=checkout_env(),
                               capture_output=False, stdout=subprocess.PIPE if fd == 2 else None,
                               stderr=subprocess.PIPE if fd == 1 else None)
    assert completed.returncode == 1
    if closed == "stdout":
        assert completed.stderr == b""
    else:
        assert completed.stdout.decode().startswith("use.py:2:6: SGC201 ")


# Names git writes C-quoted in a patch (a tab, a newline, a quote, a backslash, past ASCII), a space it does not.
GIT_QUOTED_NAMES = ["t\tb.py", "n\nl.py", 'q"x.py', "b\\s.py", "caf\u00e9.py", "sp ace.py"]


def _git_apply(folder: Path, patch: str, *options: str) -> tuple[int, str]:
    done = subprocess.run(["git", "apply", *options, "-"], cwd=folder, input=os.fsencode(patch), capture_output=True,
                          timeout=120, check=False)
    return done.returncode, os.fsdecode(done.stderr)


@pytest.mark.parametrize("name", GIT_QUOTED_NAMES + HOSTILE_NAMES)
def test_r06_a_diff_names_each_file_as_git_apply_reads_it(tmp_path: Path, name: str) -> None:
    """unified_text_diff wrote the printable form (`a/t\\tb.py`), which git apply reads as another
    file (campaign 10, R06): git's C-quoted form now, for a change, a new file and a removed one."""
    from sglang_contracts.infra.display import unified_text_diff

    changed, added, gone = (os.fsencode(tmp_path / folder / name) for folder in ("changed", "added", "gone"))
    for path in (changed, gone, added):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    for path in (changed, gone):
        with open(path, "wb") as handle:
            handle.write(b"a\nb\n")
    patch = "".join((unified_text_diff(f"changed/{name}", "a\nb\n", "a\nc\n"),
                     unified_text_diff(f"added/{name}", None, "new\n"),
                     unified_text_diff(f"gone/{name}", "a\nb\n", None)))
    assert _git_apply(tmp_path, patch, "--check") == (0, "")
    assert _git_apply(tmp_path, patch) == (0, "")
    with open(changed, "rb") as handle:
        assert handle.read() == b"a\nc\n"
    assert not os.path.exists(gone) and os.path.exists(added)
    assert_inert("".join(line for line in patch.splitlines(keepends=True) if line.startswith(("--- ", "+++ "))))


def test_r06_fix_diff_of_files_git_quotes_is_what_git_applies_and_fix_writes(bump, capsys, tmp_path) -> None:
    import shutil

    for name in GIT_QUOTED_NAMES:
        (Path.cwd() / name).write_text(BROKEN)
    copy = shutil.copytree(Path.cwd(), tmp_path / "copy")
    status, patch, err = run(capsys, "fix", "--diff", *bump)
    assert status == 1, err
    assert _git_apply(Path.cwd(), patch, "--check") == (0, "")
    assert _git_apply(Path.cwd(), patch) == (0, "")
    assert main(["fix", str(copy), *bump]) == 1
    applied, written = (sorted((path.relative_to(root), path.read_bytes()) for path in root.rglob("*.py"))
                        for root in (Path.cwd(), copy))
    assert applied == written and any(b"from sglang.srt.b import moved" in text for _, text in applied)
