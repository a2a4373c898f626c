"""`check --new <next>` in the root of small trees in miles' and slime's shape (written here),
against the real sglang wheels: the image pin is found, and a real finding of the bump is
reported, with a control that must stay silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_contracts.cli import main
from tests.helpers import write_tree

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache

MILES_CPU_CI = """\
# SGLang runtime imports reached by the CPU suite (the images get them from their SGLang base).
einops==0.8.2
msgspec==0.21.1
openai==2.6.1
pyzmq==27.1.0
sentencepiece==0.2.1
torch==2.11.0
"""


def miles_shaped(root: Path, ci_list: str) -> Path:
    return write_tree(root, {
        "setup.py": 'from setuptools import setup\n\ndef _fetch_requirements(path):\n    with open(path) as fd:\n'
                    '        return [r.strip() for r in fd]\n\n'
                    'setup(name="app", install_requires=_fetch_requirements("requirements.txt"))\n',
        "requirements.txt": "ray[default]\n",
        "docker/Dockerfile": "ARG SGLANG_IMAGE_TAG=v0.5.15\nFROM lmsysorg/sglang:${SGLANG_IMAGE_TAG} AS sglang\n"
                             "ARG SGLANG_BRANCH=sglang-app\n",
        "docker/build.py": 'VARIANTS = {\n    "cu12": {"build_args": {"SGLANG_IMAGE_TAG": "v0.5.12-cu129"}},\n'
                           '    "rocm": {"build_args": {"SGLANG_IMAGE_TAG": "v0.5.10-rocm700-mi30x"}},\n}\n',
        "app/tool_calls.py": "from sglang.srt.function_call.function_call_parser import FunctionCallParser\n",
        "tests/ci/requirements-ci-cpu.txt": ci_list,
    })


def check_in_root(project: Path, monkeypatch, capsys, *args: str) -> tuple[int, list[dict], str]:
    monkeypatch.chdir(project)
    status = main(["check", "--format", "json", *args])
    captured = capsys.readouterr()
    return status, json.loads(captured.out), captured.err


def test_miles_shaped_root_bump_to_0516_finds_xgrammar_through_function_call_parser(
        tmp_path: Path, monkeypatch, capsys, real_cache: Path) -> None:
    project = miles_shaped(tmp_path / "miles", MILES_CPU_CI)
    status, found, err = check_in_root(project, monkeypatch, capsys, "--new", "0.5.16")
    assert status == 1
    assert "note: --old 0.5.15 from docker/Dockerfile:1" in err and "taken as the main Dockerfile" in err
    assert "branch `sglang-app`" in err and "--sglang-repo CLONE --old REF --new REF" in err
    (xgrammar,) = [d for d in found if d["code"] == "SGC705"]
    assert (xgrammar["path"], xgrammar["line"]) == ("app/tool_calls.py", 1)
    assert "imports xgrammar" in xgrammar["message"] and "inkling_detector" in xgrammar["message"]
    assert "tests/ci/requirements-ci-cpu.txt" in xgrammar["message"]
    stale = {(d["path"], d["line"]) for d in found if d["code"] == "SGC702"}
    assert stale == {("docker/Dockerfile", 1), ("docker/build.py", 2)}  # 0.5.15, and 0.5.12 lagging; not ROCm's


def test_miles_shaped_control_with_xgrammar_listed_is_silent(tmp_path: Path, monkeypatch, capsys,
                                                              real_cache: Path) -> None:
    project = miles_shaped(tmp_path / "miles", MILES_CPU_CI + "xgrammar==0.2.1\n")
    _, found, _ = check_in_root(project, monkeypatch, capsys, "--new", "0.5.16", "--select", "SGC705")
    assert found == []


def slime_shaped(root: Path, flashinfer: str) -> Path:
    return write_tree(root, {
        "setup.py": 'from setuptools import setup\n\nsetup(\n    name="app",\n    install_requires=[],\n'
                    f'    extras_require={{"serving": ["flashinfer_python=={flashinfer}"]}},\n)\n',
        "docker/Dockerfile": "ARG SGLANG_IMAGE_TAG=v0.5.15.post1-cu129\nFROM slimerl/sglang:${SGLANG_IMAGE_TAG} AS sglang\n",
        "build_conda.sh": 'export SGLANG_VERSION="v0.5.13"\n',
        "app/engine.py": "from sglang.srt.server_args import ServerArgs\n",
    })


def test_slime_shaped_root_bump_to_0516_finds_the_flashinfer_pin_it_mirrors(tmp_path: Path, monkeypatch, capsys,
                                                                           real_cache: Path) -> None:
    project = slime_shaped(tmp_path / "slime", "0.6.12")
    status, found, err = check_in_root(project, monkeypatch, capsys, "--new", "0.5.16")
    assert status == 1
    assert "note: --old 0.5.15.post1 from docker/Dockerfile:1" in err and "`slimerl/sglang`" in err
    (mirrored,) = [d for d in found if d["code"] == "SGC701"]
    assert mirrored["path"] == "setup.py" and "0.6.12 -> 0.6.14" in mirrored["message"]
    stale = {(d["path"], d["line"]) for d in found if d["code"] == "SGC702"}
    assert stale == {("docker/Dockerfile", 1), ("build_conda.sh", 1)}


def test_slime_shaped_control_on_the_new_pin_is_silent(tmp_path: Path, monkeypatch, capsys, real_cache: Path) -> None:
    project = slime_shaped(tmp_path / "slime", "0.6.14")
    _, found, _ = check_in_root(project, monkeypatch, capsys, "--new", "0.5.16", "--select", "SGC701")
    assert found == []
