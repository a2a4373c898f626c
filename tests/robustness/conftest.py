"""The small bump's releases and project (bump.py), written for each test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import write_tree
from tests.robustness.bump import BROKEN_IMPORT, NEW, OLD


@pytest.fixture
def releases(tmp_path: Path) -> tuple[Path, Path]:
    return write_tree(tmp_path / "old", OLD), write_tree(tmp_path / "new", NEW)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n",
                                              "app/__init__.py": "", "app/ok.py": BROKEN_IMPORT})
