"""What happened upstream between the two tags, for a reviewer (with `--sglang-repo`).

Context, not diagnostics: the first-parent commits between the tags that touch the upstream
files behind the project's contracts, and the modules whose full diff a reviewer must read
whatever the log says, when they changed. Read with GitPython; the clone is not changed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.sources.git import PACKAGE_PREFIX, open_repo, resolve_ref

# The modules every bump must be read in full when they changed (SGLang's scheduling core).
MUST_READ = (
    "sglang/srt/managers/scheduler.py",
    "sglang/srt/managers/scheduler_components/",
    "sglang/srt/managers/schedule_batch.py",
    "sglang/srt/managers/schedule_policy.py",
    "sglang/srt/model_executor/model_runner.py",
    "sglang/srt/model_executor/forward_batch_info.py",
    "sglang/srt/server_args.py",
    "sglang/srt/sampling/",
    "sglang/srt/mem_cache/",
    "sglang/srt/environ.py",
)
RECORD = "\x1e"
UNIT = "\x1f"


@dataclass(frozen=True)
class DeltaCommit:
    sha: str
    date: str  # ISO 8601, the author date
    author: str
    summary: str
    files: tuple[str, ...]  # the contract files it touches, relative to the folder holding sglang/


@dataclass(frozen=True)
class MustRead:
    path: str  # a module, or a folder ending in "/"
    added: int
    removed: int
    files: int  # files changed below it


@dataclass
class UpstreamDelta:
    old_ref: str
    new_ref: str
    old_sha: str
    new_sha: str
    commits: list[DeltaCommit] = field(default_factory=list)  # newest first, as git log gives them
    must_read: list[MustRead] = field(default_factory=list)  # only those that changed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "UpstreamDelta":
        """What to_json wrote; raises KeyError, TypeError or ValueError for another shape."""
        return cls(str(data["old_ref"]), str(data["new_ref"]), str(data["old_sha"]), str(data["new_sha"]),
                   commits=[DeltaCommit(**{**commit, "files": tuple(commit["files"])}) for commit in data["commits"]],
                   must_read=[MustRead(**item) for item in data["must_read"]])


def _in_repo(relpath: str) -> str:
    return f"{PACKAGE_PREFIX}/{relpath}"


def upstream_delta(repo_path: Path, old_ref: str, new_ref: str, files: Iterable[str]) -> UpstreamDelta:
    """The delta between two refs of a clone, for `files` (paths relative to the folder holding
    sglang/, as release trees name them)."""
    repo = open_repo(repo_path)
    old_name, old_commit = resolve_ref(repo, old_ref)
    new_name, new_commit = resolve_ref(repo, new_ref)
    delta = UpstreamDelta(old_name, new_name, old_commit.hexsha, new_commit.hexsha)
    watched = sorted(set(files))
    if watched:
        log = repo.git.log("--first-parent", "--name-only", f"--format={RECORD}%H{UNIT}%aI{UNIT}%an{UNIT}%s",
                           f"{old_commit.hexsha}..{new_commit.hexsha}", "--", *map(_in_repo, watched))
        delta.commits.extend(_logged_commit(record) for record in log.split(RECORD)[1:])
    numstat = repo.git.diff("--numstat", old_commit.hexsha, new_commit.hexsha, "--", *map(_in_repo, MUST_READ))
    totals = _must_read_totals(numstat)
    delta.must_read = [MustRead(entry, *totals[entry]) for entry in MUST_READ if entry in totals]
    return delta


def _logged_commit(record: str) -> DeltaCommit:
    """One commit of `git log --name-only` in the RECORD/UNIT format, with the files it touched."""
    header, _, names = record.partition("\n")
    sha, date, author, summary = header.split(UNIT, 3)
    touched = tuple(name[len(PACKAGE_PREFIX) + 1:] for name in names.split("\n") if name.strip())
    return DeltaCommit(sha, date, author, summary, touched)


def _must_read_totals(numstat: str) -> dict[str, list[int]]:
    """[lines added, lines removed, files] per MUST_READ entry, from `git diff --numstat`."""
    totals: dict[str, list[int]] = {}
    for line in numbered_lines(numstat):
        added, removed, name = line.split("\t", 2)
        relpath = name[len(PACKAGE_PREFIX) + 1:]
        for entry in MUST_READ:
            if relpath == entry or (entry.endswith("/") and relpath.startswith(entry)):
                total = totals.setdefault(entry, [0, 0, 0])
                total[0] += int(added) if added.isdigit() else 0
                total[1] += int(removed) if removed.isdigit() else 0
                total[2] += 1
    return totals
