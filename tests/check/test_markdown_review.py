"""The markdown report read as the bump PR's reviewer would (mdreview on slime, miles and
sglang-omni): the safe fixes counted as `fix` makes them, patches kept in two folders judged
once and said so, the upstream change behind most findings named."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import NEW, OLD, PROJECT, markdown_sections
from sglang_contracts.check.fixes import run_fix
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.infra.wording import plural
from sglang_contracts.patch.release import stock_tree
from sglang_contracts.reporters.markdown import write_markdown


@pytest.fixture(scope="module")
def fixture_result():
    return run_check([PROJECT], CheckOptions(old=str(OLD), new=str(NEW), use_cache=False))


def markdown(result) -> str:
    class Out(list):
        write = list.append

    out = Out()
    write_markdown(result, out)
    return "".join(out)


def test_the_safe_fixes_are_counted_as_fix_makes_them(fixture_result) -> None:
    """slime's checklist said 18 findings where `fix --diff` fixed 9 (miles 15 vs 5, omni 4 vs 3):
    it counted the rules' fix class."""
    would = run_fix([PROJECT], CheckOptions(old=str(OLD), new=str(NEW), use_cache=False), write=False)
    checklist = markdown_sections(markdown(fixture_result))["Before merging"]
    assert would.fixed and would.changed
    said = (f"`sglang-contracts fix --new 0.9.1` fixes {plural(would.fixed, 'finding')} in "
            f"{plural(len(would.changed), 'file')}")
    assert said in checklist, checklist
    assert all(f"`{path}`" in checklist for path in would.changed[:8])


def test_no_fix_item_when_fix_would_change_nothing(fixture_result) -> None:
    result = dataclasses.replace(fixture_result, diagnostics=[d for d in fixture_result.diagnostics
                                                               if d.code.startswith("SGC3")])
    assert "Apply the safe fixes" not in markdown(result)


def test_a_patch_kept_in_two_folders_is_one_line_naming_both(fixture_result) -> None:
    copies = ["docker/patch/v0.5.15.post1/sglang.patch"]
    hunks = [finding_at("SGC901", "docker/patch/latest/sglang.patch", n, 1, "x.py", what=f"hunk #{n} of x.py",
                        reason="its context changed", old="0.9.0", new="0.9.1", copies=copies) for n in range(3)]
    result = dataclasses.replace(fixture_result, diagnostics=sorted([*fixture_result.diagnostics, *hunks],
                                                                    key=Diagnostic.sort_key))
    patches = next(body for heading, body in markdown_sections(markdown(result)).items()
                   if heading.startswith("Patch files"))
    [line] = [line for line in patches.splitlines() if "docker/patch/latest/sglang.patch" in line]
    assert "3 hunks no longer apply" in line
    assert "(judged once; the same file is in `docker/patch/v0.5.15.post1/`)" in line
    assert "v0.5.15.post1/sglang.patch`:" not in patches


IO_STRUCT = "sglang/srt/managers/io_struct.py"
IO_OLD = "".join(f"class Req{i}:\n    pass\n\n\n" for i in range(1, 6))
DELTA_PATCH = f"""\
--- a/python/{IO_STRUCT}
+++ b/python/{IO_STRUCT}
@@ -17,4 +17,8 @@ class Req4:
 class Req5:
     pass
+
+
+class DeltaEncoding:
+    pass
 
 
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return root


def test_a_name_the_project_s_own_patch_defines_is_no_upstream_removal(tmp_path: Path) -> None:
    """slime's `router_gemm_batch_invariant` and `--enable-fp32-moe-router` exist only through its
    patches: gone on 0.5.23 with the hunks that add them, they were reported as upstream's."""
    project = write(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n", "app/__init__.py": "",
        "app/weights.py": "from sglang.srt.managers.io_struct import DeltaEncoding\n",
        "docker/Dockerfile": "COPY docker/patch/latest/sglang.patch /sgl-workspace/sglang/\n"
                             "RUN cd /sgl-workspace/sglang && git apply sglang.patch\n",
        "docker/patch/latest/sglang.patch": DELTA_PATCH})
    stock = {IO_STRUCT: IO_OLD, "sglang/srt/__init__.py": "", "sglang/srt/managers/__init__.py": "",
             "sglang/__init__.py": ""}
    old = write(tmp_path / "old", {**stock, "sglang/version.py": '__version__ = "0.1.0"\n'})
    new = write(tmp_path / "new", {**stock, IO_STRUCT: IO_OLD.replace("class Req5:", "class Req5(Base):"),
                                   "sglang/version.py": '__version__ = "0.2.0"\n'})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    assert sorted(d.code for d in result.diagnostics) == ["SGC102", "SGC901"]
    text = markdown(result)
    # a replay (check/replay.py) names the stock releases, opened on use: the same report
    stock = dataclasses.replace(result.old.release, tree=stock_tree(result.old.release))
    replayed = dataclasses.replace(result, old=SimpleNamespace(release=stock), replayed_files_with_contracts=1)
    assert markdown(replayed) == text
    sections = markdown_sections(text)
    assert not any(heading.startswith("Imports") for heading in sections)
    patches = next(body for heading, body in sections.items() if heading.startswith("Patch files"))
    stack_part = patches.split("Names the stack's own patches define (`docker/patch/latest/sglang.patch`)", 1)[1]
    assert "SGC102: DeltaEncoding is no longer importable" in stack_part, patches


def test_the_upstream_change_behind_most_findings_is_named(fixture_result) -> None:
    """The bump guide's PR names the one upstream change that dominates the adaptation: slime's
    0.5.23 ServerArgs rewrite (SGC503, SGC509 x11, the server_args.py hunks of four patches)."""
    fields = [finding_at("SGC503", "app/args.py", n, 1, f"sglang.srt.server_args.ServerArgs.field_{n}",
                         what=f"ServerArgs.field_{n} is gone", old="0.9.0", new="0.9.1") for n in range(1, 40)]
    hunks = [finding_at("SGC901", "docker/patch/latest/sglang.patch", n, 1, "python/sglang/srt/server_args.py",
                        what=f"hunk #{n} of python/sglang/srt/server_args.py", reason="its context changed",
                        old="0.9.0", new="0.9.1") for n in range(1, 6)]
    result = dataclasses.replace(fixture_result, diagnostics=sorted([*fixture_result.diagnostics, *fields, *hunks],
                                                                    key=Diagnostic.sort_key))
    text = markdown(result)
    [line] = [line for line in text.splitlines() if line.startswith("**Dominant upstream change:**")]
    assert line.startswith("**Dominant upstream change:** `sglang.srt.server_args")
    breaks, of = map(int, re.search(r"\((\d+) of the (\d+) distinct breaks", line).groups())
    assert 39 <= breaks < of and "Inferred from where the findings point" in line
    assert text.index("**Dominant upstream change:**") < text.index("### ")  # at the top, before the sections


def test_the_headline_says_which_findings_guard_what_both_releases_define(fixture_result) -> None:
    """helper-39 on slime: three SGC801 'fallback is dead code' warnings hold on both releases,
    and the headline said of every finding that it held on the old release and fails on the new."""
    headline = next(line for line in markdown(fixture_result).splitlines() if "with SGLang break" in line)
    guards = sum(d.code in ("SGC801", "SGC802", "SGC803") for d in fixture_result.diagnostics)
    assert guards, "the fixture project probes what both releases define"
    assert f"; {guards} of them are defensive code guarding what both releases define" in headline
    without = dataclasses.replace(fixture_result, diagnostics=[d for d in fixture_result.diagnostics
                                                               if d.code not in ("SGC801", "SGC802", "SGC803")])
    assert "defensive code" not in next(line for line in markdown(without).splitlines() if "with SGLang break" in line)
