"""Command line: `sglang-contracts check`, `patch classify`, `rules`, `explain`."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from sglang_contracts import __version__
from sglang_contracts.errors import ContractsError, UsageError


def _codes(value: str) -> list[str]:
    return [part.strip().upper() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sglang-contracts",
        description="Report which of a project's contracts with SGLang the next release breaks.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="check a project against an SGLang bump")
    check.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or folders to check (default: .)")
    check.add_argument("--old", help="the release the project works with (default: its sglang==X pin)")
    check.add_argument("--new", required=True, help="the release to bump to: a version, a git ref with --sglang-repo, or a directory")
    check.add_argument("--sglang-repo", type=Path, help="a local SGLang clone; --old/--new are then git refs (tags such as v0.5.22)")
    check.add_argument("--format", choices=["text", "json"], default="text", help="output format (default: text)")
    check.add_argument("--select", type=_codes, default=["SGC"], help="comma-separated code prefixes to report (default: SGC)")
    check.add_argument("--ignore", type=_codes, default=[], help="comma-separated code prefixes not to report")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when something is reported")
    check.add_argument("--report-unresolved", action="store_true",
                       help="also report, as info, contracts already broken on the old release")
    check.add_argument("--no-cache", action="store_true", help="do not read or write the extraction caches")
    check.add_argument("--cache-dir", type=Path, help="cache folder (default: $SGLANG_CONTRACTS_CACHE or the user cache dir)")
    check.add_argument("-v", "--verbose", action="store_true", help="say what was loaded, on standard error")

    patch = commands.add_parser("patch", help="work with .patch files against SGLang")
    patch_commands = patch.add_subparsers(dest="patch_command", required=True)
    classify = patch_commands.add_parser(
        "classify", help="classify every file and hunk of a patch against the skeleton patch it derives from")
    classify.add_argument("mine", type=Path, metavar="MINE.patch")
    classify.add_argument("skeleton", type=Path, metavar="SKELETON.patch")
    classify.add_argument("--format", choices=["text", "json"], default="text", help="output format (default: text)")

    commands.add_parser("rules", help="list the rule catalog")
    explain = commands.add_parser("explain", help="print one rule's catalog entry")
    explain.add_argument("code")
    return parser


def _display_path(root: Path, relpath: str) -> str:
    absolute = root / relpath
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


def _check(args: argparse.Namespace) -> int:
    from sglang_contracts.reporters import REPORTERS
    from sglang_contracts.runner import CheckOptions, run_check

    options = CheckOptions(
        old=args.old, new=args.new, sglang_repo=args.sglang_repo, select=args.select, ignore=args.ignore,
        report_unresolved=args.report_unresolved, cache_dir=args.cache_dir, use_cache=not args.no_cache,
    )
    result = run_check(args.paths, options)
    root = result.project.root
    diagnostics = [dataclasses.replace(d, path=_display_path(root, d.path)) for d in result.diagnostics]
    REPORTERS[args.format](diagnostics, sys.stdout)
    if args.verbose:
        for model in (result.old, result.new):
            stats = model.stats
            print(f"{model.release.label}: {stats.modules} modules loaded ({stats.parsed} parsed, "
                  f"{stats.from_cache} from cache)", file=sys.stderr)
        project = result.project
        print(f"project {root}: {project.scanned} files, {len(project.files)} hold SGLang contracts "
              f"({project.parsed} parsed)", file=sys.stderr)
    return 1 if diagnostics and not args.exit_zero else 0


def _patch_classify(args: argparse.Namespace) -> int:
    import json

    from sglang_contracts.patchclassify import classify, read_patch, render_text

    classes = classify(read_patch(args.mine), read_patch(args.skeleton))
    if args.format == "json":
        json.dump([c.to_json() for c in classes], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(classes, args.mine.name, args.skeleton.name))
    return 0


def _rules() -> int:
    from sglang_contracts.catalog import load_catalog

    for rule in load_catalog().values():
        print(f"{rule.code}  {rule.name:<32} {rule.severity:<8} {rule.summary}")
    return 0


def _explain(code: str) -> int:
    from sglang_contracts.catalog import rule

    entry = rule(code.upper())
    print(f"{entry.code} {entry.name} ({entry.severity})\n\n{entry.summary}\n\n{entry.description}\n")
    print(f"Message: {entry.message}\nReference: {entry.reference}")
    for example in entry.examples:
        print(f"\nExample: {example.title}")
        for label, files in (("old sglang", example.old), ("new sglang", example.new), ("project", example.project)):
            for path, text in files.items():
                print(f"  [{label}] {path}:")
                print("".join(f"    {line}\n" for line in text.strip("\n").splitlines()), end="")
        print("  reports: " + (", ".join(example.expect) if example.expect else "nothing"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rules":
            return _rules()
        if args.command == "patch":
            return _patch_classify(args)
        return _explain(args.code)
    except ContractsError as error:
        print(f"sglang-contracts: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # never a traceback for the user; SGLANG_CONTRACTS_DEBUG=1 shows it
        if os.environ.get("SGLANG_CONTRACTS_DEBUG"):
            raise
        print(f"sglang-contracts: internal error: {type(error).__name__}: {error} "
              "(set SGLANG_CONTRACTS_DEBUG=1 for details)", file=sys.stderr)
        return 2
