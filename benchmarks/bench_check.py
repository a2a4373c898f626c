"""Benchmark: sglang-contracts against the sglang 0.5.22 -> 0.5.23 bump, on two projects.

sglang-omni 0.1.9 (a downstream project), each run a fresh process:
  cold       empty cache: downloads both wheels, unpacks, extracts, parses the project
  cold-disk  wheels already downloaded, nothing else cached: unpack, extract, parse
  warm       everything cached (no input changed: the findings are replayed)
  edited     one project file changed since (a statement added in a method of omni_scheduler.py:
             only it and its importers are checked again, check/incremental.py)
  fixed      another file changed so that a finding goes (code2wav.py's SGC102 import fixed)
  warm-dir   both releases read from unpacked wheels (directories), unchanged since the last run
  warm-git   both releases read as tags of a git clone (built here from the wheels), unchanged
  edited-daemon  the same kind of edit of omni_scheduler.py, `check` handed to a daemon started
             for the project (`sglang-contracts daemon start`): the client's process start and
             the daemon's re-check on its resident state, the median of five such edits; peak
             memory is the daemon's
  members-daemon the same file's class given an attribute in its __init__ (`self.x = None`, one
             more each time), through the daemon: the class's file and its dependants are checked
             (incremental.members_digest), the median of five such edits
  fixed-daemon   code2wav.py's import fixed, through the daemon
  lsp        `sglang-contracts lsp` over stdio, both files open: the time from an unsaved edit of
             a method body in omni_scheduler.py to that buffer's new diagnostics, the 0.1 s
             debounce included (the median of five edits, a line more each); also the first check, and an import fixed in code2wav.py (a
             change of the imports: the whole project is checked); peak memory of the server
Targets (2-core machine): cold about 10 s, warm (every source) under 1.0 s, one changed file
under 0.5 s, under 600 MB.

sglang itself as the project (the 0.5.22 wheel's package unpacked, ~4,300 files):
  cold       only the two wheels cached
  warm       everything cached
Targets: no SGC001 (an internal error), cold under a minute, under 600 MB.

Peak memory is that of the largest process of the run (the checker or one of its workers). The
tool's bytecode is compiled first, as an installation has it (compiled_as_installed).

With `--against DIR` (a checkout of the code before a change: `git worktree add /tmp/before REV`)
every case runs for that code and for this checkout's, alternately, `--rounds` times each (the
same machine's figures move by half from one hour to the next: only figures measured
interleaved compare), and each row shows the range of its figures for both.

Usage: python benchmarks/bench_check.py [--skip-download-run] [--case omni|sglang|both]
                                        [--against DIR [--rounds N]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from email.parser import HeaderParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from downloads import download_sdist  # noqa: E402

from sglang_contracts.infra.cache import cache_root  # noqa: E402

OLD, NEW = "0.5.22", "0.5.23"
EDITS = 5  # the daemon's and the language server's rows: the median of this many edits
EDITED = "sglang_omni/scheduling/omni_scheduler.py"  # the largest file that borrows upstream code
FIXED = "sglang_omni/models/qwen3_omni/components/code2wav.py"  # its SGC102 import, and the fix
BROKEN_IMPORT = "from sglang.kernels.ops.layernorm import rmsnorm"
FIXED_IMPORT = "from sglang.kernels.ops.layernorm.norm import rmsnorm"


def run_once(project: Path, cache: Path, releases: tuple[str, ...] = ("--old", OLD, "--new", NEW)) -> tuple[float, float, list[str]]:
    """(seconds, peak MB of the largest process, the diagnostics' lines)."""
    env = {**os.environ, "SGLANG_CONTRACTS_CACHE": str(cache)}
    command = [sys.executable, "-m", "sglang_contracts", "check", *releases, "--exit-zero", "-q"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=project, env=env, stdout=out, stderr=err)
        # wait4: this run's own peak (the largest of the process and the workers it waited for),
        # not the largest of every run so far as RUSAGE_CHILDREN would say.
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            sys.exit(f"check failed ({process.returncode}): {err.read().decode(errors='replace').strip()}")
        lines = out.read().decode(errors="replace").splitlines()
    return elapsed, usage.ru_maxrss / 1024, lines


def release_wheels(download: bool, scratch: str) -> tuple[list[tuple[str, float, float, list[str]]], Path]:
    """Both releases' wheels in a folder, and the download run when it is measured."""
    from sglang_contracts.sources import open_release

    rows = []
    if download:
        project = Path(scratch, "omni-project")
        if not project.exists():
            shutil.copytree(download_sdist("sglang-omni", "0.1.9", cache_root()), project)
        cold = Path(scratch, "cold")
        rows.append(("cold", *run_once(project, cold)))
        return rows, cold / "wheels"
    for version in (OLD, NEW):
        open_release(version, sglang_repo=None, cache=cache_root())
    return rows, cache_root() / "wheels"


def cache_with_wheels(wheels: Path, cache: Path) -> Path:
    """A cache folder that holds nothing but what downloading the two releases left: each wheel
    and the stamp that says it is whole (sources/index.py; without it the first run reads and
    hashes every member of both wheels, as for a wheel put in the cache by hand)."""
    (cache / "wheels").mkdir(parents=True)
    for version in (OLD, NEW):
        (wheel,) = sorted(wheels.glob(f"sglang-{version}-*.whl"))[:1]
        shutil.copy2(wheel, cache / "wheels" / wheel.name)  # its time too, which the stamp records
        stamp = wheel.with_name(f".{wheel.name}.verified")
        if stamp.is_file():
            shutil.copy2(stamp, cache / "wheels" / stamp.name)
    return cache


def omni_case(scratch: str, rows: list, wheels: Path) -> list:
    project = Path(scratch, "omni-project")
    if not project.exists():
        shutil.copytree(download_sdist("sglang-omni", "0.1.9", cache_root()), project)
    disk = cache_with_wheels(wheels, Path(scratch, "cold-disk"))
    rows.append(("cold-disk", *run_once(project, disk)))
    rows.append(("warm", *run_once(project, disk)))
    rows.append(("warm", *run_once(project, disk)))
    edited = project / EDITED
    text = edited.read_text()
    body = text.index(":\n", text.index("    def __init__(self")) + 2  # a statement in a method, as a developer adds one
    edited.write_text(text[:body] + "        trace_enabled = False  # edited by the benchmark\n" + text[body:])
    rows.append(("edited", *run_once(project, disk)))
    fixed = project / FIXED
    fixed.write_text(fixed.read_text().replace(BROKEN_IMPORT, FIXED_IMPORT))
    rows.append(("fixed", *run_once(project, disk)))
    fixed.write_text(fixed.read_text().replace(FIXED_IMPORT, BROKEN_IMPORT))
    folders = [unpacked(wheels, version, Path(scratch, f"dir-{version}")) for version in (OLD, NEW)]
    by_folder = ("--old", str(folders[0]), "--new", str(folders[1]))
    run_once(project, disk, by_folder)
    rows.append(("warm-dir", *run_once(project, disk, by_folder)))
    repo = clone_of(folders, Path(scratch, "sglang-git"))
    by_tag = ("--sglang-repo", str(repo), "--old", f"v{OLD}", "--new", f"v{NEW}")
    run_once(project, disk, by_tag)
    rows.append(("warm-git", *run_once(project, disk, by_tag)))
    rows.extend(daemon_rows(project, disk))
    rows.append(("lsp", *lsp_recheck(project, disk)))
    return rows


def daemon_rows(project: Path, cache: Path) -> list:
    """An edit and an import fix checked by `check` processes that hand their run to a daemon."""
    env = {**os.environ, "SGLANG_CONTRACTS_CACHE": str(cache)}
    releases = ["--old", OLD, "--new", NEW]

    def daemon(action: str) -> str:
        return subprocess.run([sys.executable, "-m", "sglang_contracts", "daemon", action, *releases], cwd=project,
                              env=env, capture_output=True, text=True, check=action != "stop").stdout

    daemon("start")
    pid = int(daemon("status").split("daemon ")[1].split()[0])

    def peak() -> float:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024
        except (OSError, StopIteration):  # gone, or a zombie: it exits when this tool's code changes
            sys.exit(f"the daemon {pid} exited during the benchmark (was this tool's code edited meanwhile?)")

    rows = []
    try:
        edited = project / EDITED
        text = edited.read_text()
        body = text.index(":\n", text.index("    def __init__(self")) + 2
        # Five edits, each a statement of its own (one varies by a third): their median.
        timed = []
        for edit in range(EDITS):
            edited.write_text(text[:body] + f"        daemon_traced_{edit} = False  # edited by the benchmark\n" + text[body:])
            seconds, _, lines = run_once(project, cache)
            timed.append(seconds)
        print("edited-daemon edits:", " ".join(f"{t:.2f}" for t in timed), file=sys.stderr)
        rows.append(("edited-daemon", statistics.median(timed), peak(), lines))
        # Five edits of a class's members: an attribute given in its __init__ (`self.x = None`),
        # another each time; the class's file and its dependants are checked again.
        timed = []
        for edit in range(EDITS):
            given = "".join(f"        self.daemon_given_{k} = None  # edited by the benchmark\n" for k in range(edit + 1))
            edited.write_text(text[:body] + given + text[body:])
            seconds, _, lines = run_once(project, cache)
            timed.append(seconds)
        print("members-daemon edits:", " ".join(f"{t:.2f}" for t in timed), file=sys.stderr)
        rows.append(("members-daemon", statistics.median(timed), peak(), lines))
        fixed = project / FIXED
        fixed.write_text(fixed.read_text().replace(BROKEN_IMPORT, FIXED_IMPORT))
        seconds, _, lines = run_once(project, cache)
        rows.append(("fixed-daemon", seconds, peak(), lines))
        fixed.write_text(fixed.read_text().replace(FIXED_IMPORT, BROKEN_IMPORT))
        edited.write_text(text)
        if int(daemon("status").rsplit(": ", 1)[1].split()[0]) < 2 * EDITS + 1:  # "N checks, idle for ..."
            sys.exit("the daemon answered not every check: the figures are of runs in their own process")
    finally:
        daemon("stop")
    return rows


def unpacked(wheels: Path, version: str, folder: Path) -> Path:
    """The wheel's sglang package and metadata in a folder: a release read as a directory."""
    (wheel,) = sorted(wheels.glob(f"sglang-{version}-*.whl"))[:1]
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)
    return folder


def clone_of(folders: list[Path], repo: Path) -> Path:
    """A git repository in SGLang's layout (python/sglang), one tagged commit per release."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    repo.mkdir()
    git("init", "-q")
    for version, folder in zip((OLD, NEW), folders):
        shutil.rmtree(repo / "python", ignore_errors=True)
        shutil.copytree(folder / "sglang", repo / "python" / "sglang")
        # SGLang's repository declares its requirements in python/pyproject.toml: the wheel's, each
        # line as its metadata has it (markers and extras included), so that this row reads the
        # same pins as the others (without them SGC705 counts every new package as undeclared).
        (metadata,) = folder.glob("sglang-*.dist-info/METADATA")
        requires = HeaderParser().parsestr(metadata.read_text()).get_all("Requires-Dist") or []
        (repo / "python" / "pyproject.toml").write_text(
            f'[project]\nname = "sglang"\nversion = "{version}"\ndependencies = {json.dumps(requires)}\n')
        git("add", "-A")
        git("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", version)
        git("tag", f"v{version}")
    return repo


def lsp_recheck(project: Path, cache: Path) -> tuple[float, float, list[str]]:
    """(seconds from an unsaved edit to its diagnostics, peak MB of the server, the first
    check's time as a line), over stdio with pygls's client."""
    import asyncio

    from lsprotocol import types
    from pygls.lsp.client import LanguageClient
    from pygls.uris import from_fs_path

    async def session() -> tuple[float, float, float]:
        client = LanguageClient("bench", "1")
        published: dict[str, list] = {}
        arrived = asyncio.Event()

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params):
            published[params.uri] = params.diagnostics
            arrived.set()

        async def until(condition) -> float:
            start = time.perf_counter()
            while not condition():
                arrived.clear()
                await asyncio.wait_for(arrived.wait(), 300)
            return time.perf_counter() - start

        async def quiet(seconds: float) -> None:
            """Until nothing is published for `seconds`: the checks the openings queued are over."""
            while True:
                arrived.clear()
                try:
                    await asyncio.wait_for(arrived.wait(), seconds)
                except asyncio.TimeoutError:
                    return

        env = {**os.environ, "SGLANG_CONTRACTS_CACHE": str(cache)}
        await client.start_io(sys.executable, "-m", "sglang_contracts", "lsp", cwd=str(project), env=env)
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(project)),
            initialization_options={"old": OLD, "new": NEW}))
        client.initialized(types.InitializedParams())
        documents = {}
        for relpath in (EDITED, FIXED):
            path = project / relpath
            documents[relpath] = uri, text = from_fs_path(str(path)), path.read_text()
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        first = await until(lambda: all(uri in published for uri, _ in documents.values()))
        # A line typed in a method body: that buffer's findings below it move (only it and its importers are checked).
        uri, text = documents[EDITED]
        at = text.index(":\n", text.index("    def __init__(self")) + 2
        timed = []
        for edit in range(EDITS):  # each a line of its own, after a pause: their median
            await quiet(2.0 if edit else 5.0)  # a fixed pause measured the tail of those checks on a loaded machine
            before = published[uri]
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=2 + edit),
                [types.TextDocumentContentChangeWholeDocument(
                    text=text[:at] + "        traced = True\n" * (edit + 1) + text[at:])]))
            timed.append(await until(lambda: published[uri] != before))  # the findings below the lines moved
        print("lsp edits:", " ".join(f"{t:.2f}" for t in timed), file=sys.stderr)
        typed = statistics.median(timed)
        # An import fixed: a project-wide fact (the imports) changed, so every file is checked.
        uri, text = documents[FIXED]
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangeWholeDocument(text=text.replace(BROKEN_IMPORT, FIXED_IMPORT))]))
        fixed = await until(lambda: not any(d.code == "SGC102" for d in published.get(uri, [])))
        status = Path(f"/proc/{client._server.pid}/status").read_text()
        peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        return typed, peak, first, fixed

    typed, peak, first, fixed = asyncio.run(session())
    return typed, peak, [f"first check {first:.2f} s, an import fixed {fixed:.2f} s"]


def sglang_case(scratch: str, wheels: Path) -> list:
    project = Path(scratch, "sglang-project")
    (wheel,) = sorted(wheels.glob(f"sglang-{OLD}-*.whl"))[:1]
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(project, [name for name in archive.namelist() if name.startswith("sglang/")])
    (project / "pyproject.toml").write_text("[project]\nname = 'sgproj'\n")
    cache = cache_with_wheels(wheels, Path(scratch, "sglang-cache"))
    return [("cold", *run_once(project, cache)), ("warm", *run_once(project, cache))]


def show(title: str, rows: list) -> None:
    print(title)
    print(f"{'run':<14} {'wall s':>8} {'peak MB':>8} {'diagnostics':>12} {'SGC001':>7}")
    for name, seconds, peak, lines in rows:
        internal = sum(1 for line in lines if ": SGC001 " in line)
        if name == "lsp":  # re-check latency after typing; its line gives the other two
            print(f"{name:<14} {seconds:>8.2f} {peak:>8.0f}   {lines[0]}")
            continue
        print(f"{name:<14} {seconds:>8.2f} {peak:>8.0f} {len(lines):>12} {internal:>7}")


def compiled_as_installed(package: Path | None = None) -> None:
    """The tool's bytecode (this checkout's, or the package folder given), as pip compiles it
    when it installs a package: each measured process starts as on a user's machine. Where
    PYTHONDONTWRITEBYTECODE is set (it is on this project's machines) an editable checkout
    would otherwise compile its 108 modules in every process (0.11 s of a warm run)."""
    import compileall

    if not compileall.compile_dir(package or Path(__file__).resolve().parent.parent / "sglang_contracts", quiet=1):
        sys.exit("could not compile the tool's bytecode")


def compared(title: str, passes: dict[str, list[list]]) -> None:
    """Each row's range over its passes, for each code."""
    print(title)
    names = list(passes)
    print(f"{'run':<14} " + " ".join(f"{name + ' wall s':>20} {'peak MB':>9}" for name in names))
    for number, (row, *_) in enumerate(passes[names[0]][0]):
        cells = []
        for name in names:
            walls = [rows[number][1] for rows in passes[name]]
            peaks = [rows[number][2] for rows in passes[name]]
            cells.append(f"{min(walls):>9.2f}-{max(walls):<10.2f} {max(peaks):>9.0f}")
        print(f"{row:<14} " + " ".join(cells))


def in_code(tree: Path | None) -> None:
    """The measured processes run the code of `tree` (None: this checkout's, whatever copy of the
    tool is installed)."""
    os.environ["PYTHONPATH"] = str(tree or Path(__file__).resolve().parent.parent)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-download-run", action="store_true", help="do not measure the run that downloads wheels")
    parser.add_argument("--case", choices=["omni", "sglang", "both"], default="both")
    parser.add_argument("--against", type=Path, help="a checkout of the code before: both measured, alternately")
    parser.add_argument("--rounds", type=int, default=2, help="with --against: the passes of each code")
    args = parser.parse_args()
    compiled_as_installed()
    if args.against is not None:
        compiled_as_installed(args.against / "sglang_contracts")
    cores = f"{os.cpu_count()} cores"
    cases = [case for case in ("omni", "sglang") if args.case in (case, "both")]
    codes = {"this": None} if args.against is None else {"before": args.against.resolve(), "after": None}
    passes: dict[str, dict[str, list[list]]] = {case: {name: [] for name in codes} for case in cases}
    for _ in range(args.rounds if args.against is not None else 1):
        for name, tree in codes.items():
            in_code(tree)
            with tempfile.TemporaryDirectory(prefix="sglang-contracts-bench-") as scratch:
                download = not args.skip_download_run and "omni" in cases
                rows, wheels = release_wheels(download, scratch)
                if "omni" in cases:
                    passes["omni"][name].append(omni_case(scratch, rows, wheels))
                if "sglang" in cases:
                    passes["sglang"][name].append(sglang_case(scratch, wheels))
    in_code(None)
    titles = {"omni": f"sglang-omni 0.1.9, sglang {OLD} -> {NEW}, {cores}",
              "sglang": f"sglang {OLD} itself as the project, sglang {OLD} -> {NEW}, {cores}"}
    for case in cases:
        if args.against is None:
            show(titles[case], passes[case]["this"][0])
        else:
            compared(titles[case], passes[case])


if __name__ == "__main__":
    main()
