"""The platforms the project builds for: Linux x86_64 always, and Linux aarch64 when a main
Dockerfile targets it (`--platform=linux/arm64`, an `aarch64` or `sbsa` download, an arm64 base
image). The dependency closure is read for each (closure/walk.py): markers such as
`platform_machine != "aarch64"` keep torchcodec off ARM servers."""

from __future__ import annotations

import re
from pathlib import Path

from sglang_contracts.infra.boundary import read_project_text
from sglang_contracts.project.images import is_dockerfile, is_main_dockerfile
from sglang_contracts.project.index import walk_project
from sglang_contracts.requirements import environments

ARM = re.compile(r"linux/arm64|\baarch64\b|\bsbsa\b|\barm64v8/")


def targets_arm(root: Path) -> bool:
    root = root.resolve()
    for path in walk_project([root], is_dockerfile):
        if is_main_dockerfile(path.relative_to(root).as_posix()):
            text = read_project_text(path, root)
            if text is not None and ARM.search(text):
                return True
    return False


def build_environments(root: Path) -> list[dict[str, str]]:
    """The marker environments of the platforms the project builds for (requirements.PLATFORMS)."""
    linux_x86, linux_arm = environments()[:2]
    return [linux_x86, linux_arm] if targets_arm(root) else [linux_x86]
