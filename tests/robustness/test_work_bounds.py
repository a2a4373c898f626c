"""Work that grows faster than the project's text, not in a pattern (test_pattern_bounds.py has
those): a variable expanded again at each use, each patch compared with every earlier one, each
`git apply` line looked up through every COPY before it (sixth campaign, M02, M07, M08). Each
took minutes on a project of well under a megabyte, from a pull request's files; the check runs
in a fresh process and fails, not hangs, past test_pattern_bounds.SECONDS (about one second now)."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Callable

import pytest

from pathlib import Path

from tests.helpers import checkout_env, write_tree as write
from tests.robustness.test_pattern_bounds import BOUND, checked_in_time, time_bound
from sglang_contracts.infra.shell import UNSET, expand
from sglang_contracts.patch.classify import classify
from sglang_contracts.patch.gitapply import APPLIES, CONTEXT, Image, check_patch
from sglang_contracts.patch.patchfile import parse_patch
from sglang_contracts.patch.rebase import CARRIED, rebase_patch
from sglang_contracts.sources import open_release

PATCH = ("diff --git a/python/sglang/srt/utils.py b/python/sglang/srt/utils.py\n"
         "--- a/python/sglang/srt/utils.py\n+++ b/python/sglang/srt/utils.py\n"
         "@@ -1 +1,2 @@\n def helper(): ...\n+x = 1\n")


def _chain(k: int) -> list[str]:
    """ARG lines whose values each name the next variable k times: `ARG D=$` makes the stored
    value `${V2}${V2}...` (one pass of expansion does not rescan what it put in)."""
    lines = ["ARG D=$", "ARG V9=x"]
    for level in range(8, -1, -1):
        lines.append(f"ARG V{level}=" + ("${D}{V%d}" % (level + 1)) * k)
    return lines


def test_m02_a_variable_named_many_times_at_each_level_expands_in_time() -> None:
    # Each use expanded the stored value again, to depth 8: k uses a level cost k^8 (k=8: 58 s).
    env = {"V9": "x", **{f"V{level}": "${V%d}" % (level + 1) * 8 for level in range(9)}}
    with time_bound(BOUND):
        assert set(expand("${V0}", env)) == {UNSET}  # V9 is past the depth followed: not known
    assert expand("a${A}b", {"A": "${B}-${B}", "B": "y"}) == "ay-yb"  # what expansion gives is unchanged


def test_m02_a_dockerfile_arg_chain_beside_a_patch_is_read_in_time(project, releases) -> None:
    # 777 bytes of Dockerfile took 82 s (k=9).
    write(project, {"Dockerfile": "\n".join(["FROM lmsysorg/sglang:v0.1.0", *_chain(9), "ARG Z=${V0}"]) + "\n",
                    "patches/x.patch": PATCH})
    checked_in_time(project, releases)


def test_m07_a_stack_of_thousands_of_patches_is_judged_in_time(project, releases) -> None:
    # Each patch was compared with every judged one, each comparison listing all the patches before
    # both: cubic (1,000 patches of 130 bytes: 76 s; 2,000: over 5 minutes).
    write(project, {"Dockerfile": "FROM lmsysorg/sglang:v0.1.0\nRUN git apply /q/r/x0.patch\n",
                    **{f"patches/y{index}.patch": PATCH for index in range(2000)}})
    checked_in_time(project, releases)


def test_m08_thousands_of_copy_and_git_apply_lines_are_read_in_time(project, releases) -> None:
    # Each `git apply` target was looked for through every COPY before it (8,000 of each: 82 s).
    copies = "".join(f"COPY c{index} /dest{index}/\n" for index in range(8000))
    applies = "".join(f"RUN git apply /q/r/x{index}.patch\n" for index in range(8000))
    write(project, {"Dockerfile": "FROM lmsysorg/sglang:v0.1.0\n" + copies + applies, "patches/x.patch": PATCH})
    checked_in_time(project, releases)


def test_a_git_apply_line_of_many_patches_and_path_segments_is_read_in_time(project, releases) -> None:
    # The same class: each line's targets were matched against every patch file (one line per
    # patch: their product), and a target of thousands of segments tried each tail as a pattern.
    applies = "".join(f"RUN git apply /q/patches/y{index}.patch\n" for index in range(3000))
    write(project, {"Dockerfile": "FROM lmsysorg/sglang:v0.1.0\n" + applies
                    + "RUN git apply /" + "a/" * 2000 + "*.patch\n" * 200,
                    **{f"patches/y{index}.patch": PATCH.replace("+x = 1", f"+x = {index}") for index in range(3000)}})
    checked_in_time(project, releases)


def test_a_version_string_doubled_line_by_line_is_read_in_time(project, releases) -> None:
    # The same class in Python: each name's template of the version was kept whole and read whole,
    # `v1 = v0 + v0` ... doubling it each line (thirty lines: over a minute, gigabytes).
    lines = ["import importlib", "import sglang", "v0 = sglang.__version__"]
    lines += [f"v{index} = v{index - 1} + v{index - 1}" for index in range(1, 30)]
    write(project, {"app/dynamic.py": "\n".join([*lines, 'm = importlib.import_module("sglang.srt." + v29)']) + "\n"})
    checked_in_time(project, releases)


def test_thousands_of_wildcard_targets_beside_thousands_of_patches_are_read_in_time(project, releases) -> None:
    # Each `git apply` target with a wildcard was matched against every patch file: 4,000 lines of
    # `/q/patches/z{i}*.patch` beside 3,000 patch files took 27 s to read the stacks alone.
    applies = "".join(f"RUN git apply /q/patches/z{index}*.patch\n" for index in range(4000))
    write(project, {"Dockerfile": "FROM lmsysorg/sglang:v0.1.0\n" + applies,
                    **{f"patches/y{index}.patch": PATCH for index in range(3000)}})
    checked_in_time(project, releases)


def test_p16_a_chain_of_subclasses_costs_each_class_its_own_calls_and_bases(project, releases, monkeypatch) -> None:
    """A file of N classes over an SGLang class, each a subclass of the last: each class's
    borrowed-code roots walked every call of the file, and each class's ancestry resolved every
    base of its 51 nearest ancestors again (seventh campaign, P16: 6,000 classes, 54 s). Counted,
    not timed: the calls looked at and the bases resolved grow with N, not N squared."""
    import dataclasses

    from sglang_contracts.analysis import borrowing
    from sglang_contracts.analysis.resolve import ProjectView
    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check

    counts = {"calls looked at": 0, "bases resolved": 0}
    looked_at, dotted = borrowing._hands_self, ProjectView.dotted

    def counting_calls(*args):
        counts["calls looked at"] += 1
        return looked_at(*args)

    def counting_bases(view, facts, name):
        counts["bases resolved"] += facts.path == "app/chain.py"
        return dotted(view, facts, name)

    monkeypatch.setattr(borrowing, "_hands_self", counting_calls)
    monkeypatch.setattr(ProjectView, "dotted", counting_bases)
    monkeypatch.setattr(Fresh, "checks_in_two", False)  # every rule in this process, where it is counted
    old, new = releases
    for release, extra in ((old, ""), (new, ", mode=0")):
        write(release, {"sglang/srt/sched.py": f"class Scheduler:\n    def run_batch(self, batch{extra}):\n"
                                                "        return self.step(batch)\n"})
    options = CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1)
    for size in (200, 400):
        write(project, {"app/chain.py": "from sglang.srt.sched import Scheduler\n\n\nclass C0(Scheduler):\n"
                        "    def step(self, batch):\n        return Scheduler.run_batch(self, batch)\n" + "".join(
                            f"\n\nclass C{i}(C{i - 1}):\n    def step(self, batch):\n"
                            f"        return Scheduler.run_batch(self, batch)\n" for i in range(1, size))})
        counts = dict.fromkeys(counts, 0)
        run_check([project], dataclasses.replace(options))
        assert all(0 < count <= 12 * size for count in counts.values()), (size, counts)


def test_an_upstream_module_of_thousands_of_assignments_added_by_a_patch_is_read_in_time(project, releases) -> None:
    # griffe looked for each assignment's docstring by walking every statement before it: a
    # 170 kB patch adding 12,000 `vN = N` lines to an upstream module took about 60 s (P11).
    count = 12_000
    target = "python/sglang/srt/huge.py"
    patch = "\n".join([f"diff --git a/{target} b/{target}", "new file mode 100644", "--- /dev/null", f"+++ b/{target}",
                       f"@@ -0,0 +1,{count} @@", *(f"+v{index} = {index}" for index in range(count))]) + "\n"
    write(project, {"docker/patch/01-add.patch": patch, "app/huge.py": "from sglang.srt.huge import v1\n",
                    "docker/Dockerfile": "FROM lmsysorg/sglang:v0.1.0\nCOPY docker/patch/ /tmp/patch/\n"
                                         "RUN cd /sgl-workspace/sglang && git apply /tmp/patch/01-add.patch\n"})
    out = checked_in_time(project, releases)
    assert "SGC000" not in out and "app/huge.py" not in out  # read, and v1 is there on both releases


def _cpu_seconds(work: Callable[[], object]) -> float:
    """This process's CPU time for `work`: another process's load does not move it."""
    start = time.process_time()
    work()
    return time.process_time() - start


def _hunks_on_a(count: int, added: Callable[[int], str], context: Callable[[int], str]) -> str:
    """A patch of `count` hunks on sglang/srt/a.py, one every ten lines, each adding a line after
    two of context and before a third, its header naming where it is before the hunks above it."""
    lines = ["diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py",
             "--- a/python/sglang/srt/a.py", "+++ b/python/sglang/srt/a.py"]
    for number in range(count):
        line = number * 10
        lines += [f"@@ -{line + 1},3 +{line + 1},4 @@", f" {context(line)}", f" {context(line + 1)}",
                  f"+{added(line)}", f" {context(line + 2)}"]
    return "\n".join(lines) + "\n"


def _one_line_hunks(tag: str, first: int, count: int, shared: str = "") -> str:
    """A patch of `count` hunks on one file, ten lines apart from line `first`, each adding its
    own line (after a `shared` added line, if any)."""
    lines = ["diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py",
             "--- a/python/sglang/srt/a.py", "+++ b/python/sglang/srt/a.py"]
    for index in range(count):
        start = first + index * 10
        lines += [f"@@ -{start},1 +{start},{2 + bool(shared)} @@", " c", *([f"+{shared}"] if shared else []),
                  f"+{tag}{index}"]
    return "\n".join(lines) + "\n"


def test_p03_two_patches_of_thousands_of_hunks_on_one_file_are_classified_in_time() -> None:
    # Each hunk was tried against every skeleton hunk, in each of four passes (audit 7, P03): 2,000
    # hunks took 8 s of CPU, 4,000 forty. Both shapes share no change: the first puts the skeleton
    # past every hunk, the second before them, each hunk adding a line every skeleton hunk adds too.
    for mine, skeleton in [(_one_line_hunks("a", 1, 2000), _one_line_hunks("b", 10**7, 2000)),
                           (_one_line_hunks("a", 10**7, 2000, "x"), _one_line_hunks("b", 1, 2000, "x"))]:
        classes = []
        assert _cpu_seconds(lambda: classes.extend(classify(parse_patch(mine), parse_patch(skeleton)))) < 1.0
        assert {hunk.verdict for hunk in classes[0].hunks} == {"extra"} and len(classes[0].dropped) == 2000


def test_p12_a_patch_of_thousands_of_hunks_on_a_long_file_is_judged_in_time() -> None:
    # Each hunk was looked for place by place outward from its header's line, which drifts by one
    # more line at each hunk before it, its places counted over the whole file, and the file
    # joined again for it (audit 7, P12: 3,000 hunks on 30,000 lines, 51 s). Half the hunks here
    # apply, further from where their headers say at each one; the other half no longer do.
    module = "".join(f"v{index} = {index}\n" for index in range(12000))
    lines = ["diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py",
             "--- a/python/sglang/srt/a.py", "+++ b/python/sglang/srt/a.py"]
    for number in range(1200):
        line = number * 10
        gone = f"v{line + 2} = gone" if number % 2 else f"v{line + 2} = {line + 2}"
        lines += [f"@@ -{line + 1},3 +{line + 1},4 @@", f" v{line} = {line}", f" v{line + 1} = {line + 1}",
                  f"+w{line} = 1", f" {gone}"]
    patch = parse_patch("\n".join(lines) + "\n")
    verdicts = []

    def judged() -> None:
        image = Image(module)
        for hunk in patch.files[0].hunks:
            image.places(hunk)  # as patch rebase asks of each hunk
        verdicts.extend(check_patch(patch, lambda path: module))

    assert _cpu_seconds(judged) < 2.0
    assert [verdict.status for verdict in verdicts] == [APPLIES, CONTEXT] * 600
    assert [verdict.at for verdict in verdicts[:6:2]] == [1, 22, 43]  # each after the lines added before it


def test_p12_patch_rebase_of_thousands_of_hunks_with_a_skeleton_is_done_in_time(tmp_path: Path) -> None:
    # The same class through `patch rebase`: besides git apply's search, A's and B's files were
    # joined again for each hunk, and each hunk's skeleton partner looked for through every
    # skeleton hunk (audit 7, P12).
    def module(changed: bool) -> str:
        return "".join(f"v{index} = {index}{' + 0' * (changed and index % 10 == 5)}\n" for index in range(24000))

    roots = [write(tmp_path / name, {"sglang/__init__.py": "", "sglang/srt/__init__.py": "",
                                     "sglang/srt/a.py": module(name == "B")}) for name in ("A", "B")]
    old, new = (open_release(str(root), sglang_repo=None, cache=Path("/nonexistent")) for root in roots)
    text = _hunks_on_a(2400, lambda line: f"w{line} = 1", lambda line: f"v{line} = {line}")
    skeleton = parse_patch(_hunks_on_a(2400, lambda line: f"s{line} = 1", lambda line: f"v{line} = {line}"))
    result = []
    assert _cpu_seconds(lambda: result.append(rebase_patch(parse_patch(text), text, old, new, skeleton))) < 8.0
    assert [outcome.verdict for outcome in result[0].outcomes] == [CARRIED] * 2400


def test_q03_hunks_that_match_nowhere_in_a_file_of_few_repeated_lines_are_judged_in_time() -> None:
    # Each hunk was looked for at every copy of its rarest line, all 15,000 of them, when it
    # matches nowhere (eighth campaign, Q03: 1,000 such hunks on 30,000 lines, past a minute).
    # A matching hunk among them is still found where git puts it.
    module = "".join("a = 1\n" if index % 2 == 0 else "b = 2\n" for index in range(30000))
    lines = ["diff --git a/python/sglang/srt/big.py b/python/sglang/srt/big.py",
             "--- a/python/sglang/srt/big.py", "+++ b/python/sglang/srt/big.py"]
    for number in range(1000):
        start = 1 + number * 30
        lines += [f"@@ -{start},2 +{start},3 @@", " a = 1", f"+c = {number}", " a = 1"]
    lines += ["@@ -29001,2 +29001,3 @@", " a = 1", "+c = last", " b = 2"]
    patch = parse_patch("\n".join(lines) + "\n")
    verdicts = []

    def judged() -> None:
        image = Image(module)
        for hunk in patch.files[0].hunks:
            image.places(hunk)
        verdicts.extend(check_patch(patch, lambda path: module))

    assert _cpu_seconds(judged) < 3.0
    assert [verdict.status for verdict in verdicts[:-1]] == [CONTEXT] * 1000
    assert verdicts[-1].status == APPLIES and verdicts[-1].at == 29001


def test_r23_thousands_of_per_file_ignores_and_excludes_are_each_compiled_once(project, releases, monkeypatch) -> None:
    # Matched one by one through fnmatch, every glob was compiled again for every (code, file)
    # asked about once they outnumbered fnmatch's cache: 20,000 entries kept a run past 100 s
    # (campaign 9, R23). Each is compiled once per matcher now, and a configuration holds at most
    # MAX_PATH_PATTERNS of each (campaign 15, R11).
    import fnmatch

    from sglang_contracts.check.runner import CheckOptions, run_check
    from sglang_contracts.config import MAX_PATH_PATTERNS

    entries = MAX_PATH_PATTERNS
    ignores = "\n".join(f'"d{n}/*" = ["SGC1"]' for n in range(entries))
    excludes = ", ".join(f'"e{n}/*"' for n in range(entries))
    write(project, {"pyproject.toml": f"[project]\nname = 'app'\n[tool.sglang-contracts]\nexclude = [{excludes}]\n"
                                      f"[tool.sglang-contracts.per-file-ignores]\n{ignores}\n"})
    translated = []
    translate = fnmatch.translate
    monkeypatch.setattr(fnmatch, "translate", lambda pattern: translated.append(pattern) or translate(pattern))
    old, new = releases
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False))
    assert any(d.path == "app/ok.py" for d in result.diagnostics)  # the file was checked, nothing ignored
    # a glob and its folder form, for the per-file-ignores and for the excludes of the index and the report
    assert len(translated) <= 2 * 3 * entries


def test_r06_a_path_is_tried_only_against_the_globs_whose_literal_text_it_holds(monkeypatch) -> None:
    # Every path was matched against every configured glob: 20,000 excludes and 20,000
    # per-file-ignores over 2,000 files took 45 s of CPU (campaign 14, R06). The globs' match
    # attempts are counted: each path here can match one glob, by its literal head or tail (the
    # `sglang/srt/` all the last kind share would make each path below it a candidate for all).
    import re
    import types

    from sglang_contracts.diagnostics import suppressions

    attempts = []

    class Counted:
        def __init__(self, pattern: re.Pattern) -> None:
            self.pattern = pattern

        def match(self, text: str):
            attempts.append(text)
            return self.pattern.match(text)

    monkeypatch.setattr(suppressions, "re", types.SimpleNamespace(compile=lambda *a: Counted(re.compile(*a))))
    entries, paths = 5_000, 500
    globs = [glob for n in range(entries) for glob in (f"dir{n}/**/x{n}_*.py", f"zz{n}/**/*[a-c]?{n}*.py",
                                                       f"*_{n}.txt", f"*/{n}x/*", f"top{n}", f"sglang/srt/*_{n}.py")]
    matcher = suppressions.PathGlobs(globs)
    for n in range(paths):
        assert matcher.matched(f"dir{n}/sub/x{n}_a.py") == (6 * n,)
        assert matcher.matched(f"sglang/srt/layers/m_{n}.py") == (6 * n + 5,)
        assert not matcher.matches(f"m{n}.py")
    assert len(attempts) <= 3 * paths


def test_hand_written_options_defaulting_to_fields_read_each_class_once(project, releases, monkeypatch) -> None:
    """`parser.add_argument("--fN", default=ServerArgs.fN)` for each field: each looked the
    class's whole body over again, fields squared (campaign 19). Each class is read once a run."""
    from sglang_contracts.check.runner import CheckOptions, run_check
    from sglang_contracts.upstream import commandline

    read = []
    annotations = commandline._class_annotations
    monkeypatch.setattr(commandline, "_class_annotations", lambda model, origin: read.append(origin) or
                        annotations(model, origin))
    fields = 300
    for release, count in zip(releases, (fields, fields - 1)):
        (release / "sglang/srt/server_args.py").write_text(
            "import dataclasses\n@dataclasses.dataclass\nclass ServerArgs:\n"
            + "".join(f"    f{n}: int = {n}\n" for n in range(count))
            + "    @staticmethod\n    def add_cli_args(parser):\n"
            + "".join(f'        parser.add_argument("--f{n}", type=int, default=ServerArgs.f{n})\n' for n in range(count)))
    write(project, {"run.sh": f"#!/bin/sh\npython -m sglang.launch_server --f{fields - 1} 1\n"})
    old, new = releases
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    assert [(d.path, d.code) for d in result.diagnostics if d.code == "SGC505"] == [("run.sh", "SGC505")]
    assert len(read) <= 8  # a class a release, not a field


def test_fixes_of_many_imports_in_one_file_render_each_statement_about_once(project, releases, monkeypatch) -> None:
    """Each fix found the statement around its line by rendering the module's statements: 1,000
    fixed imports rendered 500 statements each, 39 s (campaign 19). A statement no fix changed
    is rendered once."""
    import libcst

    from sglang_contracts.check.fixes import run_fix
    from sglang_contracts.check.runner import CheckOptions

    rendered = []
    render = libcst.Module.code_for_node
    monkeypatch.setattr(libcst.Module, "code_for_node", lambda self, node: rendered.append(1) or render(self, node))
    old, new = releases
    (old / "sglang/srt/utils.py").write_text("def helper(): ...\ndef kept(): ...\ndef moved(): ...\n")
    (new / "sglang/srt/utils.py").write_text("def helper(): ...\ndef kept(): ...\n")
    (new / "sglang/srt/other.py").write_text("def moved(): ...\n")
    count = 200
    write(project, {"app/many.py": "".join(f"from sglang.srt.utils import moved as m{n}\n" for n in range(count))
                    + "".join(f"m{n}()\n" for n in range(count))})
    report = run_fix([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1), write=False)
    assert report.fixed == count
    assert len(rendered) <= 8 * count  # a few renders a fix, not the file's 400 statements each


def test_globs_of_many_run_lengths_look_up_a_bounded_number_of_slices_of_each_path() -> None:
    """Each length of literal run a glob is filed under is a slice of every path looked up: 999
    globs `*qz..zq*` of 999 lengths over 2,000 paths of 420 characters took 94 s (campaign 19).
    Runs are filed by their first FILED_RUN characters; what the globs match is unchanged."""
    from sglang_contracts.diagnostics import suppressions

    globs = [f"*q{'z' * n}q*" for n in range(1, 1000)]
    matcher = suppressions.PathGlobs(globs)
    assert all(len(key.lengths) <= suppressions.FILED_RUN for key in matcher._keys.values())
    path = "a/" + "b" * 200 + "q" + "z" * 300 + "q.py"
    assert matcher.matched(path) == (299,)
    assert matcher.matched("a/qzq.py") == (0,) and not matcher.matches("a/" + "z" * 400 + ".py")


def test_r24_patch_files_globs_listed_again_or_overlapping_add_no_work(project, releases, monkeypatch) -> None:
    # The same glob listed k times was expanded k times and each match looked for in a list:
    # 400 copies over 300 patches took 74 s (campaign 9, R24).
    from sglang_contracts.patch import stack

    write(project, {**{f"patches/p{n}.patch": PATCH for n in range(300)},
                    "pyproject.toml": "[project]\nname = 'app'\n[tool.sglang-contracts]\npatch-files = ["
                                      + ", ".join(['"patches/*.patch"'] * 400 + ['"patches/p*.patch"']) + "]\n"})
    read = []
    reader = stack.read_project_text
    monkeypatch.setattr(stack, "read_project_text", lambda *a, **k: read.append(a[0]) or reader(*a, **k))
    from sglang_contracts.config import read_config

    named = read_config(project / "pyproject.toml", required=True).settings()["patch-files"]
    assert named == ["patches/*.patch", "patches/p*.patch"]
    stacks = stack.patch_stacks(project, named)
    assert sorted(len(s.patches) for s in stacks.stacks) == [300]
    assert len(read) <= 300


def _added_file(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,0 +1,{len(lines)} @@\n{body}"


def test_r04_two_patches_of_thousands_of_files_sharing_no_path_are_paired_by_shared_lines(monkeypatch) -> None:
    """Each file only one patch has was compared with every file only the other has, its lines
    gathered again each time (ninth campaign, R04: 3,000 files a side, 37 s; 4,500, past a
    minute). Counted, not timed: each file's lines are gathered once, and each of its lines is
    looked up in at most BOILERPLATE of the skeleton's files, the 30 lines every file carries in none."""
    from collections import Counter

    from sglang_contracts.patch import classify as module

    counts = {"lines gathered": 0, "files looked up": 0}
    significant = module._significant

    def gathering(file):
        counts["lines gathered"] += 1
        return significant(file)

    def tallying(looked_up):
        for index in looked_up:
            counts["files looked up"] += 1
            yield index

    monkeypatch.setattr(module, "_significant", gathering)
    monkeypatch.setattr(module, "Counter", lambda looked_up: Counter(tallying(looked_up)), raising=False)
    files = 2000
    common = [f"common_line_{number} = {number}" for number in range(30)]
    mine = parse_patch("".join(_added_file(f"python/sglang/srt/m{index}.py", [*common, f"own_line = {index}"])
                               for index in range(files)))
    skeleton = parse_patch("".join(_added_file(f"python/sglang/srt/s{index}.py",
                                               [*common, f"own_line = {files - 1 - index}"]) for index in range(files)))
    classes = classify(mine, skeleton)
    # Each file moved to the skeleton's file with its own line (30 of 31 lines are every file's).
    assert [entry.moved_from for entry in classes] == [f"python/sglang/srt/s{files - 1 - index}.py"
                                                       for index in range(files)]
    assert counts == {"lines gathered": 2 * files, "files looked up": files}


def test_r02_an_import_naming_a_removed_name_thousands_of_times_is_judged_and_listed_in_bounded_work(
        project, releases, monkeypatch) -> None:
    """One `from m import (x, x, ...)` statement naming a removed name 150,000 times (0.9 MB)
    made as many findings, each looking for the name's new home in the release's sources, then
    enriched and written: past a minute (ninth campaign, R02; P13's 200,000 pins alike).
    Counted, not timed: the home is looked for once, and a file lists MOST_LISTED findings of a
    rule, the rest counted in one more."""
    from sglang_contracts.check import runner
    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
    from sglang_contracts.contracts import imports
    from sglang_contracts.diagnostics import MOST_LISTED

    counts = {"homes looked for": 0, "findings enriched": 0}
    home_hint, enrich = imports.home_hint, runner.enrich

    def looking(*args):
        counts["homes looked for"] += 1
        return home_hint(*args)

    def enriching(*args):
        counts["findings enriched"] += 1
        return enrich(*args)

    monkeypatch.setattr(imports, "home_hint", looking)
    monkeypatch.setattr(runner, "enrich", enriching)
    monkeypatch.setattr(Fresh, "checks_in_two", False)  # every rule in this process, where it is counted
    copies = MOST_LISTED + 200
    write(project, {"app/many.py": "from sglang.srt.utils import (" + ", ".join(["helper"] * copies) + ")\n"})
    old, new = releases
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    many = [d for d in result.diagnostics if d.path == "app/many.py"]
    assert [d.code for d in many] == ["SGC102"] * (MOST_LISTED + 1)
    assert many[-1].message.startswith(f"{copies - MOST_LISTED:,} more SGC102 findings in this file are not listed")
    assert (many[-1].line, many[-1].col) == (1, len("from sglang.srt.utils import (") + 1 + MOST_LISTED * len("helper, "))
    assert counts == {"homes looked for": 1, "findings enriched": len(result.diagnostics)}
    assert len(result.diagnostics) <= MOST_LISTED + 3  # app/ok.py's own


def test_r13_reads_of_a_removed_module_attribute_thousands_of_times_search_the_release_once(
        project, releases, monkeypatch) -> None:
    """One line reading a removed module attribute 150,000 times (`A.helper`, 750 KB) looked for
    its new home at each read, each look reading the (directory) release's sources again: 49 s
    (campaign 10, R13). Counted, not timed: the home is looked for once per (module, attribute),
    and a search of a directory release's sources is made once a run, however often it is asked."""
    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
    from sglang_contracts.contracts import imports
    from sglang_contracts.diagnostics import MOST_LISTED
    from sglang_contracts.upstream.model import UpstreamModel

    looked, searched = [0], []  # homes looked for; what the release's sources were searched for
    home_hint, texts_mentioning = imports.home_hint, UpstreamModel.texts_mentioning
    old, new = releases
    (old / "sglang/srt/utils.py").write_text("def helper(): ...\ndef other(): ...\ndef kept(): ...\n")

    def looking(*args):
        looked[0] += 1
        return home_hint(*args)

    def searching(self, needle):
        searched.append(needle)
        return texts_mentioning(self, needle)

    monkeypatch.setattr(imports, "home_hint", looking)
    monkeypatch.setattr(UpstreamModel, "texts_mentioning", searching)
    monkeypatch.setattr(Fresh, "checks_in_two", False)  # every rule in this process, where it is counted
    searches = {}
    for copies in (1, MOST_LISTED + 200):
        write(project, {"app/ok.py": "", "app/many.py": "import sglang.srt.utils as A\n"
                                                        "v = [A.other, " + ", ".join(["A.helper"] * copies) + "]\n"})
        looked[0], searched[:] = 0, []
        result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
        assert [d.code for d in result.diagnostics] == ["SGC105"] * min(copies + 1, MOST_LISTED + 1)
        assert looked[0] == 2  # helper's and other's
        searches[copies] = len(searched)
    assert 0 < searches[MOST_LISTED + 200] == searches[1]  # the same for one read of each and thousands
    assert searched.count("import") == 1  # the release's imports from outside, asked for each name, read once


def test_an_import_of_thousands_of_names_from_a_removed_module_looks_for_their_home_once(
        project, releases, monkeypatch) -> None:
    """R13's class through a removed module: each name of `from gone import (x, x, ...)` looked
    for the statement's new home, each look going over every name the statement imports."""
    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
    from sglang_contracts.contracts import imports
    from sglang_contracts.diagnostics import MOST_LISTED

    looked = counted(monkeypatch, imports, "module_hint")
    monkeypatch.setattr(Fresh, "checks_in_two", False)  # every rule in this process, where it is counted
    old, new = releases
    (old / "sglang/srt/gone.py").write_text("def helper(): ...\n")
    copies = MOST_LISTED + 200
    names = ", ".join(["helper"] * copies)
    write(project, {"app/ok.py": "", "app/many.py": f"from sglang.srt.gone import ({names})\n"})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    assert [d.code for d in result.diagnostics] == ["SGC101"]  # one for the statement
    assert looked[0] == 1


def test_a_body_of_thousands_of_names_typed_from_others_is_typed_in_linear_work(monkeypatch) -> None:
    """`b = a.x` took a's types from the whole table of typed names, rebuilt at each such binding:
    a body of N constructed names and N derived ones cost N squared (8,000 of each: 11 s in a
    function, 22 s at module level, which campaign 9's R11 types too). Counted, not timed: the
    typed names handed over grow with N, not N squared."""
    from sglang_contracts.project import scopes
    from sglang_contracts.project.scanner import scan_source

    handed = {"names": 0}
    derived = scopes.derived_types

    def counting(prefix, node, known):
        handed["names"] += len(known)
        return derived(prefix, node, known)

    monkeypatch.setattr(scopes, "derived_types", counting)
    for size in (500, 1000):
        body = "".join(f"a{i} = C()\n" for i in range(size)) + "".join(f"b{i} = a{i}.x\n" for i in range(size))
        function = "def f():\n" + "".join(f"    {line}\n" for line in body.splitlines())
        handed["names"] = 0
        facts = scan_source("app/m.py", "app.m", "from sglang.srt.a import C\n" + body + function)
        assert 0 < handed["names"] <= 4 * size, (size, handed)
        assert facts.problem is None


def test_an_or_pattern_under_many_captures_is_read_once(monkeypatch) -> None:
    """A match capture takes its class from the pattern it captures (campaign 11, R04): an
    or-pattern of N class patterns under D nested `as` captures is read once, not once per
    capture (D times N). Counted, not timed: the class names read grow with N alone."""
    from sglang_contracts.project import scopes
    from sglang_contracts.project.scanner import scan_source

    read = {"names": 0}
    named = scopes.full_name

    def counting(node):
        read["names"] += 1
        return named(node)

    monkeypatch.setattr(scopes, "full_name", counting)
    alternatives, captures = 2000, 50
    pattern = "(" * captures + " | ".join(["C(q=1)"] * alternatives) + "".join(f") as c{i}" for i in range(captures))
    facts = scan_source("app/m.py", "app.m", "from sglang.srt.a import C\n\ndef f(x):\n    match x:\n"
                        f"        case {pattern}:\n            c0.m(q=1)\n")
    assert facts.problem is None and [call.callee.types for call in facts.calls] == [("T:C",)]
    assert read["names"] <= 2 * alternatives + 100, read


def test_many_star_imports_of_a_module_and_many_names_cost_their_sum(project, releases, monkeypatch) -> None:
    """A file of K star imports of one SGLang module reading N names it gives: the file's facts
    hold the N names once (not once per star import: their product, in its cache record), the
    old release is asked of each name once, and each lost name is one finding, at the last
    star import, the one that binds it. Counted, not timed."""
    import dataclasses
    import json

    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
    from sglang_contracts.project.scanner import scan_source
    from sglang_contracts.upstream.model import UpstreamModel

    asked = []
    star_gives = UpstreamModel.star_gives

    def counting(model, module, name):
        asked.append((module, name))
        return star_gives(model, module, name)

    monkeypatch.setattr(UpstreamModel, "star_gives", counting)
    monkeypatch.setattr(Fresh, "checks_in_two", False)  # every rule in this process, where it is counted
    old, new = releases
    stars, names = 200, 300
    write(old, {"sglang/srt/many.py": "".join(f"v{index} = {index}\n" for index in range(names))})
    write(new, {"sglang/srt/many.py": "w = 0\n"})
    text = "from sglang.srt.many import *\n" * stars + "".join(f"print(v{index})\n" for index in range(names))
    write(project, {"app/stars.py": text})
    facts = scan_source("app/stars.py", "app.stars", text)
    assert len(facts.free_names) == names
    assert len(json.dumps(facts.to_json())) < 10 * len(text)  # the names once per star import: 40 times
    result = run_check([project], dataclasses.replace(CheckOptions(old=str(old), new=str(new), use_cache=False,
                                                                   workers=1)))
    lost = [(d.line, d.code) for d in result.diagnostics if d.path == "app/stars.py"]
    assert lost == [(stars, "SGC102")] * names
    assert len(asked) == len(set(asked)) == names


def _read_counting(text: str, read: list[int]) -> str:
    """`text`, adding to read[0] the characters each search or slice of it reads (counted, not timed)."""

    class Counted(str):
        def __getitem__(self, key):
            part = str.__getitem__(self, key)
            read[0] += len(part)
            return part

    def counted(name: str):
        def method(self, *args, **kwargs):
            bounded = name in {"find", "rfind", "index", "count"}  # (sub, start, end): the part searched
            start, end = (list(args[1:3]) + [None, None])[:2] if bounded else (None, None)
            read[0] += len(str.__getitem__(self, slice(start, end)))
            return getattr(str, name)(self, *args, **kwargs)
        return method

    for name in ("find", "rfind", "index", "count", "split", "splitlines", "partition", "strip", "__contains__"):
        setattr(Counted, name, counted(name))
    return Counted(text)


def test_r05_thousands_of_fakes_entries_are_placed_in_one_read_of_the_configuration(project, releases,
                                                                                    monkeypatch) -> None:
    """Each unresolved `fakes` entry (SGC604) searched the whole pyproject for its key and counted
    the lines before it: 40,000 entries a minute's work (campaign 10, R05). The text is read a
    bounded number of times now, whatever the number of entries, and each finding is at its key."""
    from sglang_contracts.check.runner import CheckOptions, run_check
    from sglang_contracts.config import read_config
    from sglang_contracts.analysis import configured
    from sglang_contracts.diagnostics import MOST_LISTED

    entries = MOST_LISTED  # each listed at its key
    write(project, {"pyproject.toml": "[project]\nname = 'app'\n[tool.sglang-contracts.fakes]\n"
                                      + "".join(f'"tests.f{n}.C{n}" = "sglang.srt.a.C"\n' for n in range(entries))})
    read = [0]
    reader = configured.read_project_text  # where the entries' positions are read (analysis/configured.py)
    monkeypatch.setattr(configured, "read_project_text", lambda *a, **k: _read_counting(reader(*a, **k), read))
    old, new = releases
    settings = read_config(project / "pyproject.toml", required=True).settings()
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, settings=settings))
    placed = sorted((d.line, d.col) for d in result.diagnostics if d.code == "SGC604")
    assert placed == [(4 + n, 1) for n in range(entries)]
    assert read[0] <= 20 * (project / "pyproject.toml").stat().st_size


def test_lines_that_are_no_requirement_and_many_files_of_them_are_read_as_far_as_the_bounds(tmp_path,
                                                                                           monkeypatch) -> None:
    """A million lines that are no requirement (4 MB) were each parsed: 108 s; 150 requirement
    files of 2,000 each: 39 s (campaign 19). A file's texts tried, requirements or not, stop at
    MOST_REQUIREMENTS_READ; the project's files at MOST_PROJECT_REQUIREMENTS, each bound said."""
    from sglang_contracts.infra.boundary import collecting_problems
    from sglang_contracts.project import stack

    most, total = stack.MOST_REQUIREMENTS_READ, stack.MOST_PROJECT_REQUIREMENTS
    files = total // most + 2
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'app'\n",
                     "constraints.txt": "a b\n" * (most * 3) + "late==1\n",  # read first: the names sort so
                     **{f"requirements/r{n:03}.txt": "".join(f"q{k}==1\n" for k in range(most)) for n in range(files)}})
    parsed = []
    parse = stack.parse_requirement
    monkeypatch.setattr(stack, "parse_requirement", lambda text: parsed.append(text) or parse(text))
    with collecting_problems() as problems:
        found = stack.declared_requirements(tmp_path)
    assert "late" not in {r.name for r in found} and len(found) == total - most  # constraints.txt's texts count
    assert len(parsed) <= total + 2 * most  # not the 3 * most lines of requirements.txt, nor every file
    assert [(p.path, p.unchecked) for p in problems] == [
        ("constraints.txt", f"those after the first {most:,} are not checked"),
        (f"requirements/r{total // most - 1:03}.txt", "this file's and the later files' are not checked")]


def test_many_files_of_lines_that_are_no_requirement_stop_at_the_projects_bound(tmp_path, monkeypatch) -> None:
    """500 requirement files of 2,000 lines that are no requirement took 44 s: the project's bound
    counted requirements, not the texts tried (campaign 19, found on this stop's own fix)."""
    from sglang_contracts.infra.boundary import collecting_problems
    from sglang_contracts.project import stack

    most, total = stack.MOST_REQUIREMENTS_READ, stack.MOST_PROJECT_REQUIREMENTS
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'app'\n",
                     **{f"requirements/r{n:03}.txt": "a b\n" * most for n in range(total // most + 3)}})
    parsed = []
    parse = stack.parse_requirement
    monkeypatch.setattr(stack, "parse_requirement", lambda text: parsed.append(text) or parse(text))
    with collecting_problems() as problems:
        assert stack.declared_requirements(tmp_path) == []
    assert len(parsed) <= total
    assert [p.path for p in problems] == [f"requirements/r{total // most:03}.txt"]


def test_r05_a_one_line_list_of_thousands_of_requirements_is_read_in_linear_work(tmp_path, monkeypatch) -> None:
    """Each string of a pyproject line copied the rest of the line to find its comment: a one-line
    `dependencies` of 80,000 requirements took a minute and a half (campaign 10, R05's class).
    The characters read of the line grow with its length, not with its length times its strings."""
    from sglang_contracts.infra import tomltext
    from sglang_contracts.project import stack

    size = 1_900  # under MOST_REQUIREMENTS_READ
    line = "dependencies = [" + ", ".join(f'"p{n}==1"' for n in range(size)) + "]  # keep in step with sglang"
    write(tmp_path, {"pyproject.toml": f"[project]\nname = 'app'\n{line}\n"})
    read = [0]
    for module in (stack, tomltext):  # where the lines of the text are split, before and after the fix
        monkeypatch.setattr(module, "numbered_lines", lambda text, *a: [_read_counting(one, read)
                                                                        for one in text.splitlines(*a)], raising=False)
    found = stack.declared_requirements(tmp_path)
    assert [(r.name, r.line, r.col) for r in found] == [(f"p{n}", 3, line.index(f'"p{n}=') + 2) for n in range(size)]
    assert {r.comment for r in found} == {"keep in step with sglang"}
    assert read[0] <= 20 * len(line)


def test_a_file_of_more_requirements_than_are_read_is_read_that_far_and_says_so(tmp_path, monkeypatch) -> None:
    """290,000 requirements in one pyproject.toml (4.9 MB) took 51 s: the file was parsed five
    times and each requirement parsed and judged, in each reader (campaign 18, R01). One parse of
    the text serves every reader, a file gives its first MOST_REQUIREMENTS_READ, each text parsed
    once, and one SGC000 says the rest are not checked."""
    import tomllib

    from sglang_contracts.infra import tomltext
    from sglang_contracts.infra.boundary import collecting_problems
    from sglang_contracts.project import stack

    most = stack.MOST_REQUIREMENTS_READ
    many = most * 3
    listed, same = ", ".join(f'"p{n}==1"' for n in range(many)), ", ".join(['"a"'] * many)
    write(tmp_path, {"pyproject.toml": f"[project]\nname = 'app'\ndependencies = [{listed}, \"sglang==0.5.22\"]\n"
                                       f"[project.optional-dependencies]\nsame = [{same}]\n",
                     "requirements.txt": "".join(f"q{n}==1\n" for n in range(many))})
    parsed, loaded = [], []
    parse, loads = stack.parse_requirement, tomllib.loads
    monkeypatch.setattr(stack, "parse_requirement", lambda text: parsed.append(text) or parse(text))
    monkeypatch.setattr(tomltext.tomllib, "loads", lambda text: loaded.append(len(text)) or loads(text))
    tomltext._parsed.cache_clear()
    with collecting_problems() as problems:
        found = stack.declared_requirements(tmp_path)
        assert stack.sglang_extras_of(tmp_path) == stack.SglangExtras()  # its pin is past what is read
        stack.declared_python(tmp_path)
    assert [r.name for r in found] == [f"p{n}" for n in range(most)] + [f"q{n}" for n in range(most)]
    assert [(p.path, p.error, p.unchecked) for p in problems] == [
        (name, f"it holds more than the {most:,} this tool reads in one file",
         f"those after the first {most:,} are not checked") for name in ("pyproject.toml", "requirements.txt")]
    assert len(loaded) == 1 and len(parsed) <= 4 * most + 10  # each reader its first `most`, not `many`


def test_a_dockerfile_of_thousands_of_stages_is_fixed_reading_its_other_lines_once(project, releases,
                                                                                    monkeypatch) -> None:
    # Each SGC702 fix of an image tag or a pin read every line of its Dockerfile again for a
    # commit setting and for the settings it leaves: 4,000 stages took 26 s, 20,000 over a
    # minute (campaign 11, R03). Counted: the lines are read once per file, whatever the fixes.
    from sglang_contracts.check.fixes import run_fix
    from sglang_contracts.check.runner import CheckOptions
    from sglang_contracts.fix import text as edits

    old, new = releases
    old_version, new_version = (folder.joinpath("sglang", "version.py").read_text().split('"')[1]
                                for folder in (old, new))
    stages = 300
    write(project, {"Dockerfile": "".join(f"FROM lmsysorg/sglang:v{old_version} AS s{i}\n"
                                          f"RUN pip install sglang=={old_version}\n" for i in range(stages))})
    read = []
    commit_setting = edits.commit_setting
    monkeypatch.setattr(edits, "commit_setting", lambda line: read.append(1) or commit_setting(line))
    report = run_fix([project], CheckOptions(old=str(old), new=str(new), use_cache=False), write=False)
    before, after = report.texts["Dockerfile"]
    assert report.fixed == 2 * stages and after == before.replace(old_version, new_version)
    assert len(read) <= 2 * stages + 10  # the file's lines, once


def _heredoc_dockerfile(version: str, pins: int) -> str:
    return f"FROM lmsysorg/sglang:v{version}\nRUN <<EOF\n" + f"pip install sglang=={version}\n" * pins + "EOF\n"


def test_a_dockerfile_of_thousands_of_pins_is_fixed_splitting_its_text_once(project, releases, monkeypatch) -> None:
    # Each fix's Document.line and .replace split the whole text again, and each SGC702 fix
    # looked for `$pip/` through it (`pip install` reads as a setting of `pip`): 150,000 pins in
    # a heredoc (3.9 MB) took 54 s of `fix --diff` (campaign 12, R05). Counted: the text is split
    # and searched once per file, whatever the fixes.
    from sglang_contracts.check.fixes import run_fix
    from sglang_contracts.check.runner import CheckOptions
    from sglang_contracts.fix import document as documents
    from sglang_contracts.fix import text as edits

    old, new = releases
    old_version, new_version = (folder.joinpath("sglang", "version.py").read_text().split('"')[1]
                                for folder in (old, new))
    pins = 300
    write(project, {"Dockerfile": _heredoc_dockerfile(old_version, pins)})
    splits, searches = [], []
    numbered_lines, used_in_a_path = documents.numbered_lines, edits.used_in_a_path
    monkeypatch.setattr(documents, "numbered_lines", lambda text, **ends: splits.append(1) or numbered_lines(text,
                                                                                                            **ends))
    monkeypatch.setattr(edits, "used_in_a_path", lambda name, text: searches.append(name) or used_in_a_path(name, text))
    report = run_fix([project], CheckOptions(old=str(old), new=str(new), use_cache=False), write=False)
    before, after = report.texts["Dockerfile"]
    assert report.fixed == pins + 1 and after == before.replace(old_version, new_version)
    assert len(splits) == 1 and sorted(searches) == ["FROM", "pip"]  # `FROM x` reads as a setting too


def test_a_dockerfile_larger_than_a_fix_rewrites_is_left_and_each_finding_says_why(project, releases,
                                                                                   monkeypatch) -> None:
    # The fix size bound held for Python files only: a Dockerfile of any size took its fixes
    # (campaign 12, R05). Every file kind a fix rewrites has it now, with the same note.
    from sglang_contracts.check.fixes import run_fix
    from sglang_contracts.check.runner import CheckOptions
    from sglang_contracts.fix import document as documents

    old, new = releases
    old_version = old.joinpath("sglang", "version.py").read_text().split('"')[1]
    monkeypatch.setattr(documents, "MAX_FIX_LINES", 5)  # the bound's shape, on a small file
    write(project, {"Dockerfile": _heredoc_dockerfile(old_version, 4)})
    report = run_fix([project], CheckOptions(old=str(old), new=str(new), use_cache=False), write=False)
    assert report.fixed == 0 and "Dockerfile" not in report.texts
    assert [d.line for d in report.remaining if d.code == "SGC702"] == [1, 3, 4, 5, 6]
    assert report.notes and all("SGC702 not fixed: Dockerfile is larger than a fix rewrites (512 kB or 5 lines, "
                                "docs/fixing.md): fix it by hand" in note for note in report.notes)


def test_r04_calls_that_lost_a_keyword_thousands_of_times_build_the_findings_a_file_lists(project, releases,
                                                                                         monkeypatch) -> None:
    """380,000 lines `f(1, b=2)` of a function that lost keyword b (3.8 MB) built as many
    SGC201 findings (message, upstream's migrations, data), then listed 1,000: 48 s and 2.2 GB
    (campaign 12, R04). Counted, not timed: the findings built are those listed and the first
    left out, the rest only counted in the one finding that says how many; a `# noqa` past them
    still counts as used."""
    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
    from sglang_contracts.contracts import calls
    from sglang_contracts.diagnostics import MOST_LISTED

    built = []
    finding = calls.finding
    monkeypatch.setattr(calls, "finding", lambda code, *args, **fields: built.append(code) or finding(code, *args,
                                                                                                        **fields))
    monkeypatch.setattr(Fresh, "checks_in_two", False)  # every rule in this process, where it is counted
    old, new = releases
    (old / "sglang/srt/utils.py").write_text("def helper(): ...\ndef kept(): ...\ndef f(a, b=1): ...\n")
    (new / "sglang/srt/utils.py").write_text("def kept(): ...\ndef f(a): ...\n")
    copies = MOST_LISTED + 200
    write(project, {"app/ok.py": "", "app/many.py": "from sglang.srt.utils import f\n" + "f(1, b=2)\n" * copies
                    + "f(1, b=2)  # noqa: SGC201\n"})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1,
                                               report_unused_noqa=True))
    many = [d for d in result.diagnostics if d.path == "app/many.py"]
    assert [(d.code, d.line) for d in many] == [("SGC201", line) for line in range(2, MOST_LISTED + 3)]
    assert many[-1].message.startswith(f"{copies - MOST_LISTED:,} more SGC201 findings in this file are not listed "
                                       f"(a file lists at most {MOST_LISTED:,} of one rule); the first: f() no longer "
                                       "accepts keyword b")
    assert built == ["SGC201"] * (MOST_LISTED + 1)


def test_r04_a_file_of_more_pieces_than_a_file_is_read_with_is_one_sgc000_never_parsed(project, releases,
                                                                                      monkeypatch) -> None:
    """Python's parser alone held 2.2 GB for 380,000 one-line calls (3.8 MB; campaign 12, R04's
    residual), and 3.4 GB for 1.9 million `x;`, in each worker at once: a file of more pieces of
    syntax than PIECES_READ is one SGC000 saying so, and never parsed; one just under the bound
    is read as any other."""
    from sglang_contracts.check.runner import CheckOptions, run_check
    from sglang_contracts.infra import pysource

    parsed = []
    parse = pysource.ast.parse
    monkeypatch.setattr(pysource.ast, "parse", lambda code, *a, **k: parsed.append(len(code)) or parse(code, *a, **k))
    old, new = releases
    (old / "sglang/srt/utils.py").write_text("def helper(): ...\ndef kept(): ...\ndef f(a, b=1): ...\n")
    (new / "sglang/srt/utils.py").write_text("def kept(): ...\ndef f(a): ...\n")
    imported = "from sglang.srt.utils import f\n"  # 7 pieces
    calls = "f(1, b=2)\n"  # 8 pieces
    under = imported + calls * ((pysource.PIECES_READ - 7) // 8)
    write(project, {"app/ok.py": "", "app/many.py": under + calls, "app/semicolons.py": imported + "f;" * 300_000,
                    "app/under.py": under})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    too_many = ("SGC000", 1, f"cannot parse this file (more than the {pysource.PIECES_READ:,} pieces of syntax this "
                "tool parses in one file); its SGLang contracts are not checked")
    assert [(d.code, d.line, d.message) for d in result.diagnostics if d.path == "app/many.py"] == [too_many]
    assert [(d.code, d.line, d.message) for d in result.diagnostics if d.path == "app/semicolons.py"] == [too_many]
    assert len(under) in parsed and not [size for size in parsed if size > len(under)]
    assert {d.code for d in result.diagnostics if d.path == "app/under.py"} == {"SGC201"}


def test_a_rule_builds_the_findings_a_file_lists_and_counts_the_rest(monkeypatch) -> None:
    """built_per_file builds what listed_per_file lists: the first MOST_LISTED in report order
    and the first left out (with any at its place: the message orders those), a `# noqa`'d
    finding past them bare; the rest are counted, and listed_per_file adds the count to its own."""
    import sglang_contracts.diagnostics as diagnostics
    from sglang_contracts.project.facts import FileFacts, Position

    monkeypatch.setattr(diagnostics, "MOST_LISTED", 2)
    sites = [(5, 1), (1, 1), (3, 1), (2, 1), (3, 1), (4, 1), (6, 1), (7, 1)]  # in no order; two at 3:1
    built = []

    def build(site):
        built.append(site)
        return diagnostics.Diagnostic("m.py", *site, "SGC201", "error", f"at {site} #{len(built)}", "f.b")

    facts = FileFacts("m.py", "m", noqa={6: ["SGC201"]})
    found = list(diagnostics.built_per_file(sites, lambda site: facts, lambda site: Position(*site), build, "SGC201"))
    assert built == [(1, 1), (2, 1), (3, 1), (3, 1)]
    assert [(d.line, d.message) for d in found[4:]] == [(6, ""), (4, "3 more SGC201 findings in this file are not "
                                                                       "listed")]
    listed = diagnostics.listed_per_file(sorted([*found[:4], found[5]], key=diagnostics.Diagnostic.sort_key))
    assert [d.line for d in listed] == [1, 2, 3]
    assert listed[2].message == ("5 more SGC201 findings in this file are not listed (a file lists at most 2 of one "
                                 "rule); the first: at (3, 1) #3")
    assert listed[2].data == {diagnostics.NOT_LISTED: 5}


@pytest.mark.parametrize("rule, module, old_code, new_code, reading", [
    ("SGC105", "imports", "def helper(): ...\ndef kept(): ...\n", "def kept(): ...\n",
     ("import sglang.srt.utils as A\n", "A.helper\n")),
    ("SGC102", "imports", "def helper(): ...\ndef kept(): ...\n", "def kept(): ...\n",
     ("", "from sglang.srt.utils import helper\n")),
    ("SGC321", "attributes", "class C:\n    def gone(self): ...\n", "class C:\n    pass\n",
     ("from sglang.srt.utils import C\nc = C()\n", "c.gone()\n")),
])
def test_r04_reads_of_a_lost_attribute_thousands_of_times_build_the_findings_a_file_lists(
        project, releases, monkeypatch, rule, module, old_code, new_code, reading) -> None:
    # R04's class through reads: a module's or a class's lost attribute read past the listing
    # built a finding per read. Counted: the findings built are those listed and the first left out.
    import importlib

    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
    from sglang_contracts.diagnostics import MOST_LISTED

    checks = importlib.import_module(f"sglang_contracts.contracts.{module}")
    built = []
    finding = checks.finding
    monkeypatch.setattr(checks, "finding", lambda code, *args, **fields: built.append(code) or finding(code, *args,
                                                                                                         **fields))
    monkeypatch.setattr(Fresh, "checks_in_two", False)  # every rule in this process, where it is counted
    old, new = releases
    (old / "sglang/srt/utils.py").write_text(old_code)
    (new / "sglang/srt/utils.py").write_text(new_code)
    copies = MOST_LISTED + 200
    write(project, {"app/ok.py": "", "app/many.py": reading[0] + reading[1] * copies})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    many = [d for d in result.diagnostics if d.path == "app/many.py" and d.code == rule]
    assert len(many) == MOST_LISTED + 1
    assert many[-1].message.startswith(f"{copies - MOST_LISTED:,} more {rule} findings in this file are not listed")
    assert built.count(rule) == MOST_LISTED + 1


def test_noqa_comments_beside_strings_on_every_line_are_read_in_linear_time() -> None:
    """Each `# noqa` match is tested against the string literals covering its own line only: all
    of the file's literals were tried for each (20,000 lines of `s = "a # b"  # noqa`: 89 s of
    CPU). A fresh process bounds it: what is counted is whether it ends."""
    code = ("from sglang_contracts.project.scanner import scan_source\n"
            "text = ''.join(f's{n} = \"a # b\"  # noqa: SGC10{n % 10}\\n' for n in range(20000))\n"
            "print(len(scan_source('m.py', 'm', text).noqa))\n")
    done = subprocess.run([sys.executable, "-c", code], env=checkout_env(), capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "20000", done.stderr


def test_calls_of_one_function_alike_are_bound_once_and_each_broken_one_reported(project, releases,
                                                                                monkeypatch) -> None:
    """125,000 calls `f(1)` in one file were each bound on both releases again (campaign 19, R08).
    Counted, not timed: the calls alike that nothing breaks are bound once; each broken one is
    still bound and reported at its own place."""
    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
    from sglang_contracts.contracts import calls

    bound = counted(monkeypatch, calls, "bind")
    monkeypatch.setattr(Fresh, "checks_in_two", False)  # every rule in this process, where it is counted
    old, new = releases
    (old / "sglang/srt/calls.py").write_text("def f(a, b=1):\n    return a\n")
    (new / "sglang/srt/calls.py").write_text("def f(a):\n    return a\n")
    write(project, {"app/ok.py": "", "app/many.py": "from sglang.srt.calls import f\n" + "f(1)\n" * 500
                                                     + "f(2, b=3)\n" * 3 + "f(a=1)\n" * 500})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    assert [(d.line, d.code) for d in result.diagnostics] == [(line, "SGC201") for line in (502, 503, 504)]
    assert bound[0] == 2 * (1 + 3 + 1)  # both releases: f(1) once, each broken call, f(a=1) once


def counted(monkeypatch, owner, name: str) -> list[int]:
    """How often `owner.name` is called from now on (in its only item), the calls passed on to it."""
    calls = [0]
    function = getattr(owner, name)

    def counting(*args, **kwargs):
        calls[0] += 1
        return function(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


def test_every_file_named_with_a_finding_is_matched_in_linear_work(project, releases, monkeypatch) -> None:
    """pre-commit names every staged file: each finding's path was compared with each named path,
    pathlib's comparisons the square of the files' count (3,000 files: 53 s of CPU, campaign 20,
    R10). Counted, not timed: the comparisons grow as the files do, and every finding is reported."""
    import pathlib

    from sglang_contracts.check.runner import CheckOptions, run_check

    old, new = releases
    (old / "sglang/srt/calls.py").write_text("def f(a, b=1):\n    return a\n")
    (new / "sglang/srt/calls.py").write_text("def f(a):\n    return a\n")
    compared = counted(monkeypatch, pathlib.PurePath, "__eq__")
    counts = {}
    for files in (100, 400):
        write(project, {f"app/calls/m{n}.py": "from sglang.srt.calls import f\nf(1, b=2)\n" for n in range(files)})
        named = sorted((project / "app" / "calls").glob("m*.py"))
        compared[0] = 0
        result = run_check(named, CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
        assert [d.code for d in result.diagnostics] == ["SGC201"] * files
        counts[files] = compared[0]
    assert counts[400] < 8 * counts[100] + 2_000  # linear (the square would be 16 times)


def test_a_round_of_fixes_reads_the_findings_and_the_notes_once_not_at_each_fix(project, releases) -> None:
    """`fix` of 8,000 files of one stale image tag each: after each fix every open document's notes
    were gathered, and the round's findings read again (58 s, campaign 20, R12). Counted, not
    timed: the findings are read a bounded number of times, however many files are fixed."""
    from sglang_contracts.check.fixes import apply_fixes
    from sglang_contracts.check.runner import CheckOptions, run_check

    class Read(list):
        times = 0

        def __iter__(self):
            Read.times += 1
            return super().__iter__()

    old, new = releases
    counts = {}
    for files in (20, 200):
        write(project, {f"deploy/c{n}.yml": f"image: lmsysorg/sglang:v{old_version(old)}\n" for n in range(files)})
        result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
        stale = [d for d in result.diagnostics if d.code == "SGC702"]
        assert len(stale) == files
        result.diagnostics = Read(result.diagnostics)
        Read.times = 0
        _, fixed, errors = apply_fixes(result, unsafe=False)
        assert errors == [] and len([d for d in fixed if d.code == "SGC702"]) == files
        counts[files] = Read.times
    assert counts[200] == counts[20]


def old_version(release) -> str:
    return (release / "sglang" / "version.py").read_text().split('"')[1]


def test_files_of_many_nested_repositories_are_placed_in_linear_work(tmp_path, monkeypatch) -> None:
    """Each stack file was matched with every repository below the project (vendored clones,
    submodules) to learn which ignore it: 6,000 nested repositories took 41 s (campaign 20, R14).
    Counted, not timed: the folders compared grow as the files do. Past the repositories asked
    about, the files are not read, and one SGC000 says so."""
    from sglang_contracts.infra.boundary import collecting_problems
    from sglang_contracts.project import ignored
    from sglang_contracts.project.stack import release_mentions

    compared = counted(monkeypatch, ignored, "is_below")
    counts = {}
    for repositories in (50, 400):
        root = tmp_path / str(repositories)
        for n in range(repositories):
            (root / f"vendor/r{n}/.git").mkdir(parents=True)
            (root / f"vendor/r{n}/README.md").write_text("pip install sglang==0.5.22\n")
        compared[0] = 0
        with collecting_problems() as noted:
            assert release_mentions(root) == []
        assert len(noted) == 1 and f"{repositories - 1:,} other files" in noted[0].error
        counts[repositories] = compared[0]
    assert counts[400] < 10 * counts[50]  # linear (the square would be 64 times)
