"""Fuzzing (issue 11): whatever a project file holds, a run yields findings or an SGC000, never an
internal error (an exception here, where SGLANG_CONTRACTS_DEBUG=1, or an SGC001) or a hang, and
the findings of the other files do not change.

Each example is one full check of a small project in sglang-omni's shape (tests/robustness/fuzz_inputs.py)
against two small SGLang-shaped releases, with one file replaced by a fuzzed one: a Python
program Hypothesmith generates from the grammar, or a seed file (Python or stack: pyproject.toml,
requirements.txt, a Dockerfile, a workflow, a .patch against sglang/) mutated by truncation,
deleted and duplicated lines, random bytes, invalid UTF-8, NUL, deep nesting, odd coding cookies.
Every result is also rendered by every reporter. A control file whose findings are known must be
reported identically beside the fuzzed file.

The seed is fixed and the examples few, so CI stays within a couple of minutes; a campaign:

    SGLANG_CONTRACTS_FUZZ_EXAMPLES=5000 pytest tests/robustness/test_fuzz.py -p no:cacheprovider

(a campaign draws a new seed each run, which a failure prints; SGLANG_CONTRACTS_FUZZ_SEED=N
replays one).
"""

from __future__ import annotations

import faulthandler
import io
import keyword
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
import traceback
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import hypothesmith
import pytest
from hypothesis import HealthCheck, example, given, seed, settings
from hypothesis import strategies as st

from sglang_contracts.reporters import REPORTERS
from sglang_contracts.check.runner import CheckOptions, run_check
from tests.robustness import fuzz_inputs as inputs
from tests.helpers import checkout_env
from tests.helpers import write_tree as write

CAMPAIGN = int(os.environ.get("SGLANG_CONTRACTS_FUZZ_EXAMPLES", "0"))
# Far above a check of this project (a tenth of a second), far below a hang's patience.
TIMEOUT = float(os.environ.get("SGLANG_CONTRACTS_FUZZ_TIMEOUT", "60"))


def fuzz_settings(examples: int, campaign_most: int | None = None):
    """A fixed seed and `examples` examples in CI; the campaign's count otherwise (at most
    `campaign_most`). No per-example deadline (a loaded 2-core machine varies): `guarded` bounds
    the wall clock instead."""
    return settings(
        max_examples=min(CAMPAIGN, campaign_most or CAMPAIGN) if CAMPAIGN else examples,
        deadline=None,
        derandomize=not CAMPAIGN and "SGLANG_CONTRACTS_FUZZ_SEED" not in os.environ,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                               HealthCheck.function_scoped_fixture, HealthCheck.large_base_example],
    )


def fuzz_seed(test):
    return seed(int(os.environ["SGLANG_CONTRACTS_FUZZ_SEED"]))(test) if "SGLANG_CONTRACTS_FUZZ_SEED" in os.environ \
        else test


# -- the releases, the project and its known findings -------------------------------------------


CONTROL_PATHS = ("control/core.py", "deploy/control.yml")
CONTROLS = {"control/__init__.py": "", "control/core.py": inputs.CONTROL,
            "deploy/control.yml": "image: lmsysorg/sglang:v0.5.16\n"}
PROJECT = {"omni/__init__.py": "", **inputs.SEEDS, **inputs.STACK_SEEDS, **CONTROLS}
PYTHON_SEEDS = sorted(inputs.SEEDS)
STACK_SEEDS = sorted(inputs.STACK_SEEDS)


class Fuzz:
    """The releases, written once per module, and a fresh project per example."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.old = write(folder / "old", inputs.OLD_RELEASE)
        self.new = write(folder / "new", inputs.NEW_RELEASE)
        self.slowest = 0.0
        self.examples = 0
        self.known = self.controls(self.check({})[0])
        assert [line.split(" ", 2)[1] for line in self.known] == ["SGC102", "SGC321", "SGC702"], self.known

    def options(self) -> CheckOptions:
        return CheckOptions(old=str(self.old), new=str(self.new), use_cache=False, workers=1)

    @contextmanager
    def project(self, files: dict[str, str | bytes]) -> Iterator[Path]:
        root = Path(tempfile.mkdtemp(prefix="p", dir=self.folder))
        try:
            yield write(root, {**PROJECT, **files})
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def check(self, files: dict[str, str | bytes]) -> tuple[list[str], list[str]]:
        """(findings as `path:line:col: CODE message`, each reporter's output) of a run of the
        project with `files` replacing or beside its own, within the time bound."""
        with self.project(files) as root, guarded(TIMEOUT, files):
            start = time.monotonic()
            result = run_check([root], self.options())
            rendered = []
            for name, reporter in sorted(REPORTERS.items()):
                out = io.StringIO()
                reporter(result, out, False)
                rendered.append(out.getvalue())
            elapsed = time.monotonic() - start
        self.slowest, self.examples = max(self.slowest, elapsed), self.examples + 1
        assert elapsed < TIMEOUT, f"{elapsed:.1f} s for one check"
        return [f"{d.path}:{d.line}:{d.col}: {d.code} {d.message}" for d in result.diagnostics], rendered

    @staticmethod
    def controls(lines: list[str]) -> list[str]:
        return [line for line in lines if line.startswith(tuple(f"{path}:" for path in CONTROL_PATHS))]

    def holds(self, files: dict[str, str | bytes]) -> list[str]:
        """The invariant: no internal error, and the control files reported as they always are.
        In a campaign with SGLANG_CONTRACTS_FUZZ_LOG=FOLDER, a failure is written down there
        (one file per distinct failure) and the campaign goes on."""
        with collected(files):
            return self._holds(files)
        return []

    def _holds(self, files: dict[str, str | bytes]) -> list[str]:
        lines, _ = self.check(files)
        internal = [line for line in lines if " SGC001 " in line]
        assert not internal, internal
        assert self.controls(lines) == self.known
        return lines


class Hang(Exception):
    pass


LOG = os.environ.get("SGLANG_CONTRACTS_FUZZ_LOG")


@contextmanager
def collected(files: dict) -> Iterator[None]:
    """In a campaign, a failure is written down and the campaign goes on."""
    if not LOG:
        yield
        return
    try:
        yield
    except Exception as error:  # noqa: BLE001  (a campaign collects every failure)
        log_failure(error, files)


def log_failure(error: BaseException, files: dict) -> None:
    """One file per distinct failure (its type and the innermost frame of this tool), holding
    the smallest input met so far and its traceback."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if "sglang_contracts" in frame.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "tests"
    if isinstance(error, AssertionError):
        where = "control" if "==" in str(error).splitlines()[0] else "sgc001"
    name = f"{type(error).__name__}-{where}".replace(":", "-")
    folder = Path(LOG)
    folder.mkdir(parents=True, exist_ok=True)
    size = sum(len(content) for content in files.values())
    record = folder / f"{name}.txt"
    if record.exists() and int(record.read_text().split("\n", 1)[0]) <= size:
        (folder / f"{name}.count").open("a").write("x")
        return
    text = "".join(traceback.format_exception(error))[-6000:]
    record.write_text(f"{size}\n{files!r}\n\n{text}")
    (folder / f"{name}.count").open("a").write("x")


@contextmanager
def guarded(limit: float, files: dict) -> Iterator[None]:
    """A run that takes over `limit` seconds is a failure, not a stuck test: SIGALRM raises in the
    main thread; should that not end it (a loop in another thread), faulthandler prints every
    thread's stack and ends the process, after writing down the input that hung."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def alarm(signum, frame):
        raise Hang(f"no result after {limit:.0f} s")

    Path(tempfile.gettempdir(), f"sglang-contracts-fuzz-{os.getpid()}.txt").write_text(repr(files))
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    faulthandler.dump_traceback_later(limit * 2, exit=True)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory) -> Iterator[Fuzz]:
    runs = Fuzz(tmp_path_factory.mktemp("fuzz"))
    yield runs
    print(f"\n{runs.examples} checks, the slowest {runs.slowest:.2f} s")


# -- mutations -----------------------------------------------------------------------------------

CODECS = ["idna", "punycode", "undefined", "rot13", "utf-16", "utf-32", "utf-16-be", "latin-1", "cp1252",
          "utf-8-sig", "ascii", "uu_codec", "zlib_codec", "base64", "hex", "bogus-codec", "utf_8", "UTF8",
          "euc-jp", "cp037", "mbcs", "utf-7", "raw_unicode_escape", "unicode_escape"]
ODD_BYTES = [b"\x00", b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\r\n", b"\x0c",
             b"\t", b"\x1a", b"\\", b"\xe2\x80\xa8", b"\xe2\x80\xae", b"\xf0\x9f\x90\x8d", b"\xc0\xaf", b"\x85",
             b'"""', b"'", b"#", b"@@", b"\n+", b"\n-", b"\n ", b"${", b"}", b"[", b"]", b"=", b":", b"==",
             b"sglang", b"sglang==", b"0.5.16", b"v0.5.17", b"\x00sglang/"]


def _nesting(depth: int, kind: int) -> bytes:
    openers = [(b"(", b")"), (b"[", b"]"), (b"{", b"}"), (b"not ", b""), (b"-", b""), (b"a.", b"b"),
               (b"f(", b")"), (b"lambda: ", b"0"), (b"x if ", b" else y"), (b"- ", b""), (b"[[", b"]]")]
    if kind == len(openers):  # nested blocks
        return b"".join(b" " * i + b"if x:\n" for i in range(depth)) + b" " * depth + b"pass\n"
    left, right = openers[kind]
    return left * depth + b"x" + right * depth + b"\n"


@st.composite
def mutated(draw, seeds: dict[str, str]) -> tuple[str, bytes]:
    """(path, bytes): a seed file after one to four mutations."""
    path = draw(st.sampled_from(sorted(seeds)))
    data = seeds[path].encode()
    for _ in range(draw(st.integers(1, 4))):
        lines = data.splitlines(keepends=True) or [b""]
        at = draw(st.integers(0, len(lines) - 1))
        offset = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["truncate", "delete", "duplicate", "swap", "splice", "bytes", "odd",
                                    "overwrite", "nest", "cookie", "bom", "newlines", "indent", "long", "repeat"]))
        if how == "truncate":
            data = data[:offset]
        elif how == "delete":
            count = draw(st.integers(1, 5))
            data = b"".join(lines[:at] + lines[at + count:])
        elif how == "duplicate":
            data = b"".join(lines[:at + 1] + [lines[at]] * draw(st.integers(1, 3)) + lines[at + 1:])
        elif how == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
            data = b"".join(lines)
        elif how == "splice":  # a line from another seed
            donor_lines = seeds[draw(st.sampled_from(sorted(seeds)))].encode().splitlines(keepends=True)
            data = b"".join(lines[:at] + [draw(st.sampled_from(donor_lines))] + lines[at:])
        elif how == "bytes":
            data = data[:offset] + draw(st.binary(min_size=1, max_size=16)) + data[offset:]
        elif how == "odd":
            data = data[:offset] + draw(st.sampled_from(ODD_BYTES)) * draw(st.integers(1, 3)) + data[offset:]
        elif how == "overwrite":
            junk = draw(st.binary(min_size=1, max_size=8))
            data = data[:offset] + junk + data[offset + len(junk):]
        elif how == "nest":
            nest = _nesting(draw(st.sampled_from([10, 50, 120, 200, 400, 1000, 3000])), draw(st.integers(0, 11)))
            data = b"".join(lines[:at]) + nest + b"".join(lines[at:])
        elif how == "cookie":
            cookie = f"# -*- coding: {draw(st.sampled_from(CODECS))} -*-\n".encode()
            data = (lines[0] + cookie + b"".join(lines[1:])) if draw(st.booleans()) else cookie + data
        elif how == "bom":
            data = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00"])) + data
        elif how == "newlines":
            data = data.replace(b"\n", draw(st.sampled_from([b"\r\n", b"\r", b"\x0c\n", b"\n\n", b"\x85"])))
        elif how == "indent":
            data = b"".join(lines[:at]) + b"".join(draw(st.sampled_from([b" ", b"\t", b"    \t"])) + line
                                                   for line in lines[at:at + 4]) + b"".join(lines[at + 4:])
        elif how == "long":
            data = data[:offset] + b"x" * draw(st.sampled_from([1000, 100_000])) + data[offset:]
        elif how == "repeat":  # a piece of the file many times over: slow patterns show
            piece = data[offset:offset + draw(st.integers(1, 12))] or b" "
            data = data[:offset] + piece * draw(st.sampled_from([100, 5000, 30_000])) + data[offset:]
    return path, data


# Names generated programs are made to use: those of the releases and of sglang-omni's code.
NAMES = ["self", "cls", "Scheduler", "ServerArgs", "server_args", "Req", "req", "ScheduleBatch", "ModelRunner",
         "RMSNorm", "forward_cuda", "forward_npu", "mock", "patch", "monkeypatch", "getattr", "setattr",
         "super", "__getattr__", "__init__", "sglang", "srt", "utils", "is_cuda", "waiting_queue", "model_runner",
         "get_num_allocatable_reqs", "process_batch_result", "enable_ep_moe", "extend_range", "init_cuda_graphs",
         "types", "MethodType", "name", "attr", "x", "y"]
HEADER = """\
from unittest import mock
import types
import sglang.srt.utils as utils
from sglang.srt.managers.scheduler import Scheduler
from sglang.srt.managers.schedule_batch import Req
from sglang.srt.model_executor.model_runner import ModelRunner
from sglang.srt.server_args import ServerArgs
from sglang.srt.layers.layernorm import RMSNorm
"""


def sglang_flavoured(code: str, salt: int) -> str:
    """A generated program whose names are drawn from NAMES (consistently: a name stays one name),
    after imports of SGLang, so that the analysis has something to follow in it."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return HEADER + code
    lines = code.splitlines(keepends=True)
    spans = [(t.start, t.end) for t in tokens if t.type == tokenize.NAME and t.start[0] == t.end[0]
             and not keyword.iskeyword(t.string) and not keyword.issoftkeyword(t.string)]
    for (row, start), (_, end) in reversed(spans):
        line = lines[row - 1]
        name = line[start:end]
        lines[row - 1] = line[:start] + NAMES[zlib.crc32(f"{salt}:{name}".encode()) % len(NAMES)] + line[end:]
    return HEADER + "".join(lines)


# -- the tests ------------------------------------------------------------------------------------


# Hypothesmith compiles what it generates: the compiler's SyntaxWarnings are its, not this tool's
# (which parses quietly, as "<unknown>").
GENERATOR_WARNINGS = pytest.mark.filterwarnings("ignore:.*:SyntaxWarning")


# Built when the test first draws (st.deferred draws the same examples): Hypothesmith's grammar
# takes 1.5 s to build, which every process that collects this module paid, the suite's two
# workers included, though only one runs the test.
@GENERATOR_WARNINGS
@fuzz_seed
@fuzz_settings(examples=40)
@given(code=st.deferred(hypothesmith.from_grammar), salt=st.integers(0, 1 << 16), where=st.sampled_from(PYTHON_SEEDS))
def test_generated_programs(fuzz, code, salt, where) -> None:
    fuzz.holds({where: sglang_flavoured(code, salt)})
    fuzz.holds({"omni/generated.py": HEADER + code})


@GENERATOR_WARNINGS
@fuzz_seed
@fuzz_settings(examples=20)
@given(code=hypothesmith.from_node(), salt=st.integers(0, 1 << 16))
def test_generated_modules(fuzz, code, salt) -> None:
    fuzz.holds({"omni/generated.py": sglang_flavoured(code, salt)})


@fuzz_seed
@fuzz_settings(examples=100)
@given(mutation=mutated(inputs.SEEDS))
def test_mutated_project_files(fuzz, mutation) -> None:
    path, data = mutation
    fuzz.holds({path: data})


# Defect: the image-tag pattern of release_mentions backtracked quadratically over a long run of
# name characters before `sglang:` (a 100 kB line: minutes, a hang).
LONG_DOCKERFILE_LINE = b"FRO" + b"x" * 100_000 + b"M lmsysorg/sglang:${SGLANG_IMAGE_TAG}\n"
# Defect: a patch that puts a NUL byte in the scheduler module left the patched module
# unparsable, and the control file's findings against it were lost.
NUL_IN_PATCHED_MODULE = inputs.STACK_SEEDS["docker/patch/sglang.patch"].replace("+import os", "+\x00import os").encode()


@fuzz_seed
@fuzz_settings(examples=100)
@given(mutation=mutated(inputs.STACK_SEEDS))
@example(mutation=("docker/Dockerfile", LONG_DOCKERFILE_LINE))
@example(mutation=("docker/patch/sglang.patch", NUL_IN_PATCHED_MODULE))
def test_mutated_stack_files(fuzz, mutation) -> None:
    path, data = mutation
    fuzz.holds({path: data})


@fuzz_seed
@fuzz_settings(examples=40)
@given(mutation=mutated({**inputs.SEEDS, **inputs.STACK_SEEDS}),
       where=st.sampled_from(["omni/extra.py", "requirements-dev.txt", "docker/patch/extra.patch",
                              "Dockerfile.rocm", "docs/install.md", ".github/workflows/release.yaml",
                              "requirements/base.txt", "constraints.txt", "omni/extra.diff"]))
def test_mutated_files_under_other_names(fuzz, mutation, where) -> None:
    """A seed's mutation where another kind of file is expected (a patch as a Dockerfile...)."""
    fuzz.holds({where: mutation[1]})


def test_the_seeds_hold_and_are_reported(fuzz) -> None:
    """The project unfuzzed: every seed holds contracts the fuzzing breaks."""
    lines = fuzz.holds({})
    reported = {line.split(":", 1)[0] for line in lines}
    assert reported == set(inputs.SEEDS) | set(inputs.STACK_SEEDS) | set(CONTROL_PATHS)


def test_release_mentions_take_time_linear_in_a_line(tmp_path) -> None:
    """Defect: the image-tag pattern's quadratic backtracking (see LONG_DOCKERFILE_LINE)."""
    from sglang_contracts.project.stack import release_mentions

    write(tmp_path, {"pyproject.toml": "", "Dockerfile": b"RUN " + b"a/" * 500_000 + b" sglang:${TAG}\n"
                     + b"FROM lmsysorg/sglang:v0.5.16\n"})
    start = time.monotonic()
    (mention,) = release_mentions(tmp_path)
    assert time.monotonic() - start < 10  # hours before the fix
    assert (mention.line, mention.col, mention.written) == (2, 22, "lmsysorg/sglang:v0.5.16")


# The command line in a fresh process, with the project's configuration read from a fuzzed
# pyproject.toml: findings (status 0 or 1) or a usage error naming the file (status 2), never a
# traceback or a hang.

def _cli(root: Path, old: Path, new: Path) -> subprocess.CompletedProcess:
    env = checkout_env()  # SGLANG_CONTRACTS_DEBUG=1: a bug is a traceback, status 1
    return subprocess.run([sys.executable, "-m", "sglang_contracts", "check", str(root), "--old", str(old),
                           "--new", str(new), "--no-cache", "--format", "json"],
                          capture_output=True, env=env, timeout=max(TIMEOUT, 120), cwd=root)


CONFIGURED = inputs.PYPROJECT + '''
[tool.sglang-contracts]
exclude = ["build/*"]
severity = { SGC702 = "warning" }
per-file-ignores = { "tests/*" = ["SGC8"] }
patch-files = ["docker/patch/*.patch"]
'''


@fuzz_seed
@fuzz_settings(examples=8, campaign_most=200)
@given(mutation=mutated({"pyproject.toml": CONFIGURED, "docker/patch/sglang.patch": inputs.STACK_SEEDS[
    "docker/patch/sglang.patch"]}))
def test_the_command_line_on_a_mutated_configuration(fuzz, mutation) -> None:
    path, data = mutation
    with collected({path: data}):
        cli_holds(fuzz, {path: data})


def cli_holds(fuzz: Fuzz, files: dict[str, bytes]) -> None:
    with fuzz.project({"pyproject.toml": CONFIGURED, **files}) as root:
        done = _cli(root, fuzz.old, fuzz.new)
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "internal error" not in err, err
    if done.returncode == 2:
        assert "pyproject.toml" in err and err.count("\n") == 1, err
    else:
        assert done.returncode in (0, 1), err
        assert b'"SGC001"' not in done.stdout
