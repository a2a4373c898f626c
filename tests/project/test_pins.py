"""The default `--old`: an exact sglang==X, else the SGLang image the project builds on, in the
shapes slime, miles and Relax keep it (trees written here, in their shape)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_contracts.cli import main
from sglang_contracts.project.pins import find_sglang_pin
from sglang_contracts.project.stack import declared_requirements
from tests.helpers import upstream_tree, write_tree

MILES_DOCKERFILE = """\
# Build via docker/build.py.
ARG SGLANG_IMAGE_TAG=v0.1.6
FROM lmsysorg/sglang:${SGLANG_IMAGE_TAG} AS sglang

ARG SGLANG_BRANCH=sglang-app
ARG SGLANG_COMMIT=""
RUN cd /sgl-workspace/sglang && \\
    git fetch origin ${SGLANG_BRANCH}
"""
MILES_BUILD = """\
VARIANTS = {
    "cu12-x86": {"build_args": {"ENABLE_CUDA_13": "0", "SGLANG_IMAGE_TAG": "v0.1.4-cu129"}},
    "rocm": {"dockerfile": "docker/Dockerfile.rocm", "build_args": {"SGLANG_IMAGE_TAG": "v0.1.2-rocm700-mi30x"}},
}
"""
MILES_SETUP = """\
from setuptools import setup

def _fetch_requirements(path):
    with open(path) as fd:
        return [r.strip() for r in fd.readlines()]

setup(name="app", install_requires=_fetch_requirements("requirements.txt"), extras_require={"fsdp": ["torch>=2.0"]})
"""


def miles_shaped(root: Path) -> Path:
    return write_tree(root, {
        "setup.py": MILES_SETUP, "requirements.txt": "ray[default]\n",
        "docker/Dockerfile": MILES_DOCKERFILE, "docker/build.py": MILES_BUILD,
        "docker/Dockerfile.rocm": "ARG SGLANG_IMAGE_REPO=lmsysorg/sglang\nARG SGLANG_IMAGE_TAG=v0.1.2-rocm700-mi35x\n"
                                  "FROM ${SGLANG_IMAGE_REPO}:${SGLANG_IMAGE_TAG} AS sglang\n",
    })


def test_miles_shape_takes_the_main_dockerfile_over_its_variants_and_says_so(tmp_path: Path) -> None:
    pin = find_sglang_pin(miles_shaped(tmp_path))
    assert (pin.version, pin.where, pin.line) == ("0.1.6", "docker/Dockerfile", 2)
    assert pin.written.startswith("ARG SGLANG_IMAGE_TAG=v0.1.6")
    assert {(o.path, o.version) for o in pin.others} == {
        ("docker/Dockerfile.rocm", "0.1.2"), ("docker/build.py", "0.1.4"), ("docker/build.py", "0.1.2")}
    taken, fork = pin.notes(defaulted=True, from_clone=False)
    assert "the main Dockerfile" in taken and "docker/Dockerfile.rocm:2 names 0.1.2" in taken
    assert "docker/build.py:2 names 0.1.4" in taken
    assert "`sglang-app`" in fork and "--sglang-repo CLONE --old REF --new REF" in fork
    assert pin.notes(defaulted=False, from_clone=True) == []  # --old given, releases from a clone


def test_slime_shape_follows_the_arg_into_a_fork_image(tmp_path: Path) -> None:
    write_tree(tmp_path, {"docker/Dockerfile": "ARG SGLANG_IMAGE_TAG=v0.1.5.post1-cu129\n"
                                               "FROM slimerl/sglang:${SGLANG_IMAGE_TAG} AS sglang\n",
                          "docker/Dockerfile.gb10": "FROM lmsysorg/sglang:nightly-dev-20260103-24c91001\n",
                          "setup.py": "from setuptools import setup\nsetup(name='app', extras_require={})\n"})
    pin = find_sglang_pin(tmp_path)
    assert (pin.version, pin.where, pin.line, pin.reason) == ("0.1.5.post1", "docker/Dockerfile", 1,
                                                              "the image the main Dockerfile builds on")
    assert "`slimerl/sglang`" in pin.fork_note


@pytest.mark.parametrize(("dockerfile", "version"), [
    ("ARG BASE_IMAGE=lmsysorg/sglang:v0.1.3-cu129\nFROM ${BASE_IMAGE}\n", "0.1.3"),  # Relax
    ("FROM --platform=linux/amd64 lmsysorg/sglang:v0.1.1 AS base\nFROM base\n", "0.1.1"),
    ("FROM lmsysorg/sglang:${TAG:-v0.1.8-cu130}\n", "0.1.8"),
    ("ARG TAG\nFROM lmsysorg/sglang:${TAG}\n", None),  # no default: nothing to take
    ("FROM lmsysorg/sglang:latest\n", None),
    ("FROM python:3.11\nRUN pip install sglang\n", None),
    # SGLang's router and gateway images, tagged on their own (campaign 9, R15)
    ("FROM lmsysorg/sglang-router:v1.0.0 AS router\n", None),
    ("FROM lmsysorg/sgl-model-gateway:v0.2.1\n", None),
    ("FROM lmsysorg/sglang-router:v1.0.0 AS router\nFROM lmsysorg/sglang:v0.1.4\n", "0.1.4"),
])
def test_image_shapes(tmp_path: Path, dockerfile: str, version: str | None) -> None:
    write_tree(tmp_path, {"Dockerfile": dockerfile})
    pin = find_sglang_pin(tmp_path)
    assert (pin.version if pin else None) == version
    if pin:
        assert pin.fork_note is None  # stock images, no fork branch


def test_exact_requirement_wins_over_the_image_and_names_the_disagreement(tmp_path: Path) -> None:
    write_tree(tmp_path, {"setup.py": 'from setuptools import setup\nSERVE = ["sglang[all]==0.1.7"]\n'
                                      'setup(name="app", extras_require={"serve": SERVE})\n',
                          "Dockerfile": "FROM lmsysorg/sglang:v0.1.6\n"})
    pin = find_sglang_pin(tmp_path)
    assert (pin.version, pin.where, pin.line, pin.written) == ("0.1.7", "setup.py", 2, "sglang[all]==0.1.7")
    assert "the exact SGLang requirement over Dockerfile:1 names 0.1.6" in pin.reason


def test_setup_py_is_read_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write_tree(tmp_path, {"setup.py": f"open({str(marker)!r}, 'w').close()\nimport setuptools\n"
                                      "BASE = ['openai==2.6.1']\n"
                                      "setuptools.setup(install_requires=BASE + ['pyzmq>=25'], "
                                      "extras_require={'x': ['torch==2.11.0'], 'y': compute()})\n"})
    found = {(d.requirement.name, d.line, d.col) for d in declared_requirements(tmp_path)}
    assert found == {("openai", 3, 10), ("pyzmq", 4, 44), ("torch", 4, 80)}
    assert not marker.exists()


def test_check_without_a_pin_says_where_it_looked(tmp_path: Path, capsys) -> None:
    write_tree(tmp_path, {"setup.py": "", "Dockerfile": "FROM lmsysorg/sglang:latest\n"})
    assert main(["check", str(tmp_path), "--new", "0.1.0"]) == 2
    assert "an SGLang image tag in a Dockerfile or build script" in capsys.readouterr().err


def test_configured_old_overrides_the_image_and_the_fork_note_reaches_stderr_and_markdown(
        tmp_path: Path, capsys, monkeypatch) -> None:
    project = miles_shaped(tmp_path / "project")
    old = upstream_tree(tmp_path / "old", {"sglang/srt/utils.py": ""}, "0.1.6")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/utils.py": ""}, "0.1.7")
    (project / "pyproject.toml").write_text(f'[tool.sglang-contracts]\nold = "{old}"\nnew = "{new}"\n')
    monkeypatch.chdir(project)
    status = main(["check", "--format", "markdown", "--no-cache"])
    captured = capsys.readouterr()
    assert status == 1  # SGC702: the Dockerfile still names 0.1.6
    notes = [line for line in captured.err.splitlines() if line.startswith("sglang-contracts: note:")]
    assert len(notes) == 1 and "`sglang-app`" in notes[0]  # `old` given: no word on which place was taken
    assert "| `sglang` (`docker/Dockerfile`) | `0.1.6` |" in captured.out
    assert "> **Note:**" in captured.out and "sglang-app" in captured.out
    assert "Move the SGLang image" in captured.out


def test_the_main_requirement_file_wins_over_a_variant_and_the_note_says_which(tmp_path: Path) -> None:
    """`requirements-rocm.txt` sorts before `requirements.txt`; the variant's older pin was
    taken with nothing said."""
    write_tree(tmp_path, {"requirements-rocm.txt": "sglang==0.1.4\n", "requirements.txt": "torch\nsglang==0.1.5\n"})
    pin = find_sglang_pin(tmp_path)
    assert (pin.version, pin.where, pin.line) == ("0.1.5", "requirements.txt", 2)
    (taken,) = pin.notes(defaulted=True, from_clone=False)
    assert taken.startswith("--old 0.1.5 from requirements.txt:2 (`sglang==0.1.5`): taken as the exact SGLang "
                            "requirement of the main requirement file over requirements-rocm.txt:1 names 0.1.4")


def test_variants_alone_agreeing_need_no_note(tmp_path: Path) -> None:
    write_tree(tmp_path, {"requirements-rocm.txt": "sglang==0.1.4\n", "requirements/cuda.txt": "sglang==0.1.4\n"})
    pin = find_sglang_pin(tmp_path)
    assert (pin.version, pin.where, pin.reason) == ("0.1.4", "requirements-rocm.txt", "")


def test_a_setup_py_chain_deeper_than_recursion_still_gives_its_pins(tmp_path) -> None:
    """`r0 = r1 + [...]` over 5,000 names raised RecursionError and stopped a run that had
    sglang's pin in requirements.txt (third campaign D11): the chain is followed, in order."""
    chain = "".join(f'r{i} = r{i + 1} + ["pkg{i}==1.0"]\n' for i in range(5000))
    write_tree(tmp_path, {"setup.py": f'from setuptools import setup\n{chain}r5000 = ["sglang==1.0.0"]\n'
                                      "setup(name='p', install_requires=r0)\n",
                          "requirements.txt": "sglang==1.0.0\n"})
    found = [(d.path, str(d.requirement)) for d in declared_requirements(tmp_path)]
    assert found[:2] == [("setup.py", "sglang==1.0.0"), ("setup.py", "pkg4999==1.0")]
    assert len(found) == 5002 and found[-1] == ("requirements.txt", "sglang==1.0.0")
    assert find_sglang_pin(tmp_path).version == "1.0.0"


def test_a_pin_in_an_optional_extra_says_which_extra(tmp_path: Path) -> None:
    """RLinf's pyproject pins sglang only in its `agentic-sglang` extra (its environments install
    other releases through a script): the note names the file, the line and the extra."""
    write_tree(tmp_path, {"pyproject.toml": """[project]
name = "app"
dependencies = ["torch"]

[project.optional-dependencies]
agentic-vllm = ["vllm==0.8.5"]
agentic-sglang = [
    "sglang[all]==0.4.6.post5",
]
"""})
    pin = find_sglang_pin(tmp_path)
    assert (pin.version, pin.where, pin.line) == ("0.4.6.post5", "pyproject.toml", 8)
    (taken,) = pin.notes(defaulted=True, from_clone=False)
    assert taken.startswith("--old 0.4.6.post5 from pyproject.toml:8 (`sglang[all]==0.4.6.post5`): taken as the exact "
                            "SGLang requirement of the optional extra `agentic-sglang` (the main dependencies pin no SGLang)")
    # a pin among the main dependencies needs no note, whatever an extra repeats
    write_tree(tmp_path, {"pyproject.toml": """[project]
name = "app"
dependencies = ["sglang[all]==0.4.6.post5"]

[project.optional-dependencies]
agentic-sglang = ["sglang[all]==0.4.6.post5"]
"""})
    assert find_sglang_pin(tmp_path).notes(defaulted=True, from_clone=False) == []


def test_a_fix_of_the_pin_leaves_the_router_image_s_tag(tmp_path: Path) -> None:
    """The engine's image moves with the bump; the router's, tagged on its own, stays."""
    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": "x = 1\n"}, "1.0.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": "x = 1\n"}, "1.0.2")
    dockerfile = "FROM lmsysorg/sglang-router:v1.0.0 AS router\nFROM lmsysorg/sglang:v1.0.0\n"
    project = write_tree(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n', "Dockerfile": dockerfile,
                                          "m.py": "from sglang.srt.a import x\n"})
    main(["fix", str(project), "--old", str(old), "--new", str(new), "--select", "SGC702"])
    assert (project / "Dockerfile").read_text() == dockerfile.replace("sglang:v1.0.0", "sglang:v1.0.2")
