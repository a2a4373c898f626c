"""Stack contracts (SGC701-SGC705, SGC708): pins, release names, version prose, compat overlays, new
dependencies, supported Pythons."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.infra.markdown import code_span
from sglang_contracts.project import images
from sglang_contracts.project.facts import FileFacts
from sglang_contracts.project.images import may_name_release, script_mentions
from sglang_contracts.project.index import project_folders
from sglang_contracts.project.installs import installed_requirements, version_markers
from sglang_contracts.analysis.importgraph import ImportGraph
from sglang_contracts.fix import text as edits
from sglang_contracts.fix.document import NotRewritable
from sglang_contracts.patch.stack import NAME_ORDER, patch_stacks
from sglang_contracts.project.stack import (
    DeclaredRequirement, ReleaseMention, declared_python, declared_requirements, prose_notes, release_mentions,
    removal_requirement, requirements_below,
)
from sglang_contracts.requirements import (
    applies, as_version, environments, exact_version, names_release, normalized, version_in_tag, without_marker,
)
from sglang_contracts.closure.flavour import EXTRA_TEST, offered_extras
from sglang_contracts.upstream.model import is_upstream
from sglang_contracts.upstream.pins import ReleasePins, release_pins

SGLANG = "sglang"
# Import names whose distribution is called something else (the common cases in SGLang's imports).
DISTRIBUTION_OF_IMPORT = {
    "PIL": "pillow", "yaml": "pyyaml", "cv2": "opencv-python", "sklearn": "scikit-learn", "zmq": "pyzmq",
    "google": "protobuf", "attr": "attrs", "dateutil": "python-dateutil", "sgl_kernel": "sglang-kernel",
    "deep_gemm": "sgl-deep-gemm", "deep_ep": "sgl-deep-ep", "flash_attn": "flash-attn", "cuda": "cuda-python",
    "pynvml": "nvidia-ml-py", "flashinfer": "flashinfer-python", "multipart": "python-multipart", "partial_json_parser": "partial-json-parser",
}


def declared_by_project(ctx: CheckContext) -> list[DeclaredRequirement]:
    return ctx.of_stack_files("declared-requirements", lambda c: declared_requirements(c.project.root))


def installed_by_project(ctx: CheckContext) -> list[DeclaredRequirement]:
    """What the project's shell scripts and Dockerfiles pip install (project/installs.py)."""
    return ctx.of_stack_files("installed-requirements", lambda c: installed_requirements(c.project.root))


def marked_by_project(ctx: CheckContext) -> list[DeclaredRequirement]:
    """The version markers of the project's Dockerfiles (project/installs.py version_markers)."""
    return ctx.of_stack_files("version-markers", lambda c: version_markers(c.project.root))


def pins_of_releases(ctx: CheckContext) -> tuple[ReleasePins | None, ReleasePins | None]:
    return ctx.of_releases("release-pins", lambda c: (release_pins(c.old.release.tree), release_pins(c.new.release.tree)))


def _versions(ctx: CheckContext) -> tuple[Version | None, Version | None]:
    return as_version(ctx.old.release.version or ""), as_version(ctx.new.release.version or "")


def sglang_extras(ctx: CheckContext) -> frozenset[str]:
    """The extras of SGLang the project installs (`sglang[diffusion]`): their pins apply too."""
    return frozenset(e for d in declared_by_project(ctx) if d.name == SGLANG for e in d.requirement.extras)


# -- SGC701 ---------------------------------------------------------------------------------

def agrees(project: SpecifierSet, upstream: SpecifierSet, marked: bool) -> bool | None:
    """Whether the project's specifier agrees with SGLang's; None when that cannot be told."""
    pinned = exact_version(upstream)
    mine = exact_version(project)
    if mine is not None and mine.local:  # `torch==2.11.0+cu129` is a build of SGLang's `torch==2.11.0`
        return upstream.contains(mine, prereleases=True)
    if pinned is not None:
        return project.contains(pinned, prereleases=True)
    if mine is not None:
        return upstream.contains(mine, prereleases=True)
    if marked:  # a line that says it follows SGLang's pin must say the same thing
        return set(project) == set(upstream)
    return None


def _spelled(specifier: SpecifierSet) -> str:
    version = exact_version(specifier)
    if version is not None:
        return str(version)
    return ",".join(sorted(str(s) for s in specifier)) or "(any version)"


def _mirror_outcomes(ctx: CheckContext) -> Iterator[tuple[DeclaredRequirement, str, str, bool]]:
    """(requirement, upstream spelling on old, on new, already disagreed on old) for pins that now disagree."""
    old_pins, new_pins = pins_of_releases(ctx)
    if old_pins is None or new_pins is None:
        return
    extras = sglang_extras(ctx)
    declared_all = (*declared_by_project(ctx), *installed_by_project(ctx))
    bumped = {str(v) for v in _versions(ctx) if v is not None}
    for declared in declared_all:
        if declared.name == SGLANG or declared.name not in old_pins.names() | new_pins.names():
            continue
        if _file_pins_another_release(declared_all, declared.path, bumped):
            continue  # the file's environment installs that release: its pins mirror that one's
        for environment in environments():
            if not applies(declared.requirement.marker, environment):
                continue
            olds = old_pins.matching(declared.name, environment, extras)
            news = new_pins.matching(declared.name, environment, extras)
            mine = declared.requirement.specifier
            verdict_old = [agrees(mine, u.specifier, declared.matches_stack) for u in olds]
            verdict_new = [agrees(mine, u.specifier, declared.matches_stack) for u in news]
            if not olds or not news or False not in verdict_new:
                continue
            broken_on_old = False in verdict_old or None in verdict_old
            spelled_old = "; ".join(_spelled(u.specifier) for u in olds)
            spelled_new = "; ".join(_spelled(u.specifier) for u in news)
            yield declared, spelled_old, spelled_new, broken_on_old
            break  # one report per line, on the first platform where it disagrees


def _file_pins_another_release(declared: tuple[DeclaredRequirement, ...], path: str, bumped: set[str]) -> bool:
    """Whether the file pins SGLang exactly to a release the bump neither leaves nor reaches
    (`requirements-rocm.txt` with `sglang==0.5.4` beside a 0.5.9 -> 0.5.10 bump)."""
    pins = {str(version) for d in declared if d.path == path and d.name == SGLANG
            and (version := exact_version(d.requirement.specifier)) is not None}
    return bool(pins) and not pins & bumped


@contract("SGC701", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def mirrored_pin_disagrees(ctx: CheckContext) -> Iterator[Diagnostic]:
    for declared, was, now, broken_on_old in _mirror_outcomes(ctx):
        if broken_on_old and not ctx.report_unresolved:
            continue
        yield finding_at("SGC701", declared.path, declared.line, declared.col, declared.name,
                         severity="info" if broken_on_old else None, pinned=without_marker(declared.requirement),
                         name=declared.requirement.name, change=f"{was} -> {now}" if was != now else f"{now} in both",
                         old=ctx.old_version,
                         new=ctx.new_version)


@fixes("SGC701")
def follow_mirrored_pin(diagnostic: Diagnostic, workspace) -> bool:
    """Move the pin at the finding to the new release's: an exact pin to its version, a range
    marked as following SGLang to SGLang's range. Left, with a note: pins that differ by
    platform, a local build (`+cu129`), and a pin that moves with others SGLang's change does
    not move too (torch's torchvision; an assert of its version)."""
    document = workspace.document(diagnostic.path)
    now = diagnostic.data["change"].rpartition(" -> ")[2]
    line = document.line(diagnostic.line) or ""
    found = edits.requirement_at(line, diagnostic.col - 1)
    if found is None or normalized(found[0]) != normalized(diagnostic.data["name"]):
        return False  # the line is not what the check read: leave it
    name, spec = found
    if ";" in now or now == "(any version)":
        document.note(diagnostic.line, diagnostic.col, "SGC701", f"sglang {diagnostic.data['new']} pins {name} "
                      f"differently per platform ({now}): choose the line's pin by hand")
        return False
    written = edits.exact_pin(spec.text)
    if written is not None and "+" in written:
        document.note(diagnostic.line, diagnostic.col, "SGC701", f"{code_span(name + spec.text)} is a local build "
                      f"(+{written.partition('+')[2]}): name the build of {now} and its index by hand")
        return False
    if _pins_hashes(document, diagnostic.line):
        _say_hashes_pinned(document, diagnostic, "SGC701", name)
        return False
    held = _held_with(diagnostic, workspace, document, name, written)
    if held:
        document.note(diagnostic.line, diagnostic.col, "SGC701", f"{name} moves with {held}: move them together "
                      f"by hand (this fix would edit {name} alone)")
        return False
    if written is not None and as_version(now) is not None:
        replacement = f"=={now}"
    else:
        replacement = edits.ordered_specifiers(now if as_version(now) is None else f"=={now}")
    return document.replace(diagnostic.line, spec.start, spec.end, replacement)


def _pins_hashes(document, number: int) -> bool:
    """Whether the requirement at line `number` carries `--hash` options (on it, or on the
    lines its backslashes continue it to): they are the digests of the old version's files,
    which pip then refuses to install the new one against."""
    line = document.line(number) or ""
    while True:
        if "--hash" in line.partition(" #")[0]:
            return True
        if not line.endswith("\\"):
            return False
        number += 1
        line = document.line(number) or ""


def _say_hashes_pinned(document, diagnostic: Diagnostic, code: str, name: str) -> None:
    document.note(diagnostic.line, diagnostic.col, code, f"{name}'s requirement pins the hashes of the files of "
                  "the version it names (`--hash`): regenerate the file for the new version (`pip-compile "
                  "--generate-hashes`), as a version moved alone would fail `pip install`")


def _findings_of(workspace, code: str) -> list[Diagnostic]:
    """The round's findings of `code` (the places its fixes move too), read once a round: each fix
    read every finding again, 8,000 files of one fix each 58 s (campaign 20, R12)."""
    found = workspace.result.diagnostics if workspace.result is not None else []
    return _derived(workspace, ("findings", code), lambda: [d for d in found if d.code == code])


def _held_with(diagnostic: Diagnostic, workspace, document, name: str, written: str | None) -> str:
    """What else in the finding's file names the build being replaced and is not fixed with it:
    an exact pin of a distribution released with it (torchvision beside torch) that no SGC701
    finding moves, or another line naming the pinned version with the package (an assert of
    `torch.__version__`). "" when nothing does."""
    fixed_lines = _derived(workspace, ("fixed-lines", "SGC701"), lambda: {
        (d.path, d.line, normalized(d.symbol or "")) for d in _findings_of(workspace, "SGC701")})
    family = edits.moves_with(normalized(name))
    module = normalized(name).replace("-", "_")
    held = []
    for number, text in enumerate(document.bare_lines(), start=1):
        for other, spec in edits.requirements_in(text):
            other = normalized(other)
            if other in family and edits.exact_pin(spec.text) is not None \
                    and (diagnostic.path, number, other) not in fixed_lines:
                held.append(f"{code_span(other + spec.text)} (line {number})")
        if written and number != diagnostic.line and module in text and edits.names_version(text, written) \
                and not edits.requirements_in(text):
            held.append(f"line {number}'s check of {written}")
        commit = edits.commit_setting(text)
        if commit:  # the file builds SGLang from that commit, which no fix can move (slime's build_conda.sh)
            held.append(f"{commit} (line {number}), the commit of SGLang this file builds")
    return ", ".join(held[:3])


# -- SGC702 ---------------------------------------------------------------------------------

# Where an older release than the pin is still a setting (an image tag, a version variable, a
# build script's tag), not history: docs and changelogs name old releases on purpose.
SETTING_KINDS = {"image tag", "version variable", "build setting", "pin", "git ref"}
DOC_SUFFIXES = (".md", ".mdx", ".rst", ".txt", ".adoc")
# Tags of builds for other hardware (`v0.5.14-rocm700-mi35x`) follow their own release schedule.
OTHER_PLATFORM = re.compile(r"(?i)rocm|mi\d{3}|npu|ascend|xpu|hpu|gaudi|musa|\bcpu\b")


def all_release_mentions(ctx: CheckContext) -> list[ReleaseMention]:
    """Releases named in the stack files and, as data, in Python build scripts."""
    scripts = ctx.project.each_file("release-mentions", script_mentions, may_name_release, images)
    return [*ctx.of_stack_files("stack-release-mentions", lambda c: release_mentions(c.project.root)),
            *(ReleaseMention(*fields) for fields in scripts)]


def _lags_behind(mention: ReleaseMention, named: Version, old: Version) -> bool:
    """An older release than the pin, still set where the pin's own builds are set (not in
    docs, not for other hardware: a `-rocm700` tag, a `Dockerfile.gb10` variant)."""
    suffix = mention.version.partition("-")[2]
    variant = images.is_dockerfile(PurePosixPath(mention.path).name) and not images.is_main_dockerfile(mention.path)
    return (named < old and not names_release(named, old) and mention.kind in SETTING_KINDS and not variant
            and not mention.path.endswith(DOC_SUFFIXES) and not OTHER_PLATFORM.search(suffix))


def _named_after(path: str, release: Version) -> bool:
    """Does a file's name name the release (`sglang-0.5.20.txt`, `requirements_0_5_20.txt`, `v0520`)?"""
    numbers = [str(part) for part in release.release]
    stem = PurePosixPath(path).name
    return any(separator.join(numbers) in stem for separator in (".", "_", "-", ""))


def _pinned_per_release(ctx: CheckContext) -> set[str]:
    """The requirement files a project that serves several releases keeps one per release (or
    per torch build, each pinning its own release) on purpose: each pins one SGLang release
    exactly, and they pin two or more. They are that release's, not a pin the bump forgot:
    those named after their release, and all of them where the code chooses by release
    (project/serving.py). A main file and a lagging variant (`requirements-rocm.txt`) are not."""
    pinned: dict[str, set[Version | None]] = {}
    for declared in declared_by_project(ctx):
        if declared.name == SGLANG:
            pinned.setdefault(declared.path, set()).add(exact_version(declared.requirement.specifier))
    for mention in ctx.shared("release-mentions", all_release_mentions):  # `requirements_torch280.txt` too
        name = PurePosixPath(mention.path).name
        if mention.kind == "pin" and name.endswith(".txt") and name.startswith(("requirements", "constraints")):
            pinned.setdefault(mention.path, set()).add(version_in_tag(mention.version))
    single = {path: next(iter(versions)) for path, versions in pinned.items()
              if len(versions) == 1 and None not in versions}
    if len(set(single.values())) < 2:
        return set()
    chooses = ctx.serving is not None and bool(ctx.serving.served)
    return {path for path, release in single.items() if chooses or _named_after(path, release)}


# Whether the code chooses by release (ctx.serving) is the whole project's: checked at every edit.
@contract("SGC702", reads=Reads.WHOLE_PROJECT, process=Process.COPY)
def old_release_still_named(ctx: CheckContext) -> Iterator[Diagnostic]:
    old, new = _versions(ctx)
    if old is None or new is None or old == new:
        return
    replaced = "the release being replaced"
    per_release = _pinned_per_release(ctx)
    for declared in declared_by_project(ctx):
        if declared.path in per_release:
            continue
        specifier = declared.requirement.specifier
        if declared.name == SGLANG and specifier.contains(old, prereleases=True) and not specifier.contains(new, prereleases=True):
            yield finding_at("SGC702", declared.path, declared.line, declared.col, SGLANG,
                             written=without_marker(declared.requirement), what="the SGLang requirement",
                             named=ctx.old_version, which=replaced, old=ctx.old_version, new=ctx.new_version)
    for mention in ctx.shared("release-mentions", all_release_mentions):
        named = version_in_tag(mention.version)
        if named is None or named == new or mention.path in per_release:
            continue
        if names_release(named, old):
            which = replaced
        elif _lags_behind(mention, named, old):
            which = f"older even than {ctx.old_version}, {replaced}"
        else:
            continue
        yield finding_at("SGC702", mention.path, mention.line, mention.col, SGLANG,
                         written=mention.written, what=f"this {mention.kind}", named=str(named), which=which,
                         old=ctx.old_version, new=ctx.new_version)


@fixes("SGC702")
def name_new_release(diagnostic: Diagnostic, workspace) -> bool:
    """Name the new release where the finding points: an exact `sglang==A` requirement becomes
    `sglang==B`, a tag or version `vA.postN-cu129` becomes `vB-cu129` (its suffix kept). A range
    and an image pinned by digest are left (the digest names the old image's bytes)."""
    document = workspace.document(diagnostic.path)
    line = document.line(diagnostic.line) or ""
    start = diagnostic.col - 1
    new, old = diagnostic.data["new"], as_version(diagnostic.data["old"])
    applied = _stack_applied(workspace, new)
    if applied:
        document.note(diagnostic.line, diagnostic.col, "SGC702", f"the build applies the patch stack of {applied} "
                      f"to this release: rebase it for {new} first (`sglang-contracts patch rebase --new {new}`, or "
                      "`sglang-contracts bump`), then name the new release")
        return False
    requirement = edits.requirement_at(line, start)
    if requirement is not None and normalized(requirement[0]) == SGLANG:
        spec = requirement[1]
        if edits.exact_pin(spec.text) is None:
            document.note(diagnostic.line, diagnostic.col, "SGC702",
                          f"{code_span(spec.text)} is a range: choose the bound that admits {new} by hand")
            return False
        if _pins_hashes(document, diagnostic.line):
            _say_hashes_pinned(document, diagnostic, "SGC702", SGLANG)
            return False
        return document.replace(diagnostic.line, spec.start, spec.end, f"=={new}")
    number = edits.version_at(line, start)
    named = as_version(number.text) if number else None
    if number is None or named is None or old is None or not names_release(named, old):
        return False  # the line is not what the check read: leave it
    suffix = edits.tag_suffix(line, number.end)
    if not edits.PLAIN_TAG_SUFFIX.fullmatch(suffix.partition("@")[0]):
        document.note(diagnostic.line, diagnostic.col, "SGC702", f"{code_span(line[start:number.end] + suffix)}"
                      " is a dated or platform build: name the new build's tag by hand (its shape may not exist "
                      f"for {new})")
        return False
    commit = _derived(workspace, ("commit-setting", diagnostic.path), lambda: next(
        (name for name in map(edits.commit_setting, document.bare_lines()) if name), None))
    if commit is not None:
        document.note(diagnostic.line, diagnostic.col, "SGC702", f"{commit} names the commit of the "
                      f"release being replaced, which moves with it: set both by hand (the commit of {new} is "
                      "known only from a clone: --sglang-repo)")
        return False
    blocks = _install_blocks_held(diagnostic, workspace)
    if blocks:
        document.note(diagnostic.line, diagnostic.col, "SGC702", f"the image installs {blocks} below what sglang {new} "
                      "requires, in blocks that move together: drop or move them with the release, by hand")
        return False
    held = _derived(workspace, ("settings-left", diagnostic.path, str(old)),
                    lambda: _settings_left(diagnostic, workspace, document, old))
    if held:
        document.note(diagnostic.line, diagnostic.col, "SGC702", f"{held} names the same release and moves with it: "
                      "set them together by hand (this fix would edit one)")
        return False
    named_path = _names_a_path(line, workspace, document)
    folder = _folder_named(workspace.root, line[start:number.end] + suffix) if named_path else None
    if folder is not None and not (folder.parent / (line[start:number.start] + new + suffix)).exists():
        document.note(diagnostic.line, diagnostic.col, "SGC702", f"{code_span(folder.relative_to(workspace.root).as_posix())}"
                      f" is named by this value, and no folder for {new} is beside it: make it first "
                      "(`sglang-contracts patch rebase`), then name it")
        return False
    after = re.match(r"[\w.+-]*@sha256:", line[number.end:])
    if after:
        document.note(diagnostic.line, diagnostic.col, "SGC702", "the image is pinned by digest (@sha256:), which "
                      "cannot be resolved offline: name the new image's tag and digest by hand")
        return False
    return document.replace(diagnostic.line, number.start, number.end, new)


def _derived(workspace, key: tuple, compute: Callable[[], Any]) -> Any:
    """What a file's fixes read of its other lines, read once per run: the lines they read are
    none that an SGC702 fix edits (its settings naming the commit or the release apart from the
    findings' own lines), and a Dockerfile of thousands of stages was rescanned at each of its
    fixes (campaign 11: 4,000 stages, 26 s)."""
    if key not in workspace.derived:
        workspace.derived[key] = compute()
    return workspace.derived[key]


def _stack_applied(workspace, new: str) -> str:
    """Where the build applies a patch stack to SGLang (`docker/Dockerfile:140`) when its patches
    are not in a folder named for the new release: moving the release under it alone breaks the
    build (slime's `latest/` on a v0.5.23 image: 62 of 84 hunks fail); "" when none is."""
    if "patch-stacks" not in workspace.derived:
        workspace.derived["patch-stacks"] = patch_stacks(workspace.root)
    wanted, found = as_version(new), workspace.derived["patch-stacks"]
    for stack in found.stacks if not found.guessed else ():
        if stack.source == NAME_ORDER:  # no build applies it (miles' npu_patch/, applied by hand elsewhere)
            continue
        folders = {PurePosixPath(path).parent.name for path in stack.patches}
        if stack.patches and not any(version_in_tag(folder) == wanted for folder in folders):
            return stack.source
    return ""


def _install_blocks_held(diagnostic: Diagnostic, workspace) -> str:
    """The packages the finding's file installs below the new release's closure (SGC711) in a
    command that names their version again, which no fix moves: miles' force-installs of
    flashinfer 0.6.15.post1 and cutlass-dsl 4.6.2 under a base image that moved to 0.5.23 raise
    at the engine's start. "" when there are none."""
    # the finding's own file, and the Dockerfiles the image is built from (a build script's tag names that image)
    held = set()
    for d in _findings_of(workspace, "SGC711"):
        if not (d.path == diagnostic.path or images.is_dockerfile(PurePosixPath(d.path).name)):
            continue
        try:
            lines = workspace.document(d.path).bare_lines()
        except NotRewritable:  # a Dockerfile no fix may open (a link out): its blocks are not known
            continue
        if edits.held_in_command(lines, d.line - 1, d.col - 1):
            held.add(f"{d.symbol} ({d.path}:{d.line})")
    return ", ".join(sorted(held)[:3])


def _settings_left(diagnostic: Diagnostic, workspace, document, old: Version) -> str:
    """Another setting of the finding's file that names the release being replaced and that no
    SGC702 finding moves (`PATCH_VERSION=v0.5.15.post1` beside `SGLANG_VERSION`), as `NAME (line N)`."""
    fixed = _derived(workspace, ("fixed-places", "SGC702"),
                     lambda: {(d.path, d.line) for d in _findings_of(workspace, "SGC702")})
    for number, text in enumerate(document.bare_lines(), start=1):
        match = edits.SETTING.match(text)
        named = version_in_tag(match.group("value")) if match else None
        if named is not None and names_release(named, old) and (diagnostic.path, number) not in fixed:
            return f"{match.group('name')} (line {number})"
    return ""


def _names_a_path(line: str, workspace, document) -> bool:
    """Is the line a setting whose variable the file uses as a part of a path
    (`PATCH_VERSION=v0.5.15.post1`, then `docker/patch/$PATCH_VERSION/`)? Once per variable and
    file (`pip install x==1` reads as a setting of `pip`): the fixes edit release numbers only,
    never a `$NAME` or the `/` beside one."""
    setting = edits.SETTING.match(line)
    return setting is not None and _derived(workspace, ("used-in-a-path", document.relpath, setting.group("name")),
                                            lambda: edits.used_in_a_path(setting.group("name"), document.text))


def _folder_named(root, name: str):
    """A folder of the project named exactly `name` (`docker/patch/v0.5.15.post1`), or None: a
    value that names one is a path, and its new value must name a folder that exists."""
    if not name or "/" in name or name in (".", ".."):
        return None
    for folder, _ in project_folders(os.fspath(root)):
        if os.path.basename(folder) == name:
            return Path(folder)
    return None


# -- SGC703, SGC704 ---------------------------------------------------------------------------

def _prose(ctx: CheckContext):
    return ctx.shared("prose", lambda c: prose_notes(c.project))


@contract("SGC703", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def version_named_in_code_prose(ctx: CheckContext) -> Iterator[Diagnostic]:
    old, new = _versions(ctx)
    if old is None or new is None or old == new:
        return
    for note in _prose(ctx)[0]:
        named = as_version(note.text)
        if not note.in_package or named is None or named > new or names_release(named, new):
            continue  # a later release, or the one the project moves to: not made stale by this bump
        stale_before = named < old and not names_release(named, old)  # stale before this bump already
        if stale_before and not ctx.report_unresolved:
            continue
        yield finding_at("SGC703", note.path, note.line, note.col, SGLANG,
                         severity="info" if stale_before else None, where=note.where, named=note.text,
                         old=ctx.old_version, new=ctx.new_version)


def _condition_holds(requirement, release_version: Version | None, pins: ReleasePins | None,
                     extras: frozenset[str]) -> tuple[bool | None, str]:
    """(does it hold, the evidence) for a removal condition on one release."""
    name = normalized(requirement.name)
    if name == SGLANG:
        version = release_version
    else:
        version = pins.exact_pin(name, extras) if pins is not None else None
    if version is None:
        return None, ""
    return requirement.specifier.contains(version, prereleases=True), f"{requirement.name} {version}"


@contract("SGC704", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def compat_overlay_removable(ctx: CheckContext) -> Iterator[Diagnostic]:
    old, new = _versions(ctx)
    old_pins, new_pins = pins_of_releases(ctx)
    extras = sglang_extras(ctx)
    for note in _prose(ctx)[1]:
        requirement = removal_requirement(note.text)
        if requirement is None:
            continue
        holds_new, evidence = _condition_holds(requirement, new, new_pins, extras)
        holds_old, _ = _condition_holds(requirement, old, old_pins, extras)
        if not holds_new:
            continue
        if holds_old and not ctx.report_unresolved:
            continue
        yield finding_at("SGC704", note.path, note.line, note.col, str(requirement),
                         severity="info" if holds_old else None, condition=str(requirement), evidence=evidence,
                         old=ctx.old_version, new=ctx.new_version)


# -- SGC705 ---------------------------------------------------------------------------------

def distribution_of(top: str) -> str:
    """The distribution an import's top-level name is installed by (`PIL` -> pillow)."""
    return normalized(DISTRIBUTION_OF_IMPORT.get(top, top))


def _dependency_lists(ctx: CheckContext, pins: ReleasePins | None) -> list[str]:
    """Requirement files below the root that install SGLang's own requirements themselves
    (miles' tests/ci/requirements-ci-cpu.txt, for a CI that installs sglang without them):
    none names sglang, it lists three or more, and SGLang requires three in four of them."""
    if pins is None:
        return []
    required = pins.names()
    by_file: dict[str, list[str]] = {}
    for declared in _declared_below(ctx):
        by_file.setdefault(declared.path, []).append(declared.name)
    return sorted(path for path, names in by_file.items()
                  if SGLANG not in names and len(names) >= 3 and 4 * sum(n in required for n in names) >= 3 * len(names))


def _declared_below(ctx: CheckContext) -> list[DeclaredRequirement]:
    return ctx.of_stack_files("requirements-below", lambda c: requirements_below(c.project.root))


def _installed_by_sglang(pins: ReleasePins | None, distribution: str, extras: frozenset[str]) -> bool:
    return pins is not None and any(pins.matching(distribution, environment, extras) for environment in environments())


# imports_anywhere: one finding per package, at the first import anywhere that reaches it.
@contract("SGC705", reads=Reads.IMPORTS_ANYWHERE, process=Process.COPY)
def new_hard_dependency(ctx: CheckContext) -> Iterator[Diagnostic]:
    """One finding per package, at the first import that now reaches it: the fix (declare it,
    or list it where SGLang's requirements are installed) is one line, wherever it is imported."""
    declared = {d.name for d in (*declared_by_project(ctx), *_declared_below(ctx))}
    old_pins, new_pins = pins_of_releases(ctx)
    extras = sglang_extras(ctx)
    lists = _dependency_lists(ctx, old_pins)
    old_graph, new_graph = ctx.of_releases("import-graphs", lambda c: (ImportGraph(c.old), ImportGraph(c.new)))

    def newly_reached(facts: FileFacts) -> Iterator[tuple[str, Any, str]]:
        """(package, import, module) of each import of the file that now reaches a package it did not."""
        for fact in facts.imports:
            if not is_upstream(fact.module) or fact.guarded or fact.type_checking:
                continue
            module = fact.target if fact.name and ctx.new.module_exists(fact.target) else fact.module
            if not (ctx.old.module_exists(module) and ctx.new.module_exists(module)):
                continue  # a module gone or new is another rule's business
            for top in new_graph.packages_reached(module) - old_graph.packages_reached(module):
                if distribution_of(top) not in declared:
                    yield top, fact, module

    # A re-check of a few files reports only in them: when none of their imports reaches a new
    # package, no finding can be theirs, and the other files' imports are not followed.
    if ctx.checked is not None and not any(next(newly_reached(facts), None) for facts in ctx.checked_files()):
        return
    sites: dict[str, list[tuple[str, Any, str]]] = {}  # package -> (path, import, module) of each import reaching it
    for facts in sorted(ctx.project.files.values(), key=lambda f: f.path):
        for top, fact, module in newly_reached(facts):
            sites.setdefault(top, []).append((facts.path, fact, module))
    old_graph.save()
    new_graph.save()
    for top, found in sorted(sites.items()):
        required = _installed_by_sglang(new_pins, distribution_of(top), extras)
        if required and not lists:
            continue  # SGLang's own requirement, installed with it: not news
        direct = [site for site in found if top in new_graph.direct(site[2])[1]]
        if not required and new_pins is not None:
            # Reached through other modules, a package SGLang does not name is one its requirements
            # bring (huggingface_hub with transformers) far more often than a missing one: only
            # the module the project imports is taken at its word.
            found = direct
            if not found:
                continue
        if required:
            note = f"sglang {ctx.new_version} requires it, but {', '.join(lists)} installs SGLang's requirements without it"
        else:
            note = f"sglang {ctx.new_version} does not declare it"
        files = len({path for path, *_ in found}) - 1
        if len(found) > 1:
            note += f" (also reached from {len(found) - 1} other imports" + (f" in {files} other files)" if files else ")")
        path, fact, module = found[0]
        chain = new_graph.chain(module, top)
        through = f" (through {' -> '.join(chain[1:])})" if len(chain) > 1 else ""
        yield finding_at("SGC705", path, fact.module_position.line, fact.module_position.col,
                         module, module=module, package=top, through=through, note=note,
                         old=ctx.old_version, new=ctx.new_version)


# -- SGC708 ---------------------------------------------------------------------------------

PYTHON_MINORS = range(6, 20)  # Python 3.6 to 3.19: the versions a requires-python is probed at


def _spans(minors: list[int]) -> str:
    """`3.10`, `3.10 and 3.11`, `3.14 and later` for the minors of Python 3 listed."""
    if minors[-1] == PYTHON_MINORS[-1]:
        return f"3.{minors[0]} and later"
    spelled = [f"3.{minor}" for minor in minors]
    return spelled[0] if len(spelled) == 1 else ", ".join(spelled[:-1]) + f" and {spelled[-1]}"


@contract("SGC708", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def python_no_longer_supported(ctx: CheckContext) -> Iterator[Diagnostic]:
    declared = ctx.of_stack_files("declared-python", lambda c: declared_python(c.project.root))
    old_pins, new_pins = pins_of_releases(ctx)
    now = new_pins.requires_python if new_pins is not None else None
    if declared is None or now is None:
        return
    was = old_pins.requires_python if old_pins is not None else None
    dropped = [minor for minor in PYTHON_MINORS if declared.specifier.contains(f"3.{minor}")
               and not now.contains(f"3.{minor}") and (was is None or was.contains(f"3.{minor}"))]
    if dropped:
        yield finding_at("SGC708", "pyproject.toml", declared.line, declared.col, "requires-python",
                         declared=declared.spelled, pythons=_spans(dropped), now=str(now),
                         was=code_span(str(was)) if was is not None else "no bound", old=ctx.old_version, new=ctx.new_version,
                         raised_to=_raised_floor(declared, now, dropped))


FLOOR = re.compile(r">=\s*3\.(\d+)(?:\.\d+)?")


def _raised_floor(declared, now, dropped: list[int]) -> str | None:
    """`>=3.11,<3.13` for `>=3.10,<3.13` where the new release dropped 3.10: the declared floor
    raised to the lowest Python both admit; None where the dropped ones are not all below it or
    the floor is no single `>=3.N` clause."""
    kept = [minor for minor in PYTHON_MINORS
            if declared.specifier.contains(f"3.{minor}") and now.contains(f"3.{minor}")]
    floors = FLOOR.findall(declared.spelled)
    if not kept or len(floors) != 1 or max(dropped) > kept[0]:
        return None
    return FLOOR.sub(f">=3.{kept[0]}", declared.spelled)


@fixes("SGC708")
def raise_python_floor(diagnostic: Diagnostic, workspace) -> bool:
    """requires-python's floor raised to the lowest Python both it and the new release admit."""
    document = workspace.document(diagnostic.path)
    raised, declared = diagnostic.data.get("raised_to"), diagnostic.data["declared"]
    line = document.line(diagnostic.line) or ""
    start = line.find(declared, diagnostic.col - 1)
    if not raised or start < 0:
        document.note(diagnostic.line, diagnostic.col, "SGC708", "the floor is no single `>=3.N` below the Pythons "
                      "the new release keeps: raise requires-python by hand")
        return False
    return document.replace(diagnostic.line, start, start + len(declared), raised)


@contract("SGC715", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def floor_below_extras_floor(ctx: CheckContext) -> Iterator[Diagnostic]:
    """A package the project installs itself, with a floor the new release raised past in an
    extra of SGLang the project does not install (verl's `torch-memory-saver>=0.0.5` beside
    sglang 0.4.8's `torch_memory_saver>=0.0.8`, asked only by its `torch-memory-saver` extra)."""
    old_pins, new_pins = pins_of_releases(ctx)
    if old_pins is None or new_pins is None:
        return
    requested = sglang_extras(ctx)
    for declared in (*declared_by_project(ctx), *installed_by_project(ctx)):
        if declared.name == SGLANG or declared.marker:
            continue
        raised = _extras_floor_raised(declared, old_pins, new_pins, requested)
        if raised is not None:
            new_floor, old_floor, extras = raised
            yield finding_at("SGC715", declared.path, declared.line, declared.col, declared.name,
                             pinned=without_marker(declared.requirement), name=declared.requirement.name,
                             floor=str(new_floor), was=str(old_floor) if old_floor else "no floor",
                             extras=", ".join(extras), old=ctx.old_version, new=ctx.new_version)


def _floor(specifiers) -> Version | None:
    """The lowest version a specifier set admits by its `>=`, `>`, `==` or `~=` clauses."""
    floors = [as_version(s.version) for s in specifiers if s.operator in (">=", ">", "==", "~=")]
    return max((f for f in floors if f is not None), default=None)


def _highest_floor(requirements: list[Requirement]) -> Version | None:
    return max((floor for r in requirements if (floor := _floor(r.specifier)) is not None), default=None)


def _asked_by_extras(pins: ReleasePins, name: str, environment: dict[str, str]) -> list[Requirement]:
    """The release's requirements on `name` that one of its extras asks."""
    every = frozenset(offered_extras(pins.requirements))
    return [r for r in pins.matching(name, environment, every) if r.marker is not None]


def _installed_apart(declared: DeclaredRequirement, pins: ReleasePins, requested: frozenset[str],
                     environment: dict[str, str]) -> bool:
    """Does the project install the package on this platform with none of its SGLang extras
    asking it (those bring SGLang's own pin, which SGC701 and SGC711 judge)?"""
    return applies(declared.requirement.marker, environment) and not pins.matching(declared.name, environment, requested)


def _extras_floor_raised(declared: DeclaredRequirement, old_pins: ReleasePins, new_pins: ReleasePins,
                         requested: frozenset[str]) -> tuple[Version, Version | None, list[str]] | None:
    """(the new floor, the old one, the extras asking it) when only extras the project does not
    install ask the package, the new release's floor is above the project's and the old one's was not."""
    environment = environments()[0]
    if not _installed_apart(declared, new_pins, requested, environment):
        return None
    asking = _asked_by_extras(new_pins, declared.name, environment)
    new_floor, mine = _highest_floor(asking), _floor(declared.requirement.specifier)
    if new_floor is None or (mine is not None and mine >= new_floor):
        return None
    old_floor = _highest_floor(_asked_by_extras(old_pins, declared.name, environment))
    if old_floor is not None and (mine is None or old_floor > mine):
        return None  # already above the project's floor on the old release: not the bump's doing
    extras = sorted({extra for r in asking for extra in EXTRA_TEST.findall(str(r.marker))})
    return new_floor, old_floor, extras
