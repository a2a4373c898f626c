"""What test modules share: the fixture project and releases, trees written from dicts, the
fixture project's expected findings, and runs in a terminal or a git clone. Test modules import
from here, never from one another (conftest.py holds the fixtures and the session's set-up)."""

from __future__ import annotations

import ast
import gc
import importlib.util
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
from functools import cache
from pathlib import Path

import git

CHECKOUT = Path(__file__).resolve().parent.parent
FIXTURES = CHECKOUT / "fixtures"
PROJECT = FIXTURES / "project"
UPSTREAM = FIXTURES / "upstream"
OLD = UPSTREAM / "old"
NEW = UPSTREAM / "new"
PACKAGE = CHECKOUT / "sglang_contracts"


def load_script(name: str):
    """scripts/<name>.py as a module (the scripts are run, not imported: no package holds them)."""
    spec = importlib.util.spec_from_file_location(name, CHECKOUT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def package_module_name(path: Path) -> str:
    """The dotted name of a file of the package (a package's __init__ by the package's name)."""
    parts = list(path.relative_to(CHECKOUT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def package_syntax() -> dict[str, tuple[Path, ast.Module]]:
    """Every module of the package by name: its file and its parsed code, parsed once a process
    (2.8 s of CPU). The tests of the import graph and of the patterns read it while pytest
    collects, which each of the suite's workers does, and each parsed the package again. The
    trees are shared: read them, never change them."""
    return {package_module_name(path): (path, ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(PACKAGE.rglob("*.py"))}


def checkout_env(**extra: str) -> dict[str, str]:
    """The environment for a subprocess that must run this checkout's package, whatever copy
    of it is installed and whatever its working directory."""
    path = os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def add_settings(pyproject: Path, table: str) -> None:
    """Add keys to a pyproject's [tool.sglang-contracts] table, keeping the keys it has that
    `table` does not set (the fixture project declares its ServerArgs seam there)."""
    text, _, own = pyproject.read_text().partition("[tool.sglang-contracts]\n")
    given = {line.split("=")[0].strip() for line in table.split("\n[")[0].splitlines() if "=" in line}
    own = "".join(line for line in own.splitlines(keepends=True) if line.split("=")[0].strip() not in given)
    pyproject.write_text(text + "\n[tool.sglang-contracts]\n" + own + table)


def collect_garbage() -> None:
    """A full collection now, for a test that runs check after check on a large project: each
    run's garbage waits for the cyclic collector, which the runs' own thresholds hold off, and a
    dozen runs of sglang-omni kept that way took the process from 60 to 560 MB."""
    gc.collect()


# -- trees written from dicts --------------------------------------------------------------------

def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """`files` (relative path -> text or bytes) written below `root`."""
    for relpath, content in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def upstream_tree(root: Path, files: dict[str, str], version: str) -> Path:
    """An example's upstream files, completed with what every release has."""
    defaults = {"sglang/__init__.py": "", "sglang/version.py": f'__version__ = "{version}"\n'}
    return write_tree(root, {**defaults, **files})


# -- the fixture project's findings --------------------------------------------------------------

# path:line:col: CODE -> severity, for sglang 0.9.0 -> 0.9.1 on fixtures/project.
EXPECTED_SEVERITY = {
    "demo_omni/broken.py:5:15: SGC000": "error",  # syntax error
    "demo_omni/compat.py:5:44: SGC102": "error",  # `# noqa: some-other-tool` does not silence
    "demo_omni/compat.py:6:36: SGC102": "error",  # `# noqa: E402, SGC101` names another code
    "demo_omni/engine.py:8:28: SGC105": "error",  # module re-exported by the vendor layer
    "demo_omni/layers.py:4:35: SGC103": "warning",  # moe re-export re-pointed
    "demo_omni/layers.py:5:75: SGC102": "error",  # dropped from __all__ behind `import *`
    "demo_omni/layers.py:8:56: SGC104": "warning",  # guarded import now falls back
    "demo_omni/model.py:8:48: SGC201": "error",  # RowParallelLinear(tp_rank=...)
    "demo_omni/model.py:8:62: SGC201": "error",  # RowParallelLinear(tp_size=...)
    "demo_omni/model.py:12:18: SGC202": "error",  # filter_batch on an annotated receiver
    "demo_omni/model.py:16:30: SGC203": "error",  # a parameter inserted before the positional ones
    "demo_omni/model.py:20:12: SGC204": "error",  # AbortReq gained the required field rid
    "demo_omni/model.py:20:21: SGC204": "error",  # AbortReq lost abort_all
    "demo_omni/model_patch.py:5:39: SGC105": "error",  # model_utils.apply_qk_norm
    "demo_omni/model_runner.py:9:9: SGC303": "warning",  # the overridden load_model changed
    "demo_omni/model_runner.py:12:9: SGC301": "warning",  # init_cuda_graphs is gone upstream
    "demo_omni/model_runner.py:15:9: SGC302": "error",  # forward gained skip_attn_backend_init
    "demo_omni/model_runner.py:19:7: SGC304": "error",  # a new abstract method
    "demo_omni/model_runner.py:24:7: SGC305": "error",  # sampler.Sampler became a function
    "demo_omni/model_runner.py:33:34: SGC321": "error",  # self.model_runner.tp_group, now .ps.tp_group
    "demo_omni/model_runner.py:36:29: SGC706": "warning",  # marked copy of ModelRunner.load_model, which changed
    "demo_omni/model_runner.py:42:19: SGC707": "warning",  # copy of ModelRunner.init_cuda_graphs, now gone
    "demo_omni/omni_scheduler.py:16:21: SGC312": "error",  # two levels down: self.mm_receiver
    "demo_omni/omni_scheduler.py:19:21: SGC311": "error",  # borrowed get_num_allocatable_reqs is gone
    "demo_omni/omni_scheduler.py:22:26: SGC313": "warning",  # Scheduler.get_new_batch_prefill(self) changed
    "demo_omni/omni_scheduler.py:25:45: SGC321": "error",  # req.extend_range on `Req | None`
    "demo_omni/scheduling.py:7:8: SGC101": "error",  # module-level import of a removed module
    "demo_omni/scheduling.py:10:10: SGC101": "warning",  # same, under `if TYPE_CHECKING:`
    "demo_omni/overlays.py:3:14: SGC704": "warning",  # `Remove when: sglang>=0.9.1` now holds
    "demo_omni/overlays.py:6:10: SGC703": "warning",  # a comment naming sglang 0.9.0
    "pyproject.toml:7:6: SGC702": "warning",  # the pin sglang==0.9.0
    "pyproject.toml:9:6: SGC701": "warning",  # transformers mirrors SGLang's pin, which moved
    "docker/Dockerfile:1:32: SGC702": "warning",  # ARG BASE_IMAGE=lmsysorg/sglang:v0.9.0-cu129
    ".github/workflows/ci.yml:7:30: SGC702": "warning",  # image: lmsysorg/sglang:v0.9.0
    "docs/install.md:5:26: SGC702": "warning",  # pip install "sglang==0.9.0"
    "docker/patch/v0.9.0/sglang.patch:4:1: SGC902": "error",  # upstream added the same import: git apply fails
    # (no SGC705 for it: the image's patch imports xgrammar on 0.9.0 already, and the project is
    # checked against the releases as the image has them)
    "docker/patch/v0.9.0/sglang.patch:12:1: SGC901": "error",  # prepare_server_args is gone
    "demo_omni/model_patch.py:9:17: SGC401": "error",  # patches apply_qk_norm, moved unchanged to layers.layernorm
    "demo_omni/vendor/sglang/layers.py:11:12: SGC402": "error",  # the saved original's call misses a new keyword
    "demo_omni/vendor/sglang/layers.py:18:9: SGC402": "error",  # the replacement cannot take it either
    "demo_omni/vendor/sglang/layers.py:18:9: SGC403": "warning",  # the patched forward_cuda's body changed
    "demo_omni/vendor/sglang/layers.py:18:9: SGC404": "warning",  # RMSNorm.forward no longer calls forward_cuda
    "demo_omni/vendor/sglang/layers.py:19:18: SGC401": "warning",  # setattr of the removed forward_npu
    "demo_omni/serving.py:12:20: SGC321": "error",  # a ServerArgs dataclass field read (typed)
    "demo_omni/serving.py:13:50: SGC501": "error",  # the same field set through the declared seam
    "demo_omni/serving.py:14:17: SGC502": "warning",  # a field written outside the seam
    "demo_omni/arguments.py:5:31: SGC503": "warning",  # a skip-list entry names the removed field
    "demo_omni/arguments.py:14:38: SGC503": "error",  # args.sglang_enable_ep_moe
    "tests/test_doubles.py:11:7: SGC602": "warning",  # FakeServerArgs lacks the new default_chat_template_kwargs
    "tests/test_doubles.py:16:13: SGC601": "error",  # mock.patch of the renamed get_num_allocatable_reqs
    "tests/test_doubles.py:19:44: SGC602": "warning",  # Mock(spec=ServerArgs) keeps the removed enable_ep_moe
    "tests/test_doubles.py:20:12: SGC603": "warning",  # "self.forward_cuda(" left RMSNorm.forward's source
    "demo_omni/defensive.py:15:23: SGC802": "warning",  # except AttributeError around runner.model
}
# Broken on 0.9.0 already (a typo inside a function): reported only with --report-unresolved.
UNRESOLVED = "demo_omni/scheduling.py:22:47: SGC102"


def sort_key(prefix: str) -> tuple:
    """The tool's order: path, then line and column as numbers, then code."""
    path, line, col, code = prefix.replace(": ", ":").split(":")
    return path, int(line), int(col), code


# In a bump run SGC801/SGC803 are reported only in files with other findings of the bump;
# defensive.py has none (its SGC802 holds on the pin alone too): these show on the pin alone.
PIN_ALONE_ONLY = [
    "demo_omni/defensive.py:10:25: SGC801",  # getattr(req, "prefix_indices", []) on a static attribute
    "demo_omni/defensive.py:21:24: SGC803",  # inspect.signature(Req.__init__), the same in both
]
EXPECTED = sorted(EXPECTED_SEVERITY, key=sort_key)


def coded(prefix: str) -> list[str]:
    """The expected diagnostics whose code starts with `prefix`."""
    return [p for p in EXPECTED if p.rsplit(" ", 1)[1].startswith(prefix)]


# What the pin alone says (--old X --new X): the rules that judge one release, not a bump.
PIN_ALONE = ["demo_omni/broken.py:5:15: SGC000", *coded("SGC8"), *PIN_ALONE_ONLY, "demo_omni/serving.py:14:17: SGC502"]


# -- runs ----------------------------------------------------------------------------------------

def run_in_terminal(args: list[str], cwd: Path, env: dict[str, str], stderr_terminal: bool = False) -> tuple[int, str, str]:
    """Run the CLI with its standard output (and optionally its standard error) on a pseudo-terminal."""
    primary, secondary = pty.openpty()
    err_primary, err_secondary = pty.openpty() if stderr_terminal else (None, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "sglang_contracts", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=secondary, stderr=err_secondary if stderr_terminal else subprocess.PIPE,
    )
    os.close(secondary)
    if err_secondary is not None:
        os.close(err_secondary)

    def drain(fd: int) -> bytes:
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(fd)
        return b"".join(chunks)

    err_chunks: list[bytes] = []
    reader = None
    if err_primary is not None:
        reader = threading.Thread(target=lambda: err_chunks.append(drain(err_primary)))
        reader.start()
    out = drain(primary)
    err = process.stderr.read() if process.stderr else b""
    status = process.wait()
    if reader is not None:
        reader.join()
        err = err_chunks[0]
    return status, out.decode(), err.decode()

def markdown_sections(markdown: str) -> dict[str, str]:
    """`### heading` -> the text under it."""
    parts = re.split(r"^### (.+)$", markdown, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


# -- releases as tags of a git clone (--sglang-repo) ---------------------------------------------

AUTHOR = git.Actor("Fixture Bot", "fixture@example.invalid")


def commit_release(repo: git.Repo, source: Path, version: str) -> None:
    """Make python/ hold `source` (as SGLang's repo does), commit it and tag v<version>."""
    python = Path(repo.working_tree_dir) / "python"
    shutil.rmtree(python / "sglang", ignore_errors=True)
    shutil.copytree(source / "sglang", python / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(source / "pyproject.toml", python / "pyproject.toml")  # the release's pins, as in SGLang's repo
    repo.git.add("--all")
    repo.index.commit(f"Release {version}", author=AUTHOR, committer=AUTHOR)
    repo.create_tag(f"v{version}")


# -- real sglang-omni: edits as a developer makes them (incremental and resident re-checks) ------

REAL_EDITS = [
    # a statement added in a method body
    ("sglang_omni/scheduling/omni_scheduler.py", "    def __init__(self", None,
     lambda text, at: text[:text.index(":\n", at) + 2] + "        trace_enabled = False  # edited\n" + text[text.index(":\n", at) + 2:]),
    # the real SGC102 fixed by importing from where the name now lives
    ("sglang_omni/models/qwen3_omni/components/code2wav.py", "from sglang.kernels.ops.layernorm import rmsnorm",
     "from sglang.kernels.ops.layernorm.norm import rmsnorm", None),
    # lines added at the top of a module others import
    ("sglang_omni/scheduling/omni_scheduler.py", '"""', '"""Edited.\n\n', None),
    # an outline edit: a method added to a class other files subclass (PDKVLifecycle, NemotronTalkerScheduler)
    ("sglang_omni/scheduling/omni_scheduler.py", "class OmniScheduler(Generic[RequestDataT]):", None,
     lambda text, at: text[:text.index("    def __init__(", at)] + "    def traced(self) -> bool:\n        return False\n\n"
     + text[text.index("    def __init__(", at):]),
    # a members edit: an attribute given in the __init__ of a class other files subclass (their
    # files are checked again, and the rules that read any class's members, over every file)
    ("sglang_omni/scheduling/omni_scheduler.py", "class OmniScheduler(Generic[RequestDataT]):", None,
     lambda text, at: text[:text.index(":\n", text.index("    def __init__(", at)) + 2] + "        self.traced_by_edit = None\n"
     + text[text.index(":\n", text.index("    def __init__(", at)) + 2:]),
    # an outline edit: an import added to a module that imports SGLang
    ("sglang_omni/scheduling/pd_scheduler.py", "import logging\n", "import logging\nimport os.path\n", None),
    # a statement added in a function of a module pd_scheduler.py imports: pd_scheduler.py is
    # checked again, and its classes' SGC312 paths need their project bases' own calls (once
    # read from the bases' outlines, which hold none: a finding lost)
    ("sglang_omni/scheduling/pd_utils.py", "def continuation_from_req(", None,
     lambda text, at: text[:text.index(":\n", at) + 2] + "    traced = False  # edited\n" + text[text.index(":\n", at) + 2:]),
]


def lsp_frame(message: dict, header: bytes = b"Content-Length", length_delta: int = 0) -> bytes:
    """A language server protocol frame of `message` (a header spelled otherwise, a length off by
    `length_delta`, for malformed ones)."""
    body = json.dumps(message).encode()
    return header + b": %d\r\n\r\n" % (len(body) + length_delta) + body
