"""Command line: `sglang-contracts check`, `fix`, `patch classify`, `patch rebase`, `rules`, `explain`, `lsp`."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NoReturn, TypeVar

from sglang_contracts import __version__
from sglang_contracts.infra.display import patch_for, printable
from sglang_contracts.infra.errors import ContractsError, UsageError
from sglang_contracts.infra.limits import limit_reached
from sglang_contracts.infra.output import (blocking_standard_streams, discard_standard_output, standard_output,
                                           usable_standard_streams, WholeWrites)
from sglang_contracts.infra.interrupts import (interrupt_behind, interrupted_status, interrupted_statuses,
                                               meet_interrupts)
from sglang_contracts.infra.process_exit import exit_without_teardown
from sglang_contracts.infra.gitsafety import never_reach_a_remote
from sglang_contracts.infra.pythonpath import never_from_the_working_folder
from sglang_contracts.infra.roots import remember_working_folder

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckOptions
    from sglang_contracts.config import Config
    from sglang_contracts.project.pins import ProjectPin


def _codes(value: str) -> list[str]:
    return [part.strip().upper() for part in value.split(",") if part.strip()]


FORMATS = ("text", "json", "sarif", "github", "markdown")
INCOMPLETE = 3  # exit status: the report was written, but an internal error (SGC001) left parts out
MAX_IDLE_SECONDS = 7 * 24 * 3600.0  # a week: `inf` or 1e309 would be a daemon that never leaves
READER_LEFT = 141  # 128 + SIGPIPE, as a shell tells of a writer whose reader left: the status was not yet known
NAMED_FILES = "--files"  # the pre-commit hooks' entry ends with it: see _paths_after_files


class _EscapingParser(argparse.ArgumentParser):
    """argparse's parser, whose errors show the command line's words as printable text: a file
    named `--<ESC>]0;...` that a hook passed reached the terminal raw in "unrecognized arguments"
    (tenth campaign, T74). Its subcommands' parsers are of its class (add_subparsers)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {printable(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _EscapingParser(
        prog="sglang-contracts",
        description="Report which of a project's contracts with SGLang the next release breaks.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    # Options that the configuration file can also set default to None: "not given here".
    check = commands.add_parser(
        "check", help="check a project against an SGLang bump",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="--old defaults to the project's SGLang pin: an exact sglang==X requirement (pyproject.toml,\n"
               "requirements files, setup.py) or an SGLang image tag in a Dockerfile or build script;\n"
               "--new and both may be set in [tool.sglang-contracts] in pyproject.toml.\n\n"
               f"exit status: 0 nothing reported (or --exit-zero); 1 something reported; 2 a usage or\n"
               f"source error (one line on standard error); {INCOMPLETE} the report was written but is incomplete\n"
               f"(an internal error, SGC001), whatever --exit-zero says; {READER_LEFT} the reader of the output left.")
    _add_run_options(check)
    _add_named_files_option(check)
    check.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when something is reported")
    check.add_argument("--report-unresolved", action="store_true", default=None,
                       help="also report, as info, contracts already broken on the old release")
    check.add_argument("--report-unused-noqa", action="store_true", default=None,
                       help="report `# noqa: SGCnnn` comments that silence nothing (SGC010)")
    check.add_argument("--baseline", type=_path, metavar="FILE", help="report only findings this baseline does not accept")
    check.add_argument("--write-baseline", type=_path, metavar="FILE",
                       help="write every finding to FILE as accepted (justifications already in FILE are kept) and exit 0")
    check.add_argument("--statistics", action="store_true", help="count the findings per code at the end")
    check.add_argument("--daemon", action="store_true",
                       help="with no daemon for these options, leave one after this run for the next check "
                            "(as `daemon start`; a pre-commit hook's later runs are then answered in about 0.5 s)")
    _add_cache_options(check)

    fix = commands.add_parser("fix", help="rewrite what the bump breaks where the new release makes the fix certain")
    _add_run_options(fix)
    _add_named_files_option(fix)
    fix.add_argument("--baseline", type=_path, metavar="FILE", help="leave the findings this baseline accepts")
    fix.add_argument("--diff", action="store_true", help="print the unified diff and write nothing (exit 1 if it would change a file)")
    fix.add_argument("--unsafe-fixes", action="store_true", help="also apply the fixes marked unsafe (judgements to review)")
    _add_cache_options(fix)
    fix.set_defaults(write_baseline=None, report_unresolved=None, report_unused_noqa=None)

    bump = commands.add_parser(
        "bump", help="the bump in one command: the safe fixes, the patch stack rebased, the plan and the PR body, "
                     "a last check", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Each step is its command's code: fix, patch rebase (of the live stack), check --format markdown.\n"
               "The plan and the PR body go to docs/draft/sglang-NEW-upgrade-plan.md and -pr-body.md, or where\n"
               "`upgrade-plan` and `pr-body` in [tool.sglang-contracts] say. Exit status: 0 nothing left to do,\n"
               "1 something is (the PR body's checklist), 2 a usage or source error.")
    _add_run_options(bump)
    bump.add_argument("--dry-run", action="store_true", help="print everything it would write as one unified diff, "
                                                             "and write nothing")
    bump.add_argument("--plan", type=_path, metavar="PLAN.md", help="where the stack's upgrade plan goes")
    bump.add_argument("--pr-body", type=_path, metavar="BODY.md", help="where the pull request's description goes")
    bump.add_argument("--tree", type=_path, metavar="DIR",
                      help="where the files with conflict markers go, a folder per patch (default: beside the plan)")
    _add_cache_options(bump)
    bump.set_defaults(write_baseline=None, report_unresolved=None, report_unused_noqa=None, baseline=None)

    patch = commands.add_parser("patch", help="work with .patch files against SGLang")
    patch_commands = patch.add_subparsers(dest="patch_command", required=True)
    classify = patch_commands.add_parser(
        "classify", help="classify every file and hunk of a patch against the skeleton patch it derives from")
    classify.add_argument("mine", type=Path, metavar="MINE.patch")
    classify.add_argument("skeleton", type=Path, metavar="SKELETON.patch")
    classify.add_argument("--format", choices=["text", "json"], default="text", help="output format (default: text)")
    rebase = patch_commands.add_parser(
        "rebase", help="rewrite a patch, or the project's live patch stack, made against release A for release B, verified",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Without PATCH, in a project's root: the stack its Dockerfile or build script applies, each patch onto\n"
               "B with the earlier ones rebased, written to a folder named for B (or in place for latest/), the\n"
               "plan always written. --old defaults to the project's SGLang pin, as for check.")
    rebase.add_argument("patch", type=Path, metavar="PATCH", nargs="?",
                        help="one patch file (default: the project's live stack)")
    rebase.add_argument("--old", help="the release PATCH is against (default: the project's SGLang pin)")
    rebase.add_argument("--new", help="the release to rebase it onto (default: `new` in [tool.sglang-contracts])")
    rebase.add_argument("-o", "--output", type=_path, metavar="NEW.patch|FOLDER",
                        help="where to write it (default: standard output; a stack: a folder named for the new "
                             "release beside the old one's, or the same folder)")
    rebase.add_argument("--skeleton", type=_path, metavar="SKELETON.patch|DIR",
                        help="a patch (a stack: a folder of patches) of the new release to take the same changes from "
                             "(slime's, for Relax)")
    rebase.add_argument("--plan", type=_path, metavar="PLAN.md",
                        help="write the upgrade decision log there (a stack: default docs/draft/sglang-NEW-upgrade-plan.md)")
    rebase.add_argument("--tree", type=_path, metavar="DIR",
                        help="write the new release's touched files there, rebased, conflict markers in place "
                             "(a stack: a folder per patch with hunks left; default beside the plan)")
    rebase.add_argument("--sglang-repo", type=_path, help="a local SGLang clone; --old/--new are then git refs")
    rebase.add_argument("--cache-dir", type=_path, help="cache folder (default: $SGLANG_CONTRACTS_CACHE or the user cache dir)")

    daemon = commands.add_parser("daemon", help="keep the project's check resident, for `check` to hand its work to")
    daemon.add_argument("action", choices=["start", "stop", "status", "serve"],
                        help="start one for this project and options, stop it, say whether it runs "
                             "(serve: be the daemon, in the foreground)")
    _add_run_options(daemon)
    daemon.add_argument("--no-cache", action="store_true", help="do not read or write the extraction caches")
    daemon.add_argument("--cache-dir", type=_path, help="cache folder (default: $SGLANG_CONTRACTS_CACHE or the user cache dir)")
    daemon.add_argument("--idle-timeout", type=_idle_seconds, default=3600.0, metavar="SECONDS",
                        help="exit after this long without a check (default: an hour)")

    commands.add_parser("lsp", help="run as a language server on standard input and output (for editors)")
    commands.add_parser("rules", help="list the rule catalog")
    explain = commands.add_parser("explain", help="print one rule's catalog entry")
    explain.add_argument("code")
    return parser


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """What `check` and `fix` share: the project, the releases, the configuration, the rules."""
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or folders to check (default: .)")
    parser.add_argument("--old", help="the release the project works with (default: the project's SGLang pin: its sglang==X requirement or image tag)")
    parser.add_argument("--new", help="the release to bump to: a version, a git ref with --sglang-repo, or a directory")
    parser.add_argument("--sglang-repo", type=_path, help="a local SGLang clone; --old/--new are then git refs (tags such as v0.5.22)")
    parser.add_argument("--config", type=_path, metavar="FILE",
                        help="configuration file (default: [tool.sglang-contracts] in the project's pyproject.toml)")
    parser.add_argument("--select", type=_codes, help="comma-separated code prefixes to report (default: SGC)")
    parser.add_argument("--ignore", type=_codes, help="comma-separated code prefixes not to report")
    parser.add_argument("--package-index", metavar="URL|DIR|none", type=_index_location,
                        help="where the dependency closure reads package metadata (default: pip's configured index; "
                             "none: the cache only)")


def _add_named_files_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(NAMED_FILES, action="store_true",
                        help="after it, an argument naming an existing file is a path even where it looks like an "
                             "option (a file named --exit-zero); the pre-commit hooks' entry ends with it")


def _paths_after_files(argv: list[str]) -> list[str]:
    """`argv` with each argument after `--files` that names an existing file (or folder) and
    looks like an option written `./NAME`, which no parser takes for one. pre-commit appends the
    names of the files to check after the hook's `args`, with no `--` (which would make the
    `args` paths too): a committed file named `--exit-zero` was that flag, and the hook passed
    with findings (campaign 10, R03). The hook's `args` stay options, but for one that a file of
    the same name shadows: a path then, which turns the option off, never another one on."""
    if NAMED_FILES not in argv:
        return argv
    at = argv.index(NAMED_FILES) + 1
    return [*argv[:at], *(os.path.join(os.curdir, part) if part.startswith("-") and os.path.lexists(part) else part
                          for part in argv[at:])]


def _add_cache_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the extraction caches")
    parser.add_argument("--cache-dir", type=_path, help="cache folder (default: $SGLANG_CONTRACTS_CACHE or the user cache dir)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress display and no summary line")
    parser.add_argument("-v", "--verbose", action="store_true", help="say what was loaded, on standard error")


class _Empty:
    """An option given as an empty string, which no path can be: argparse's `type` does not
    know the option it converts, so main names it (_refuse_empty_options)."""


EMPTY = _Empty()


def _path(given: str) -> Path | _Empty:
    """A path option's value: Path('') is the working folder, and `--cache-dir ''` put the
    cache's six folders in the project without a word (campaign 12, T90)."""
    return Path(given) if given else EMPTY


def _refuse_unusable_arguments(args: argparse.Namespace) -> None:
    _refuse_empty_options(args)
    _refuse_a_missing_working_folder(args)


def _refuse_empty_options(args: argparse.Namespace) -> None:
    """A usage error naming the first option given as an empty string (_path, _index_location)."""
    for name, value in vars(args).items():
        if value is EMPTY:
            raise UsageError(f"--{name.replace('_', '-')} is empty: give a path")


def _refuse_a_missing_working_folder(args: argparse.Namespace) -> None:
    """A usage error when the working folder is gone (removed under a shell still in it), which
    every command but `rules` and `explain` resolves paths against (campaign 13, R04: a traceback)."""
    if args.command not in ("rules", "explain", None):
        try:
            remember_working_folder()
        except OSError as error:
            raise UsageError(f"the working folder cannot be read ({error.strerror or error}): "
                             "run from an existing folder") from None


def _idle_seconds(given: str) -> float:
    """`--idle-timeout`: a positive, finite number of seconds. `nan` passed as a float, and no
    idle time is ever more than nan: the daemon never left (campaign 9, R17)."""
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds <= MAX_IDLE_SECONDS):
        raise argparse.ArgumentTypeError(f"{given!r} is not a number of seconds between 0 and {MAX_IDLE_SECONDS:.0f}")
    return seconds


def _index_location(given: str) -> str | _Empty:
    """`--package-index`: a folder named on the command line is relative to the working folder
    (not to the project's root, as the configuration's is), made absolute at once so that a
    daemon handed the flag reads the same folder; an empty one is no folder (_path)."""
    if not given:
        return EMPTY
    if given != "none" and "://" not in given:
        return os.path.abspath(os.path.expanduser(given))
    return given


def _options(args: argparse.Namespace) -> tuple[list[Path], "CheckOptions"]:
    """The command line over the configuration file over the defaults."""
    from sglang_contracts.check.options import Overrides, resolve_options

    return resolve_options(args.paths, Overrides(
        old=args.old, new=args.new, sglang_repo=args.sglang_repo, config=args.config, select=args.select,
        ignore=args.ignore, report_unresolved=args.report_unresolved, report_unused_noqa=args.report_unused_noqa,
        baseline=args.baseline, writes_baseline=bool(args.write_baseline),
        package_index=getattr(args, "package_index", None), cache_dir=args.cache_dir, use_cache=not args.no_cache))


def _check(args: argparse.Namespace, check=None) -> int:
    """`check`: a run in this process, or with `check` (a resident engine's, daemon.py)."""
    from sglang_contracts.infra import progress
    from sglang_contracts.infra.allocator import one_malloc_arena
    from sglang_contracts.infra.collector import one_run_process
    from sglang_contracts.check.runner import run_check

    paths, options = _options(args)
    if check is None:
        one_run_process()
        one_malloc_arena()  # before the run starts its threads
    with progress.showing(sys.stderr.isatty() and not args.quiet):
        result = (check or run_check)(paths, options)
    if not args.quiet:
        for note in result.notes:
            print(f"sglang-contracts: note: {printable(note)}", file=sys.stderr)
    if args.write_baseline:
        return _write_baseline(args.write_baseline, result)
    _report(args, result)
    if args.verbose:
        _say_what_was_loaded(result)
    return _check_status(args, options, result)


def _report(args: argparse.Namespace, result) -> None:
    """The check's report on standard output, in the format asked for, with --statistics."""
    from sglang_contracts.reporters import REPORTERS
    from sglang_contracts.reporters.base import statistics_lines

    with standard_output():
        REPORTERS[args.format](result, WholeWrites(sys.stdout), args.quiet)
        if args.statistics:  # after the text report, as flake8 does; elsewhere it must not break the format
            stream = sys.stdout if args.format == "text" else sys.stderr
            for line in statistics_lines(result.diagnostics):
                print(line, file=stream)


def _check_status(args: argparse.Namespace, options: "CheckOptions", result) -> int:
    """The check's exit status: INCOMPLETE after an internal error, 1 for findings (unless
    --exit-zero), else 0."""
    from sglang_contracts.diagnostics.suppressions import INTERNAL_ERROR

    internal = sum(d.code == INTERNAL_ERROR for d in result.diagnostics)
    if internal:  # whatever --exit-zero says: the report is missing parts
        print(f"sglang-contracts: the report is incomplete: {internal} internal error"
              f"{'s' * (internal != 1)} (SGC001); please report {'them' if internal != 1 else 'it'}",
              file=sys.stderr)
        return INCOMPLETE
    if result.diagnostics and not args.exit_zero:
        if os.environ.get("PRE_COMMIT") and options.baseline is None and not args.quiet:
            print(BASELINE_HINT, file=sys.stderr)
        return 1
    return 0


# A hook's first commit in a project with findings of the bump is held until they are fixed:
# said where pre-commit runs it (it sets PRE_COMMIT), with the way to commit meanwhile.
BASELINE_HINT = ("sglang-contracts: the commit waits for these findings. To commit before they are fixed, record them "
                 "once with `sglang-contracts check --write-baseline contracts-baseline.json` (and the hook's "
                 "--old/--new), commit that file, and set `baseline = \"contracts-baseline.json\"` in "
                 "[tool.sglang-contracts]: only new findings stop a commit then (docs/ci.md)")


def _fix(args: argparse.Namespace) -> int:
    from sglang_contracts.check.fixes import run_fix
    from sglang_contracts.infra import progress
    from sglang_contracts.reporters.base import display_path
    from sglang_contracts.reporters.text import format_line

    paths, options = _options(args)
    with progress.showing(sys.stderr.isatty() and not args.quiet):
        report = run_fix(paths, options, unsafe=args.unsafe_fixes, write=not args.diff)
    _say_fix_errors_and_notes(report)
    if args.diff:
        return _show_fix_diff(args, report)
    root = report.last.project.root
    with standard_output():
        for diagnostic in report.remaining:
            print(format_line(diagnostic, display_path(root, diagnostic.path)))
    if not args.quiet:  # as with --diff: standard output holds only what a pipe reads on
        print(f"{report.found} findings: {report.fixed} fixed, {len(report.remaining)} remaining", file=sys.stderr)
    return 1 if report.remaining or report.errors else 0


def _say_fix_errors_and_notes(report) -> None:
    for line in report.errors:
        print(f"sglang-contracts: error: {printable(line)}", file=sys.stderr)
    for line in report.notes:
        print(printable(line), file=sys.stderr)


def _show_fix_diff(args: argparse.Namespace, report) -> int:
    """`fix --diff`: the fixes as a patch on standard output, nothing written; 1 when a file would change."""
    with standard_output():
        sys.stdout.write(patch_for(sys.stdout, "".join(report.diffs)))
    if not args.quiet:
        print(f"{report.found} findings: {report.fixed} would be fixed, {len(report.remaining)} remaining "
              f"({len(report.changed)} file{'s' * (len(report.changed) != 1)} would change)", file=sys.stderr)
    return 1 if report.changed else 0


def _bump(args: argparse.Namespace) -> int:
    import dataclasses

    from sglang_contracts.bump import DEFAULT_PR_BODY, PR_BODY_HEADING, run_bump
    from sglang_contracts.infra import progress
    from sglang_contracts.infra.cache import cache_for_project, cache_root
    from sglang_contracts.patch.rebase import PLAN_HEADING
    from sglang_contracts.patch.stack_rebase import DEFAULT_PLAN
    from sglang_contracts.sources import open_release

    paths, options = _options(args)
    root, config, pin = _releases_of_project(args, paths)
    options = dataclasses.replace(options, old=args.old)
    new = open_release(options.new, sglang_repo=options.sglang_repo,
                       cache=cache_for_project(options.cache_dir or cache_root(), root))
    version = new.in_file_name
    plan = project_file(root, args.plan, config, "upgrade-plan", DEFAULT_PLAN, version, PLAN_HEADING)
    body = project_file(root, args.pr_body, config, "pr-body", DEFAULT_PR_BODY, version, PR_BODY_HEADING)
    trees = args.tree if args.tree is not None else plan.parent / f"sglang-{version}-conflicts"
    with progress.showing(sys.stderr.isatty() and not args.quiet):
        bump = run_bump(paths, options, root, plan, body, pin, config.get("patch-files") or (), trees, args.dry_run)
    for line in bump.fix.errors:
        print(f"sglang-contracts: error: {printable(line)}", file=sys.stderr)
    if not args.quiet:
        _say_what_the_bump_did(bump, root, plan, body, args.dry_run)
    return _bump_status(bump, args.dry_run)


def _bump_status(bump, dry_run: bool) -> int:
    """1 when the bump leaves work (findings, an incomplete rebase, errors); with --dry-run, the
    bump's changes as a patch on standard output, and 1 when a file would change."""
    from sglang_contracts.bump import bump_diff

    if dry_run:
        with standard_output():
            sys.stdout.write(patch_for(sys.stdout, bump_diff(bump)))
        return 1 if bump.files else 0
    left = bump.last.diagnostics or (bump.stack is not None and not bump.stack.complete) or bump.fix.errors
    return 1 if left else 0


def _say_what_the_bump_did(bump, root: Path, plan: Path, body: Path, dry_run: bool) -> None:
    """The bump's fixes, its patch stack's rebase and the check's findings left, on standard error."""
    from sglang_contracts.infra.wording import plural
    from sglang_contracts.patch.stack_rebase import shown_path, summary_lines

    print(f"fix: {bump.fix.found} findings, {bump.fix.fixed} {'would be ' * dry_run}fixed", file=sys.stderr)
    for line in summary_lines(bump.stack, not dry_run) if bump.stack is not None else ["no patch stack to rebase"]:
        print(line, file=sys.stderr)
    planned = f"plan: {shown_path(plan, root)}; " if bump.stack is not None else ""
    print(printable(f"check: {plural(len(bump.last.diagnostics), 'finding')} left (the PR body's checklist); "
                    f"{planned}PR body: {shown_path(body, root)}{' (not written: --dry-run)' * dry_run}"),
          file=sys.stderr)


def _write_baseline(path: Path, result) -> int:
    from sglang_contracts.diagnostics.baseline import previous_entries, write_baseline
    from sglang_contracts.patch.rebase import refusal_to_write

    why = refusal_to_write(result.project.root, path)
    if why:  # before the earlier baseline is read through the link
        raise UsageError(f"refused to write {printable(str(path))}: {why}")
    previous = previous_entries(path)
    count = write_baseline(path, result.diagnostics, previous)
    print(f"sglang-contracts: wrote {count} accepted finding{'s' * (count != 1)} to {printable(str(path))}", file=sys.stderr)
    return 0


def _say_what_was_loaded(result) -> None:
    if result.replayed_files_with_contracts is not None:
        print(f"no input changed since the last run with these options: its findings are replayed "
              f"(project {printable(str(result.project.root))}: {result.project.scanned} files, "
              f"{result.replayed_files_with_contracts} hold SGLang contracts)", file=sys.stderr)
        return
    for model in (result.old, result.new):
        stats = model.stats
        print(f"{printable(model.release.label)}: {stats.modules} modules loaded ({stats.parsed} parsed, "
              f"{stats.from_cache} from cache)", file=sys.stderr)
    project = result.project
    print(f"project {printable(str(project.root))}: {project.scanned} files, {len(project.files)} hold SGLang contracts "
          f"({project.parsed} parsed)", file=sys.stderr)
    if result.baselined or result.stale_baseline:
        print(f"baseline: {result.baselined} findings accepted, {len(result.stale_baseline)} entries match "
              "nothing any more", file=sys.stderr)


def _patch_classify(args: argparse.Namespace) -> int:
    from sglang_contracts.infra.display import json_text
    from sglang_contracts.patch.classify import classify, read_patch, render_text

    classes = classify(read_patch(args.mine), read_patch(args.skeleton))
    with standard_output():
        if args.format == "json":
            sys.stdout.write(json_text([c.to_json() for c in classes]) + "\n")
        else:
            sys.stdout.write(render_text(classes, str(args.mine), str(args.skeleton)))
    return 0


def _releases_of_project(args: argparse.Namespace, paths: list[Path] | None = None
                         ) -> tuple[Path, "Config", "ProjectPin | None"]:
    """The project's root (of the first of `paths`, else of the working folder), configuration and
    SGLang pin; `args.old`/`args.new` as given, else as `check` takes them (the configuration's
    `new`; the project's pin, or the pin before the bump). `bump PATH` run from another folder
    read that folder's configuration and wrote its PR body there (campaign 11, R07)."""
    from sglang_contracts.check.runner import project_old_release
    from sglang_contracts.config import find_config, with_source
    from sglang_contracts.infra.roots import root_of_all

    root = root_of_all(paths or [])
    config = find_config(root, getattr(args, "config", None))
    for flag, given in (("--old", args.old), ("--new", args.new)):
        if given is not None and not given.strip():
            raise UsageError(f"{flag} is empty: give an SGLang version, a git ref with --sglang-repo, or a directory")
    source = config.get("source")
    args.new = args.new or with_source(config.release_spec("new"), source)
    args.old, pin = project_old_release(root, args.old or with_source(config.release_spec("old"), source), args.new,
                                        args.sglang_repo)
    return root, config, pin


def project_file(root: Path, given: Path | None, config: "Config", key: str, default: str, new: str,
                 heading: str) -> Path:
    """A draft the command writes: as given (relative to the working folder: the user's to
    name), else the configuration's `key` or `default` (relative to the root), `{new}` the
    release bumped to (`new`: its version as one part of a file name, Release.in_file_name, so
    that the path config.py checked stays within the project once it is substituted), and
    then only over an earlier draft, which starts with `heading` (patch/rebase.py draft_below):
    a path given is held to it too (`--plan x.patch` replaced the patch being rebased, `--pr-body
    m.py` a module: campaign 17, R04)."""
    from sglang_contracts.patch.rebase import draft_below

    if given is not None:
        draft_below(root, given, heading, DRAFT_FLAGS[key])
        return given
    path = root / (config.get(key) or default).replace("{new}", new)
    draft_below(root, path, heading, key)
    return path


DRAFT_FLAGS = {"upgrade-plan": "--plan", "pr-body": "--pr-body"}  # the flag that names what each setting does


def _patch_rebase(args: argparse.Namespace) -> int:
    from sglang_contracts.patch.rebase import PLAN_HEADING, patch_rebase
    from sglang_contracts.patch.stack_rebase import DEFAULT_PLAN, patch_rebase_stack

    root, config, _ = _releases_of_project(args)
    if args.patch is not None:
        return patch_rebase(args, root)
    return patch_rebase_stack(args, root, lambda new: project_file(root, args.plan, config, "upgrade-plan", DEFAULT_PLAN, new,
                                                                        PLAN_HEADING))


def _rules() -> int:
    from sglang_contracts.diagnostics.catalog import load_catalog

    rules = load_catalog().values()
    width = max(len(rule.name) for rule in rules)
    columns = terminal_columns()
    with standard_output():
        for rule in rules:
            line = f"{rule.code:<8}{rule.name:<{width}} {rule.severity:<8}{rule.fix or '':<7}{rule.summary}"
            print(line if columns is None or len(line) <= columns else line[:columns - 1] + "…")
    return 0


def terminal_columns() -> int | None:
    """The width to fit lines to: the terminal's, or COLUMNS when set; None for a pipe or a file
    (a line cut there would be lost to grep)."""
    if os.environ.get("COLUMNS", "").isdigit():
        return max(40, int(os.environ["COLUMNS"]))
    return max(40, shutil.get_terminal_size().columns) if sys.stdout.isatty() else None


def _explain(code: str) -> int:
    from sglang_contracts.diagnostics.catalog import explanation

    text = explanation(code)
    with standard_output():
        print(text)
    return 0


def _run(args: argparse.Namespace, check=None, argv: list[str] | None = None) -> int:
    if args.command == "check":
        return _check(args, check)
    if args.command == "daemon":
        from sglang_contracts.resident.daemon import CommandLine, daemon_command

        return daemon_command(args, argv if argv is not None else sys.argv[1:],
                              CommandLine(parse=build_parser().parse_args, run=run_command))
    command = _COMMANDS.get(args.command)
    return command(args) if command is not None else _explain(args.code)


def _patch(args: argparse.Namespace) -> int:
    return _patch_rebase(args) if args.patch_command == "rebase" else _patch_classify(args)


def _lsp(args: argparse.Namespace) -> int:
    from sglang_contracts.lsp.server import main as serve

    return serve()


# The commands but check, daemon and explain (the default): command -> its run, given the arguments.
_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "fix": _fix, "bump": _bump, "rules": lambda args: _rules(), "patch": _patch, "lsp": _lsp,
}


def entry() -> NoReturn:
    """The process's entry point (the console script, `python -m sglang_contracts`): main's
    status, and an exit that frees nothing the run made (infra/process_exit.py)."""
    meet_interrupts()
    never_from_the_working_folder()
    never_reach_a_remote()
    status = main()
    exit_without_teardown(status, interrupted=status in interrupted_statuses())


def main(argv: list[str] | None = None) -> int:
    # A file name may hold bytes that are not UTF-8 (os.fsdecode's surrogates): shown escaped,
    # never a UnicodeEncodeError at the first finding in it.
    usable_standard_streams()
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    blocking_standard_streams()
    argv = _paths_after_files(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if _guarded(lambda: _refuse_unusable_arguments(args)):  # before a daemon is asked, or a folder made
        return 2
    if args.command == "check":
        from sglang_contracts.resident.client import handed_over

        status = _guarded(lambda: handed_over(argv, args))
        if status is not None:  # the project's daemon ran it (resident/)
            return status
        status = run_command(args, argv=argv)
        if args.daemon and status != 2:  # not after a usage error, which its daemon would meet too
            from sglang_contracts.resident.daemon import leave_daemon

            leave_daemon(args, Path.cwd())
        return status
    return run_command(args, argv=argv)


def run_command(args: argparse.Namespace, check=None, argv: list[str] | None = None) -> int:
    """The command's exit status, its errors said in one line; `check`: as in _check."""
    return _guarded(lambda: _run(args, check, argv))


Status = TypeVar("Status")  # a command's exit status, or None for "not run here" (handed_over)


def _guarded(command: Callable[[], Status]) -> Status | int:
    """What `command` returns, its errors said in one line (exit 2), never a traceback."""
    try:
        status = command()
        with standard_output():  # a reader that left, or a full disk, shows here, not at interpreter exit
            sys.stdout.flush()
        return status
    except ContractsError as error:
        print(f"sglang-contracts: error: {printable(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        return interrupted_status(interrupt)
    except BrokenPipeError:  # written outside standard_output(): the command's status is lost
        discard_standard_output()
        return READER_LEFT
    except Exception as error:  # never a traceback for the user; SGLANG_CONTRACTS_DEBUG=1 shows it
        if (interrupt := interrupt_behind(error)) is not None:
            return interrupted_status(interrupt)
        if os.environ.get("SGLANG_CONTRACTS_DEBUG"):
            raise
        print(f"sglang-contracts: {_unexpected(error)}", file=sys.stderr)
        return 2


def _unexpected(error: Exception) -> str:
    """An error no code path expected, in words: running out of file descriptors (campaign 14,
    R07), threads or processes (campaign 15, R06) is the system's limit, which the user can
    raise, not a bug of this tool."""
    if (limit := limit_reached(error)) is not None:
        return f"error: {limit}"
    return f"internal error: {type(error).__name__}: {printable(str(error))} (set SGLANG_CONTRACTS_DEBUG=1 for details)"
