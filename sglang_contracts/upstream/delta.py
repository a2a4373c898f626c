"""What happened upstream between the two tags, for a reviewer (with `--sglang-repo`).

Context, not diagnostics: the first-parent commits between the tags that touch the upstream
files behind the project's contracts, and the modules whose full diff a reviewer must read
whatever the log says, when they changed. Read with GitPython; the clone is not changed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

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
# git log's fields, NUL-separated: git keeps every other byte of a message or a name (a 0x1e in a
# subject once split one commit in two), but none holds a NUL. With -z the names end with one too.
LOG_FORMAT = "%H%x00%aI%x00%an%x00%s"
LOG_FIELDS = 4


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
    """The pathspec of one file or folder: literal, as a name holding `*` or `[` is no pattern."""
    return f":(literal){PACKAGE_PREFIX}/{relpath}"


def upstream_delta(repo_path: Path, old_ref: str, new_ref: str, files: Iterable[str]) -> UpstreamDelta:
    """The delta between two refs of a clone, for `files` (paths relative to the folder holding
    sglang/, as release trees name them)."""
    repo = open_repo(repo_path)
    old_name, old_commit = resolve_ref(repo, old_ref)
    new_name, new_commit = resolve_ref(repo, new_ref)
    delta = UpstreamDelta(old_name, new_name, old_commit.hexsha, new_commit.hexsha)
    watched = sorted(set(files))
    if watched:
        log = repo.git.log("-z", "--first-parent", "--name-only", f"--format={LOG_FORMAT}",
                           f"{old_commit.hexsha}..{new_commit.hexsha}", "--", *map(_in_repo, watched))
        delta.commits.extend(_logged_commits(log))
    numstat = repo.git.diff("-z", "--numstat", old_commit.hexsha, new_commit.hexsha, "--", *map(_in_repo, MUST_READ))
    totals = _must_read_totals(numstat)
    delta.must_read = [MustRead(entry, *totals[entry]) for entry in MUST_READ if entry in totals]
    return delta


def _logged_commits(log: str) -> list[DeltaCommit]:
    """The commits of `git log -z --name-only --format=LOG_FORMAT`, with the files each touched.
    A commit is LOG_FIELDS fields, then its names, all NUL-ended; the pathspec puts every name
    below PACKAGE_PREFIX, which no commit's hash does. A header that is no commit's is passed over."""
    tokens = log.split("\0")
    commits = []
    at = 0
    while at + LOG_FIELDS <= len(tokens):
        sha, date, author, summary = tokens[at:at + LOG_FIELDS]
        if not _is_hash(sha):
            at += 1
            continue
        at += LOG_FIELDS
        touched = []
        while at < len(tokens) and (name := _logged_name(tokens[at])) is not None:
            touched.append(name)
            at += 1
        commits.append(DeltaCommit(sha, date, author, summary, tuple(touched)))
    return commits


def _is_hash(text: str) -> bool:
    return len(text) in {40, 64} and all(c in "0123456789abcdef" for c in text)


def _logged_name(token: str) -> str | None:
    """A name `git log -z --name-only` listed (the first after a header comes after a newline),
    relative to the folder holding sglang/; None for a token that is no name."""
    name = token.removeprefix("\n")
    return name[len(PACKAGE_PREFIX) + 1:] if name.startswith(f"{PACKAGE_PREFIX}/") else None


def _must_read_totals(numstat: str) -> dict[str, list[int]]:
    """[lines added, lines removed, files] per MUST_READ entry, from `git diff -z --numstat`: each
    file is `added\tremoved\tname` NUL-ended, a renamed one `added\tremoved\t`, then its two names."""
    totals: dict[str, list[int]] = {}
    tokens = iter(numstat.split("\0"))
    for token in tokens:
        fields = token.split("\t", 2)
        if len(fields) != 3:  # the empty token after the last NUL, or nothing git writes
            continue
        added, removed, name = fields
        names = (name,) if name else (next(tokens, ""), next(tokens, ""))
        relpaths = {path[len(PACKAGE_PREFIX) + 1:] for path in names if path.startswith(f"{PACKAGE_PREFIX}/")}
        for entry in MUST_READ:
            if any(relpath == entry or (entry.endswith("/") and relpath.startswith(entry)) for relpath in relpaths):
                total = totals.setdefault(entry, [0, 0, 0])
                total[0] += int(added) if added.isdigit() else 0
                total[1] += int(removed) if removed.isdigit() else 0
                total[2] += 1
    return totals
