"""`patch rebase` on slime's real history: for each SGLang bump slime made, its `sglang.patch` of
the older release rebased onto the newer one (real wheels, downloaded by the tool), counted by
verdict, verified, and compared file by file with the patch slime itself wrote for the newer release;
then again with that patch of slime's as the skeleton (as Relax rebases onto slime's).

    python benchmarks/rebase_slime.py /path/to/slime/clone

Nothing of slime's is stored: the patches are read from the clone with `git show`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sglang_contracts.infra.cache import cache_root
from sglang_contracts.patch.rebase import (
    CARRIED, CONFLICT, DROPPED, GONE, MERGED, NOT_ON_OLD, git, rebase_patch,
)
from sglang_contracts.patch.patchfile import parse_patch
from sglang_contracts.patch.release import release_relpath
from sglang_contracts.sources import open_release

PATCH = "docker/patch/latest/sglang.patch"
STACK_ORDER = ["sglang-top_p.patch", "sglang-release_hicache.patch", "sglang-pull_weights.patch",
               "sglang-deterministic.patch"]  # after sglang.patch, as slime's Dockerfile applies them
# (old release, new release, slime's last commit on the old one, its first rebased patch on the new one)
BUMPS = [
    ("0.5.9", "0.5.10.post1", "f3e7bd7f3", "f588adda5"),
    ("0.5.10.post1", "0.5.12.post1", "1c8107312", "567401268"),
    ("0.5.12.post1", "0.5.13", "1b0415a25", "fec3da9b4"),
    ("0.5.13", "0.5.15.post1", "474861aaf", "aaf5c2092"),
]


def show(clone: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(clone), "show", f"{commit}:{path}"], check=True, capture_output=True,
                          text=True, encoding="utf-8", errors="surrogateescape").stdout


def release_repository(release, paths: set[str], patches: list[str], folder: Path, *flags: str) -> None:
    """A git repository of the release's files at their patch paths, with `patches` applied in order."""
    for path in paths:
        relpath = release_relpath(path)
        data = release.tree.read_bytes(relpath) if relpath else None
        if data is not None:
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(data)
    git(folder, "init", "-q")
    for number, text in enumerate(patches):
        (folder / f".p{number}").write_text(text, encoding="utf-8", errors="surrogateescape")
        applied = git(folder, "apply", *flags, f".p{number}")
        assert "--reject" in flags or applied.returncode == 0, applied.stderr


def theirs_after(new, slime_text: str, paths: set[str], folder: Path) -> dict[str, str | None]:
    """Each file as slime's own rebased patch leaves it on the new release (git apply --reject)."""
    paths = paths | {f.path for f in parse_patch(slime_text).files}
    release_repository(new, paths, [slime_text], folder, "--reject")
    return {p: (folder / p).read_text(errors="surrogateescape") if (folder / p).is_file() else None for p in paths}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("slime", type=Path)
    args = parser.parse_args()
    verdicts = (CARRIED, MERGED, DROPPED, CONFLICT, GONE, NOT_ON_OLD)
    print("| bump | hunks | " + " | ".join(verdicts) + " | applies on new | files without conflict as slime's | carried+merged hunks slime also has | seconds | with slime's new patch as skeleton: A / B / C, conflicts |")
    print("|---|---|" + "---|" * len(verdicts) + "---|---|---|---|---|")
    for old_version, new_version, old_commit, new_commit in BUMPS:
        old = open_release(old_version, sglang_repo=None, cache=cache_root())
        new = open_release(new_version, sglang_repo=None, cache=cache_root())
        text = show(args.slime, old_commit, PATCH)
        start = time.monotonic()
        result = rebase_patch(parse_patch(text), text, old, new)
        seconds = time.monotonic() - start
        ours = {f.target: f.after for f in result.files}
        slime_text = show(args.slime, new_commit, PATCH)
        with tempfile.TemporaryDirectory() as folder:
            theirs = theirs_after(new, slime_text, set(ours), Path(folder))
        skeleton = rebase_patch(parse_patch(text), text, old, new, parse_patch(slime_text))
        labels = " / ".join(str(sum(o.label == c for o in skeleton.outcomes)) for c in "ABC")
        skeleton_cell = f"{labels}, {skeleton.count(CONFLICT)}" + ("" if skeleton.verified else " (not verified)")
        clean = {o.path for o in result.outcomes} - {o.path for o in result.outcomes if o.verdict == CONFLICT}
        same = sum(ours[p] == theirs.get(p) for p in ours if p in clean)
        kept = [o for o in result.outcomes if o.verdict in (CARRIED, MERGED) and o.hunk is not None]
        agree = sum(all(line in (theirs.get(o.path) or "").splitlines(keepends=True) for line in o.hunk.added)
                    for o in kept)
        counts = " | ".join(str(result.count(v)) for v in verdicts)
        applies = "yes" if result.verified else f"no ({result.verification})"
        print(f"| {old_version} -> {new_version} | {len(result.outcomes)} | {counts} | {applies} | {same} / {len(clean & set(ours))} "
              f"| {agree} / {len(kept)} | {seconds:.1f} | {skeleton_cell} |", flush=True)
        for o in result.outcomes:
            if o.verdict in (GONE, NOT_ON_OLD):
                print(f"  {o.verdict}: {o.file.path} #{o.number}: {o.detail}", file=sys.stderr)
        siblings(args.slime, old, new, old_commit, new_commit, verdicts)
    return 0


def patched_release(release, patches: list[str], also: list[str], folder: Path):
    """A directory release of the files `patches` and `also` name, from `release`, with `patches`
    applied in order by git apply: the tree a later patch of a stack is made against."""
    paths = {f.path for text in patches + also for f in parse_patch(text).files} | {"python/sglang/__init__.py"}
    release_repository(release, paths, patches, folder)
    return open_release(f"dir:{folder / 'python'}", sglang_repo=None, cache=cache_root())


def siblings(clone: Path, old, new, old_commit: str, new_commit: str, verdicts) -> None:
    """The later patches of slime's stack, each rebased from the old release with slime's earlier
    patches applied onto the new one with slime's rebased earlier patches applied."""
    folder = PATCH.rsplit("/", 1)[0]
    names = subprocess.run(["git", "-C", str(clone), "ls-tree", "--name-only", old_commit, folder + "/"],
                           check=True, capture_output=True, text=True).stdout.split()
    order = [n.rsplit("/", 1)[-1] for n in names if n.endswith(".patch") and "/sglang-" in n]
    before_old, before_new = [show(clone, old_commit, PATCH)], [show(clone, new_commit, PATCH)]
    for name in sorted(order, key=STACK_ORDER.index):
        text = show(clone, old_commit, f"{folder}/{name}")
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            old_tree = patched_release(old, before_old, [text], Path(a))
            new_tree = patched_release(new, before_new, [text], Path(b))
            result = rebase_patch(parse_patch(text), text, old_tree, new_tree)
        counts = " | ".join(str(result.count(v)) for v in verdicts)
        applies = "yes" if result.verified else f"no ({result.verification})"
        print(f"| {name}, on the patches before it | {len(result.outcomes)} | {counts} | {applies} | | | | |", flush=True)
        before_old.append(text)
        before_new.append(show(clone, new_commit, f"{folder}/{name}"))


if __name__ == "__main__":
    sys.exit(main())
