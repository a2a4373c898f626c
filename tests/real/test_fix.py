"""`fix` on real history: sglang-omni 0.1.8 (pinned to sglang 0.5.21) fixed for 0.5.22, compared
with what sglang-omni 0.1.9 changed by hand at the same places. Sites where the tool writes the
very line the maintainers wrote are asserted here; the full comparison (identical, equivalent,
different, tool-only) is in docs/fixing.md."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.downloads import download_sdist
from sglang_contracts.check.fixes import run_fix
from sglang_contracts.check.runner import CheckOptions

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache


@pytest.fixture(scope="module")
def fixed_018(real_cache: Path, tmp_path_factory) -> tuple[Path, Path, list]:
    """A copy of sglang-omni 0.1.8 after `fix` (safe) and `fix --unsafe-fixes`, and 0.1.9."""
    project = tmp_path_factory.mktemp("omni") / "sglang-omni-0.1.8"
    shutil.copytree(download_sdist("sglang-omni", "0.1.8", real_cache), project)
    options = CheckOptions(new="0.5.22", cache_dir=real_cache)  # old: the project's sglang==0.5.21
    safe = run_fix([project], options)
    unsafe = run_fix([project], CheckOptions(old="0.5.21", new="0.5.22", cache_dir=real_cache), unsafe=True)
    return project, download_sdist("sglang-omni", "0.1.9", real_cache), [safe, unsafe]


def lines(root: Path, relpath: str) -> list[str]:
    return [line.strip() for line in (root / relpath).read_text().splitlines()]


def test_the_safe_fixes_write_the_pins_sglang_omni_019_wrote(fixed_018) -> None:
    fixed, released, (safe, _) = fixed_018
    assert "pyproject.toml" in safe.changed and not safe.errors
    ours, theirs = lines(fixed, "pyproject.toml"), lines(released, "pyproject.toml")
    for pin in ('"transformers==5.19.0",  # Match the pinned sglang stack', '"torchcodec==0.17.0",'):
        assert pin in ours and pin in theirs, pin
    # torch moves with torchvision, which sglang does not pin: 0.1.9 moved both (2.14.1, 0.29.1);
    # a fix that moved torch alone would break the install, so both are left, with a note.
    assert '"torch==2.13.0",' in ours and '"torchvision==0.28.0",' in ours
    assert any("pyproject.toml:23:6: SGC701 not fixed: torch moves with `torchvision==0.28.0` (line 24)" in note
               for note in safe.notes), safe.notes
    for prefix in ('"sglang==0.5.22; ', '"flashinfer_python[cu13]==0.7.1; '):
        mine = [line for line in ours if line.startswith(prefix)]
        assert mine and mine[0] in theirs, prefix
    assert not any("0.5.21" in line for line in ours if line.startswith('"sglang=='))


def test_the_unsafe_fixes_rename_the_keyword_and_set_the_flag_as_019_did(fixed_018) -> None:
    fixed, released, (_, unsafe) = fixed_018
    call = "batch.filter_batch(reqs_to_exclude=list(exclude))"  # 0.5.22 renamed chunked_req_to_exclude
    assert call in lines(fixed, "sglang_omni/scheduling/dllm_scheduler.py")
    assert call in lines(released, "sglang_omni/scheduling/dllm_scheduler.py")
    flag = "self.enable_skip_finishing_decode = False"
    assert flag in lines(fixed, "sglang_omni/scheduling/omni_scheduler.py")
    assert flag in lines(released, "sglang_omni/scheduling/omni_scheduler.py")
    assert "sglang_omni/scheduling/dllm_scheduler.py" in unsafe.changed and not unsafe.errors
    # What the fixes left stays reported; none of what they fixed does.
    assert [(d.code, d.symbol) for d in unsafe.remaining if d.code in ("SGC312", "SGC701", "SGC702")] == [
        ("SGC701", "torch")]  # left with torchvision (above)
    assert any(d.code == "SGC201" for d in unsafe.remaining)  # removed keywords (tp_rank) stay to port


def test_the_safe_fixes_learned_from_upstream_write_the_lines_019_wrote(fixed_018) -> None:
    """Rewrites upstream's own code shows (issue 34): the parallel linear layers' keywords and
    ModelRunner.tp_group, written as sglang-omni 0.1.9 wrote them."""
    fixed, released, (safe, _) = fixed_018
    for relpath, line in [("sglang_omni/models/ming_omni/thinker.py", 'parallel_group="attn_tp",'),
                          ("sglang_omni/models/qwen3_omni/components/thinker_model.py", 'parallel_group="attn_tp",'),
                          ("sglang_omni/model_runner/model_worker.py", "return get_parallel().tp_group"),
                          ("sglang_omni/model_runner/model_worker.py", "from sglang.srt.runtime_context import get_parallel")]:
        assert relpath in safe.changed
        assert line in lines(fixed, relpath) and line in lines(released, relpath), (relpath, line)
    assert "tp_rank=attn_tp_rank," not in lines(fixed, "sglang_omni/models/ming_omni/thinker.py")


def test_the_unsafe_fixes_write_the_untyped_reads_the_required_argument_and_the_python_floor_as_019_did(
        fixed_018) -> None:
    """SGC322's learned reads on an unannotated `req` (the `int()` around `extend_len` dropped, as
    0.5.22 declares it an int), SGC202's `checkpoint=True` from upstream's own calls, SGC708's
    raised floor: each line as sglang-omni 0.1.9 wrote it."""
    fixed, released, _ = fixed_018
    for relpath, line in [("sglang_omni/models/zonos2/model_runner.py", "prefix_len = req.prefix_len"),
                          ("sglang_omni/models/zonos2/model_runner.py", "req_len = req.extend_len"),
                          ("sglang_omni/scheduling/dllm_scheduler.py", "release_kv_cache(req, tree_cache, checkpoint=True)"),
                          ("pyproject.toml", 'requires-python = ">=3.11,<3.13"')]:
        assert line in lines(fixed, relpath) and line in lines(released, relpath), (relpath, line)
