"""A small project with a two-patch stack against two small SGLang-shaped releases, for the
tests of `patch rebase` of a stack and of `bump`: B moves a kernel (a file the wheel ships that is
not Python), shifts every line of the scheduler and rewrites one line the first patch changes (a
conflict); the second patch's context holds a line of the first's."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.gitcheck import materialise

FUNCTION = "    a = x + 1\n    b = a * 2\n    c = b - 3\n    d = c * 4\n    e = d + 5\n    f = e - 6\n    return f\n\n\n"
SCHED_A = "import os\n\n\n" + "".join(f"def {name}(x):\n{FUNCTION}" for name in ("alpha", "beta", "gamma", "delta"))
# B: two lines more at the top (every hunk at an offset), gamma's `b =` rewritten (a conflict)
SCHED_B = ("import os\nimport sys\n\nVERSION = 2\n\n\n" + SCHED_A.split("\n\n\n", 1)[1]).replace(
    "def gamma(x):\n    a = x + 1\n    b = a * 2\n", "def gamma(x):\n    a = x + 1\n    b = a * 3\n")
KERNEL = "// a kernel the wheel ships beside the modules\n" + "".join(f"int step_{i}(int x) {{ return x + {i}; }}\n"
                                                                   for i in range(12))
OLD_KERNEL, NEW_KERNEL = "sglang/jit_kernel/gemm/quant.cuh", "sglang/kernels/jit/gemm/quant.cuh"


def release(root: Path, version: str, files: dict[str, str]) -> Path:
    for relpath, text in {"sglang/__init__.py": "", "sglang/srt/__init__.py": "",
                          "sglang/version.py": f'__version__ = "{version}"\n', **files}.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return root


def git_diff(before: dict[str, str], after: dict[str, str], folder: Path) -> str:
    """The patch `git diff` makes of `after` over `before` (release paths, under python/)."""
    repo = materialise({f"python/{p}": text for p, text in before.items()}, folder)
    run = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "A")
    for relpath, text in after.items():
        (repo / "python" / relpath).write_text(text)
    return run("diff").stdout


FIRST = {"sglang/srt/sched.py": SCHED_A.replace("def alpha(x):\n    a = x + 1\n", "def alpha(x):\n    a = x + 100\n")
         .replace("def gamma(x):\n    a = x + 1\n    b = a * 2\n", "def gamma(x):\n    a = x + 1\n    b = a * 5\n"),
         OLD_KERNEL: KERNEL.replace("return x + 3;", "return x + 30;")}
# A change release B makes too (bump's tests: the first patch makes it, and `fix` drops its hunk)
DELTA_UPSTREAM = ("def delta(x):\n    a = x + 1\n", "def delta(x):\n    a = x + 10\n")


def stack_patches(tmp_path: Path, upstream: bool = False) -> dict[str, str]:
    """The two patches; with `upstream`, the first also makes B's change of delta."""
    a_files = {"sglang/srt/sched.py": SCHED_A, OLD_KERNEL: KERNEL}
    first = dict(FIRST)
    if upstream:
        first["sglang/srt/sched.py"] = first["sglang/srt/sched.py"].replace(*DELTA_UPSTREAM)
    # The second patch's context holds the first's line: it applies only on top of it.
    second = {"sglang/srt/sched.py": first["sglang/srt/sched.py"].replace("    a = x + 100\n    b = a * 2\n",
                                                                           "    a = x + 100\n    b = a * 20\n")}
    return {"first.patch": git_diff(a_files, first, tmp_path / "first"),
            "second.patch": git_diff({**a_files, **first}, second, tmp_path / "second")}


DOCKERFILE = """ARG SGLANG_IMAGE_TAG=v0.5.1-cu129
FROM lmsysorg/sglang:${{SGLANG_IMAGE_TAG}}
ARG PATCH_VERSION={folder}
COPY docker/patch/${{PATCH_VERSION}}/sglang*.patch /sgl-workspace/sglang/
RUN cd /sgl-workspace/sglang && \\
    for patch in sglang-first.patch sglang-second.patch; do git apply {flags}"$patch" || exit 1; done
"""


def project(tmp_path: Path, folder: str, flags: str = "", upstream: bool = False) -> Path:
    root = tmp_path / "project"
    (root / "docker" / "patch" / folder).mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (root / "docker" / "Dockerfile").write_text(DOCKERFILE.format(folder=folder, flags=flags))
    for name, text in stack_patches(tmp_path, upstream).items():
        (root / "docker" / "patch" / folder / f"sglang-{name}").write_text(text)
    return root
