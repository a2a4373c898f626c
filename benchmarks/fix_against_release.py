"""Measure: `fix` on a project release, held site by site against what the project's next
release wrote by hand (issue 34's acceptance measure).

The sites are the places the tool reports on the older release (`check`, every finding's
path:line). A site is forced when the next release changed its line (difflib's alignment of the
two releases' file). At each forced site, the file as `fix` left it is compared with the next
release at the same change (the hunk of each diff that holds the line):
  as-release   `fix` changed the site, and every line it wrote there and every line it removed is
               one the next release wrote and removed at that change (the site's line alone where
               `fix` rewrote its lines one for one, else its whole change)
  otherwise    `fix` changed the site some other way
  untouched    `fix` left the site (it says why on standard error)
Sites the next release left as they were are counted apart: there `fix` should write nothing.

Usage: python benchmarks/fix_against_release.py OLDER NEXT --old X --new Y [--unsafe] [--cache DIR]
       (OLDER and NEXT: sglang-omni versions, e.g. 0.1.8 0.1.9, read from their sdists)
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT / "tests"))


def hunk_of(before: list[str], after: list[str], line: int, alone: bool = False) -> tuple[list[str], list[str]] | None:
    """(the removed lines, the written lines) of the change of `before` -> `after` that holds
    `before`'s 1-based line; None when the line is unchanged. `alone`: where the change
    replaced its lines one for one, the line and its replacement alone."""
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag != "equal" and i1 < line <= i2:
            if alone and i2 - i1 == j2 - j1:
                offset = line - 1 - i1
                return [before[i1 + offset]], [after[j1 + offset]]
            return before[i1:i2], after[j1:j2]
    return None


def normalised(lines: list[str]) -> list[str]:
    return [" ".join(line.split()) for line in lines if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("older")
    parser.add_argument("next")
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--unsafe", action="store_true", help="fix --unsafe-fixes")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("SGLANG_CONTRACTS_CACHE", tempfile.gettempdir())))
    parser.add_argument("--show", action="store_true", help="print each forced site")
    args = parser.parse_args()
    from downloads import download_sdist

    older, following = (download_sdist("sglang-omni", version, args.cache) for version in (args.older, args.next))
    environment = {**os.environ, "PYTHONPATH": str(CHECKOUT), "SGLANG_CONTRACTS_CACHE": str(args.cache)}
    with tempfile.TemporaryDirectory(prefix="fix-against-") as scratch:
        project = Path(scratch) / "project"
        shutil.copytree(older, project)
        releases = ["--old", args.old, "--new", args.new]
        found = subprocess.run([sys.executable, "-m", "sglang_contracts", "check", "--format", "json", "--exit-zero",
                                *releases], cwd=project, env=environment, capture_output=True, text=True, check=True)
        findings = json.loads(found.stdout)
        if isinstance(findings, dict):  # with the dependency closure's moves beside them
            findings = findings["diagnostics"]
        fixed = subprocess.run([sys.executable, "-m", "sglang_contracts", "fix", *releases,
                                *(["--unsafe-fixes"] if args.unsafe else [])], cwd=project, env=environment,
                               capture_output=True, text=True)
        sites: dict[tuple[str, int], list[str]] = {}
        for finding in findings:
            sites.setdefault((finding["path"], finding["line"]), []).append(finding["code"])
        counts = {"as-release": 0, "otherwise": 0, "untouched": 0, "unforced": 0, "unforced-written": 0}
        shown = []
        for (path, line), codes in sorted(sites.items()):
            read = lambda root: (root / path).read_text(errors="replace").splitlines() if (root / path).is_file() else []  # noqa: E731
            before, ours, theirs = read(older), read(project), read(following)
            their_change = hunk_of(before, theirs, line)
            our_change = hunk_of(before, ours, line, alone=True)  # the site's own line, where fix rewrote line for line
            if their_change is None:
                counts["unforced-written" if our_change is not None else "unforced"] += 1
                continue
            if our_change is None:
                verdict = "untouched"
                why = [note.split(" not fixed: ", 1)[1] for note in fixed.stderr.splitlines()
                       if note.startswith(f"{path}:{line}:") and " not fixed: " in note]
            else:
                removed, written = map(normalised, our_change)
                their_removed, their_written = map(normalised, their_change)
                verdict = "as-release" if set(written) <= set(their_written) and set(removed) <= set(their_removed) \
                    else "otherwise"
            counts[verdict] += 1
            shown.append(f"{verdict:10} {path}:{line} {','.join(codes)}"
                         + (f"\n           why: {'; '.join(why)}" if verdict == "untouched" and why else "")
                         + (f"\n           ours:   {normalised(our_change[1])}\n           theirs: {normalised(their_change[1])[:6]}"
                            if verdict == "otherwise" else ""))
    forced = counts["as-release"] + counts["otherwise"] + counts["untouched"]
    print(f"sglang-omni {args.older} -> {args.next} ({args.old} -> {args.new}), fix{' --unsafe-fixes' * args.unsafe}: "
          f"{len(findings)} findings at {len(sites)} sites; {forced} forced (the next release changed them)")
    print(f"  written as {args.next} wrote them: {counts['as-release']}")
    print(f"  written otherwise:              {counts['otherwise']}")
    print(f"  left untouched:                 {counts['untouched']}")
    print(f"  sites {args.next} left as they were: {counts['unforced'] + counts['unforced-written']}, "
          f"of which fix wrote {counts['unforced-written']}")
    print(f"  fix: {fixed.stdout.strip().splitlines()[-1] if fixed.stdout.strip() else fixed.stderr.strip()[-200:]}")
    if args.show:
        print("\n".join(shown))


if __name__ == "__main__":
    main()
