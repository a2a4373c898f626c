"""Stack facts and checks in detail: requirement agreement, removal conditions, pins at a tag, noqa in any file."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from tests.helpers import upstream_tree, write_tree
from sglang_contracts.contracts.stack import agrees
from sglang_contracts.project.installs import file_installs, installed_requirements
from sglang_contracts.project.stack import declared_requirements, removal_requirement
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.sources.directory import DirectoryTree
from sglang_contracts.upstream.pins import release_pins


@pytest.mark.parametrize("project, upstream, marked, expected", [
    ("==5.19.0", "==5.19.0", False, True),
    ("==5.19.0", "==5.20.0", False, False),
    (">=5.0", "==5.20.0", False, True),  # the project admits SGLang's pin
    ("<5.20", "==5.20.0", False, False),
    ("==2.14.1", ">=2.15", False, False),  # an exact project pin SGLang's range excludes
    (">=0.14.1,<0.15", "<0.15,>=0.14.1", True, True),  # a marked range: the same range, any order
    (">=0.14.1,<0.15", "<0.16,>=0.15", True, False),
    (">=25.0", ">=25.1.2", False, None),  # two ranges, unmarked: not the project's mirror
])
def test_agreement(project, upstream, marked, expected) -> None:
    assert agrees(SpecifierSet(project), SpecifierSet(upstream), marked) is expected


@pytest.mark.parametrize("text, expected", [
    ("transformers>=5.20", "transformers>=5.20"),
    ("`sglang>=0.5.23` (upstream fixed it).", "sglang>=0.5.23"),
    ("sglang>=0.5.23.", "sglang>=0.5.23"),
    ('transformers>=5.20"""', "transformers>=5.20"),
    ("torch>=2.15 and torchaudio>=2.15 ship together", "torch>=2.15"),
    ("when upstream fixes it", None),
])
def test_removal_conditions_are_requirements(text, expected) -> None:
    requirement = removal_requirement(text)
    assert (str(requirement) if requirement else None) == expected


def test_declared_requirements_with_positions_and_comments(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pyproject.toml": '[project]\nname = "x"\ndependencies = [\n  "torch==2.9.1",  # Match the pinned sglang stack\n]\n'
                          '[project.optional-dependencies]\naudio = ["soundfile==0.13.1"]\n'
                          '[tool.uv]\noverride-dependencies = ["protobuf>=6"]\n',
        "requirements/ci.txt": "-r base.txt\nopenai==2.6.1  # sglang pin\n",
    })
    found = {(d.path, d.line, d.col, d.name, d.matches_stack) for d in declared_requirements(tmp_path)}
    assert found == {("pyproject.toml", 4, 4, "torch", True), ("pyproject.toml", 7, 11, "soundfile", False),
                     ("pyproject.toml", 9, 27, "protobuf", False), ("requirements/ci.txt", 2, 1, "openai", True)}


@pytest.mark.parametrize("sglang_in, apart", [
    ("serve", {"vllm", "pytest"}),  # the extra and the group uv keeps apart from SGLang's extra
    ("dependencies", set()),  # SGLang in every environment: any extra may join it
    (None, set()),  # no SGLang at all (a base image's): nothing is known apart
])
def test_extras_that_uv_keeps_apart_from_sglang_are_not_declared(tmp_path: Path, sglang_in, apart) -> None:
    base = '"sglang==0.5.4", ' if sglang_in == "dependencies" else ""
    serve = '"sglang==0.5.4", ' if sglang_in == "serve" else ""
    write_tree(tmp_path, {"pyproject.toml": (
        f'[project]\nname = "x"\ndependencies = [{base}"numpy"]\n'
        f'[project.optional-dependencies]\nserve = [{serve}"torch==2.8.0"]\nrollout = ["vllm==0.8.5"]\n'
        'sim = ["mujoco==3.0"]\n[dependency-groups]\ndev = ["pytest==8.0"]\n'
        '[tool.uv]\nconflicts = [[{ extra = "serve" }, { extra = "rollout" }], [{ extra = "serve" }, { group = "dev" }]]\n')})
    names = {d.name for d in declared_requirements(tmp_path)}
    assert names == {"sglang", "numpy", "torch", "vllm", "mujoco", "pytest"} - apart - ({"sglang"} if sglang_in is None else set())


def test_pins_from_a_source_pyproject_keep_extras_as_markers(tmp_path: Path) -> None:
    write_tree(tmp_path, {"pyproject.toml": '[project]\nname = "sglang"\ndependencies = ["torch==2.9.1"]\n'
                                            '[project.optional-dependencies]\ntest = ["pytest==8.0.0; python_version >= \'3.8\'"]\n'})
    pins = release_pins(DirectoryTree(tmp_path))
    assert str(pins.exact_pin("torch")) == "2.9.1"
    assert pins.exact_pin("pytest") is None and str(pins.exact_pin("pytest", frozenset({"test"}))) == "8.0.0"
    assert release_pins(DirectoryTree(tmp_path / "nothing")) is None


def test_noqa_works_in_non_python_files_and_patch_paths_do_not_break_it(tmp_path: Path) -> None:
    old = upstream_tree(tmp_path / "old", {"sglang/srt/utils.py": "def f():\n    return 1\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/utils.py": "def f():\n    return 2\n"}, "0.2.0")
    project = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "Dockerfile": "FROM lmsysorg/sglang:v0.1.0  # noqa: SGC702\nFROM lmsysorg/sglang:v0.1.0 AS build\n",
        "fix.patch": "--- a/python/sglang/srt/utils.py\n+++ b/python/sglang/srt/utils.py\n"
                     "@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 3  # noqa\n",
    })
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    assert [f"{d.path}:{d.line}: {d.code}" for d in result.diagnostics] == ["Dockerfile:2: SGC702", "fix.patch:3: SGC901"]


PROSE_SOURCES = [
    'x = "a # not a comment"  # a comment\n',
    'def f():\n    """Doc # inside.\n\n    sglang 0.5.1 # still the docstring\n    """\n    y = (1,  # in a bracket\n         2)\n',
    's = """\n# inside a string\n""" + """two\n"""  # after two strings\n',
    'v = f"""{x}\n# in an f-string {y!r}\n"""\nclass A:\n    \'doc\'  # a comment after it\n',
    'call(\n    "one"\n    "two",  # implicit concatenation\n    # alone in a bracket\n)\n',
    'if x:\n        pass  # indented\n# dedented\n',
    'x = 1 + \\\n    2  # a joined line\n',
    'é = "ü"  # non-ASCII before a comment\n"""module doc later"""\n',
]


@pytest.mark.parametrize("text", PROSE_SOURCES)
def test_the_prose_of_a_file_read_line_by_line_is_that_of_its_whole_tokenization(text) -> None:
    import io
    import tokenize

    from sglang_contracts.infra.pysource import parse_quietly
    from sglang_contracts.project.stack import _docstring_starts, _prose_of_tokens, _prose_pieces

    docstrings = _docstring_starts(parse_quietly(text))
    whole = _prose_of_tokens(tokenize.generate_tokens(io.StringIO(text).readline), docstrings)
    assert whole and _prose_pieces(text) == whole



SERVE_AND_SIM = """#!/bin/bash
a(){ pip install "sglang[all]==${SGLANG_VERSION}"; pip install torch==2.8.0; }
function b {
    pip install torch==2.8.0  # `}` and `esac` in a comment
}
shared() { pip install numpy==1.26.4; }
notes() {
    python - <<'END'
d = {"k": 1}
END
    pip install notes==1.0
}
case "$1" in
    serve) a; shared; notes ;;
    sim)
        b
        shared
        ;;
esac
pip install top==1.0
"""


@pytest.mark.parametrize("script, expected", [
    # a (installs SGLang), what a branch that runs `a` runs, and the script's top: beside SGLang;
    # b, run only from a branch that installs none: another environment
    (SERVE_AND_SIM, {(2, "torch"), (6, "numpy"), (11, "notes"), (20, "top")}),
    # nothing installs SGLang here (a base image brings it): every line, as before
    (SERVE_AND_SIM.replace('pip install "sglang[all]==${SGLANG_VERSION}";', "true;"),
     {(2, "torch"), (4, "torch"), (6, "numpy"), (11, "notes"), (20, "top")}),
    # installed at the top, SGLang is in every environment
    (SERVE_AND_SIM + "pip install sglang\n",
     {(2, "torch"), (4, "torch"), (6, "numpy"), (11, "notes"), (20, "top"), (21, "sglang")}),
])
def test_script_installs_beside_sglang_only(script, expected) -> None:
    assert {(d.line, d.name) for d in file_installs("install.sh", script, False)} == expected


def test_uv_sync_of_the_extra_that_brings_sglang_installs_it(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pyproject.toml": '[project]\nname = "x"\n[project.optional-dependencies]\nserve = ["sglang"]\nsim = ["numpy"]\n',
        "install.sh": ("serve_env() { uv sync --extra=serve; pip install torch==2.8.0; }\n"
                       "sim_env() { uv sync --extra sim; pip install torch==2.7.0; }\n"
                       'case "$T" in\n  serve) serve_env ;;\n  sim) sim_env ;;\nesac\n'),
    })
    assert {str(d.requirement) for d in installed_requirements(tmp_path)} == {"torch==2.8.0"}


@pytest.mark.parametrize("piece", ["{ ", "f() { ", "case x in\n a) ", ";;\n", "}\n", "esac\n", "<<E\n"])
def test_script_structure_is_read_in_linear_time(piece) -> None:
    timings = []
    gc.collect()
    gc.disable()  # a full collection of the test process's objects (0.5 s and more late in a suite) is not the reader's
    try:
        for size in (1 << 15, 1 << 17):
            text = "f() { pip install sglang; }\n" + (piece * (size // len(piece))) + "\npip install torch==1.0\n"
            start = time.process_time()  # this process's CPU: another process's load does not move it
            file_installs("install.sh", text, False)
            timings.append(time.process_time() - start)
    finally:
        gc.enable()
    assert timings[1] < 8 * timings[0] + 0.5  # four times the text: linear, with room for noise
