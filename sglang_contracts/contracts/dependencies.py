"""Dependency-closure contracts (SGC711, SGC712): the project's pins and install lines held
against what the new release brings, SGLang's pins and their pins in turn (closure/).

The closures are computed once per run, before the checks (check/runner.py calls
`compute_closures`), from the package index's metadata and the tool's cache: the checks only
read them, and a run whose index cannot be reached checks against what is known.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from packaging.requirements import Requirement
from packaging.version import Version

from sglang_contracts.closure.delta import ClosureDelta, closure_delta
from sglang_contracts.closure.flavour import PYTORCH_BUILDS, PYTORCH_INDEX, CudaBuild, build_of, cuda_major
from sglang_contracts.closure.source import NO_INDEX, MetadataSource, absence_expired
from sglang_contracts.closure.walk import ROOT, Closure, Need, platform_name, walk
from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.contracts.stack import (
    DOC_SUFFIXES, OTHER_PLATFORM, SGLANG, all_release_mentions, declared_by_project, distribution_of,
    installed_by_project, marked_by_project, pins_of_releases, sglang_extras,
)
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.infra.cache import RecordCache, code_fingerprint
from sglang_contracts.infra.shapes import Table, TableOf
from sglang_contracts.project import images, version_asserts
from sglang_contracts.project.platforms import build_environments
from sglang_contracts.project.version_asserts import file_version_asserts, may_assert_version
from sglang_contracts.infra.boundary import Problem, note, read_project_text
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.project.stack import DeclaredRequirement, ReleaseMention, says_it_matches_stack
from sglang_contracts.fix import text as edits
from sglang_contracts.requirements import (
    applies, as_version, environments, exact_version, names_release, normalized, parse_specifier, version_in_tag,
    without_marker,
)
from sglang_contracts.upstream.pins import ReleasePins

CLOSURES = "dependency-closures"
INDEX_SETTING = "package-index"
INDEX_VARIABLE = "SGLANG_CONTRACTS_PACKAGE_INDEX"  # the setting's default, for a session (the tests': none)
BUILD_INDEX_SETTING = "cuda-build-index"  # PyTorch's index of a CUDA build; `{cuda}` names it (`cu129`)
BUILD_INDEX_VARIABLE = "SGLANG_CONTRACTS_CUDA_BUILD_INDEX"
MOST_PROJECT_PINS = 200  # the project's own exact pins whose requirements are read


@dataclass
class BumpClosures:
    old: dict[str, Closure]  # platform -> the old release's closure
    new: dict[str, Closure]
    pinned: dict[tuple[str, str], ReleasePins | None]  # (name, version) of a project pin -> its own requirements
    delta: ClosureDelta


def index_setting(ctx: CheckContext) -> str | None:
    """The index the closure reads: the `package-index` setting (a URL, a folder relative to the
    project's root, or "none"), else $SGLANG_CONTRACTS_PACKAGE_INDEX, else pip's."""
    given = _given(ctx, INDEX_SETTING, INDEX_VARIABLE)
    if given and given != NO_INDEX and "://" not in given:
        return _index_folder(ctx.project.root, given, INDEX_SETTING)
    return given


def _given(ctx: CheckContext, setting: str, variable: str) -> str | None:
    return ctx.settings.get(setting) or os.environ.get(variable) or None


def _projects_own(given: str | None) -> bool:
    """Whether an index setting names a folder of the project (a relative one: the
    configuration's, a pull request's text), whose metadata is not cached (closure/source.py)."""
    return bool(given) and given != NO_INDEX and "://" not in given and not Path(given).expanduser().is_absolute()


def build_index_setting(ctx: CheckContext, setting: str | None) -> str:
    """Where the CUDA build's own PyTorch packages are read: the `cuda-build-index` setting,
    else $SGLANG_CONTRACTS_CUDA_BUILD_INDEX, else PyTorch's; the cache only when the package
    index is "none"."""
    given = _given(ctx, BUILD_INDEX_SETTING, BUILD_INDEX_VARIABLE)
    if setting == NO_INDEX:
        return NO_INDEX
    if given and given != NO_INDEX and "://" not in given:
        return _index_folder(ctx.project.root, given, BUILD_INDEX_SETTING)
    return given or PYTORCH_INDEX


def _index_folder(root: Path, given: str, setting: str) -> str:
    """An index folder: as given when absolute (the command line's, made absolute there, or the
    user's environment), else below the project's root, where the configuration (a pull
    request's text) names it. A folder of the project that is a link out of it is not read
    (campaign 9, R19): the cache only, and an SGC000 saying why."""
    folder = root / Path(given).expanduser()
    if Path(given).expanduser().is_absolute():
        return str(folder)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(folder)]) != real_root:
        note(Problem(Path(given).as_posix(), 1, 1, f"reading the {setting} setting's folder",
                     "a link out of the project, not read", internal=False))
        return NO_INDEX
    return str(folder)


def cuda_build(ctx: CheckContext) -> CudaBuild | None:
    """The CUDA build the project installs: the build suffix of the pinned or new release's
    image tag where the project sets the release it builds on (`ARG SGLANG_IMAGE_TAG=v0.5.22-cu129`),
    its main Dockerfile's when it names one, else every setting's when they agree; else the
    local version of its own torch pin (`torch==2.9.1+cu129`). None when a main Dockerfile's tag
    names no build (miles' `v0.5.16`, its `-cu129` a variant's in build.py), or settings disagree:
    the release's own build, as its wheel says."""
    releases = [release for release in map(as_version, (ctx.old_version, ctx.new_version)) if release is not None]
    settings = list(_release_settings(ctx, releases))
    chosen = [item for item in settings if images.is_main_dockerfile(item[0].path)] or settings
    if not chosen:
        return _pinned_build(ctx)
    mention, build = chosen[0]
    agreed = build is not None and all(other == build for _, other in chosen)
    return CudaBuild(build, f"{mention.path}:{mention.line}") if agreed else None


def _pinned_build(ctx: CheckContext) -> CudaBuild | None:
    """The CUDA build the local version of the project's own torch pin names (`+cu129`)."""
    for declared in (*declared_by_project(ctx), *installed_by_project(ctx)):
        version = exact_version(declared.requirement.specifier)
        build = build_of(f"+{version.local}") if version is not None and version.local else None
        if declared.name in PYTORCH_BUILDS and build is not None:
            return CudaBuild(build, f"{declared.path}:{declared.line}")
    return None


def _release_settings(ctx: CheckContext, releases: list[Version]) -> Iterator[tuple[ReleaseMention, str | None]]:
    """Where the project sets a bumped release as an image tag (not docs, not another
    platform's `-rocm700` tag), with the CUDA build the tag names."""
    for mention in all_release_mentions(ctx):
        named = version_in_tag(mention.version)
        suffix = mention.version.partition("-")[2]
        if mention.kind in ("image tag", "version variable", "build setting") and named is not None \
                and not mention.path.endswith(DOC_SUFFIXES) and not OTHER_PLATFORM.search(suffix) \
                and any(names_release(named, release) for release in releases):
            yield mention, build_of(suffix)


def compute_closures(ctx: CheckContext, cache: RecordCache) -> BumpClosures | None:
    """The closures of both releases, kept with what the run reads of the stack files."""
    return ctx.of_stack_files(CLOSURES, lambda c: _computed(c, cache))


def closures(ctx: CheckContext) -> BumpClosures | None:
    """What compute_closures computed for this run (None when it was not asked)."""
    return ctx.of_stack_files(CLOSURES, lambda c: None)


def _exact_project_pins(ctx: CheckContext) -> list[tuple[str, str]]:
    """(name, version) of the project's exact pins that the index can hold: no local version
    (`+cu129`: which build is the project's choice), but PyTorch's own builds, whose public
    version's requirements are read (`torchvision==0.26.0+cu129` asks torch 2.11.0 as 0.26.0 does)."""
    found = []
    for declared in (*declared_by_project(ctx), *installed_by_project(ctx)):
        version = _readable_version(declared)
        if declared.name != SGLANG and version is not None:
            found.append((declared.name, version))
    return list(dict.fromkeys(found))[:MOST_PROJECT_PINS]


def _readable_version(declared: DeclaredRequirement) -> str | None:
    """The version of an exact pin whose requirements the index holds (see _exact_project_pins)."""
    version = exact_version(declared.requirement.specifier)
    if version is None or (version.local and declared.name not in PYTORCH_BUILDS):
        return None
    return version.public


def _pair_key(old_pins: ReleasePins, new_pins: ReleasePins, extras: frozenset[str], platforms: list[str],
              index: list[str | None], build: str | None = None) -> str:
    """The closures' record: by both releases' requirements as written (not by their names: a
    directory's release may change), the extras, the platforms, the index (the setting, and
    the index whose metadata records it read) and this code."""
    import sglang_contracts.closure.delta as delta_module
    import sglang_contracts.closure.walk as walk_module

    releases = [[sorted(map(str, pins.requirements)), str(pins.requires_python)] for pins in (old_pins, new_pins)]
    import sglang_contracts.closure.flavour as flavour_module

    text = json.dumps([code_fingerprint(walk_module, delta_module, flavour_module), releases, sorted(extras), platforms,
                       index, build])
    return hashlib.sha256(text.encode()).hexdigest()


# The closures of both releases, and until when they hold (None: for good): an index's absence
# of a package's metadata is believed for its life only (closure/source.py)
PAIR_RECORD = Table(old=TableOf(dict), new=TableOf(dict), until=(float, None))


def walked_closures(cache: RecordCache, key: str, old_pins: ReleasePins, new_pins: ReleasePins, extras: frozenset[str],
                    environments_built: list[dict[str, str]], source: MetadataSource, build: CudaBuild | None = None,
                    build_source: MetadataSource | None = None) -> tuple[dict[str, Closure], dict[str, Closure]]:
    """Both releases' closures on each platform: from their record when one was kept (reading
    each package's metadata record again cost a third of a second), else walked. A closure
    read from a folder of the project is never kept (closure/source.py), and one that an index's
    absence of some metadata cut short holds as long as the absence is believed."""
    shared = source.shares and (build_source is None or build_source.shares)
    kept = cache.get_decoded(key, PAIR_RECORD, _kept_closures) if shared else None
    if kept is not None and not absence_expired(kept[2]):
        return kept[0], kept[1]
    old, new = {}, {}
    for environment in environments_built:
        platform = platform_name(environment)
        old[platform] = walk(old_pins, extras, environment, source, build=build, build_source=build_source)
        new[platform] = walk(new_pins, extras, environment, source, build=build, build_source=build_source)
    if shared and _walk_complete(source, build_source):
        absences = [s.absent_until for s in (source, build_source) if s is not None and s.absent_until is not None]
        cache.put(key, {"until": min(absences, default=None),
                        **{side: {platform: closure.to_json() for platform, closure in walked.items()}
                           for side, walked in (("old", old), ("new", new))}})
    return old, new


def _kept_closures(kept: dict[str, Any]) -> tuple[dict[str, Closure], dict[str, Closure], float | None]:
    """Both releases' closures from their record, and until when it holds (RecordCache.get_decoded:
    one of another shape is walked again and written over)."""
    old, new = ({platform: Closure.from_json(data) for platform, data in kept[side].items()} for side in ("old", "new"))
    return old, new, kept["until"]


def _walk_complete(source: MetadataSource, build_source: MetadataSource | None) -> bool:
    """Whether the walked closures are worth keeping. One cut short by an index that could not be
    read is walked again next time; with no index (`package-index = "none"`) the cache is all
    there is, and what it held is the closure kept."""
    builds_read = build_source is None or build_source.unreachable is None
    return source.unreachable is None and builds_read and (not source.uncached or source.index_setting == NO_INDEX)


def _computed(ctx: CheckContext, cache: RecordCache) -> BumpClosures | None:
    old_pins, new_pins = pins_of_releases(ctx)
    if old_pins is None or new_pins is None:
        return None
    extras = sglang_extras(ctx)
    setting = index_setting(ctx)
    source = MetadataSource(cache, setting, shares=not _projects_own(_given(ctx, INDEX_SETTING, INDEX_VARIABLE)))
    built = build_environments(ctx.project.root)
    build = cuda_build(ctx)
    build_index, build_source = _build_index_and_source(ctx, cache, setting, build)
    key = _pair_key(old_pins, new_pins, extras, [platform_name(e) for e in built], [setting, source.namespace],
                    f"{build.tag} {build_index} {build_source.namespace}" if build_source is not None else None)
    old, new = walked_closures(cache, key, old_pins, new_pins, extras, built, source, build, build_source)
    wanted = _exact_project_pins(ctx)
    source.prefetch(wanted)
    pinned = {pin: source.pins(*pin) for pin in wanted}
    delta = closure_delta(old, new, ctx.old_version, ctx.new_version)
    # `none` reads the cache only: what it holds of the pins' metadata is the closure, as an
    # index's would be; with nothing of it cached the moves are SGLang's own pins (SGC701's)
    delta.index_read = setting != NO_INDEX
    delta.transitive = delta.index_read or _any_transitive(old, new)
    _note_what_is_missing(delta, source, old, new, build, build_index, build_source)
    return BumpClosures(old, new, pinned, delta)


def _note_what_is_missing(delta: ClosureDelta, source: MetadataSource, old: dict[str, Closure],
                          new: dict[str, Closure], build: CudaBuild | None, build_index: str | None,
                          build_source: MetadataSource | None) -> None:
    """Say with the closures' moves what they lack: an index not read, wheels without metadata,
    the CUDA build's metadata not read, bounds met."""
    _note_index_unread(delta, source)
    unknown = sorted({item for closure in (*old.values(), *new.values()) for item in closure.unknown})
    if unknown and not source.offline:
        delta.notes.append(_unknown_note(unknown))
    if build is not None:
        delta.cuda_build = f"{build.tag} the project builds on ({build.where})"
        _note_unread_builds(delta, old, new, build_index, build_source)
    if any(closure.cut_short for closure in (*old.values(), *new.values())):
        delta.notes.append("the closure was cut short at its bounds (depth, count): deeper requirements are not in it")


def _build_index_and_source(ctx: CheckContext, cache: RecordCache, setting: str | None,
                            build: CudaBuild | None) -> tuple[str | None, MetadataSource | None]:
    """Where the CUDA build's own packages are read, and the source reading them (None, None
    without a build); with "none", the cache's records of the index a run with one reads."""
    if build is None:
        return None, None
    build_index = build.index_url(build_index_setting(ctx, setting))
    shares = not _projects_own(_given(ctx, BUILD_INDEX_SETTING, BUILD_INDEX_VARIABLE))
    cached_index = build.index_url(build_index_setting(ctx, None)) if setting == NO_INDEX and shares else None
    return build_index, MetadataSource(cache, build_index, cached_index=cached_index, shares=shares)


def _any_transitive(old: dict[str, Closure], new: dict[str, Closure]) -> bool:
    """Whether either closure holds a requirement of a requirement (not SGLang's own alone)."""
    return any(len(need.chain) > 1 for closure in (*old.values(), *new.values()) for needs in closure.needs.values()
               for need in needs)


def _note_index_unread(delta: ClosureDelta, source: MetadataSource) -> None:
    """Say with the closures' moves that the package index was not read, or could not be."""
    if source.unreachable:
        delta.notes.append(f"the dependency closure was not computed past what is cached: the package index could not "
                           f"be read ({source.unreachable})")
    elif not delta.index_read and delta.transitive and source.uncached:
        # said with the closure's moves (the markdown report), not on standard error: a run that
        # chose "none" (CI, editors, the tests) keeps its output whatever a shared cache holds
        delta.unread = (f"The package index was not read (`--package-index none`): the closure stops at what is "
                        f"cached, not {', '.join(source.uncached[:6])}"
                        f"{f' and {len(source.uncached) - 6} more' if len(source.uncached) > 6 else ''}.")


def _unknown_note(unknown: list[str]) -> str:
    more = f" and {len(unknown) - 6} more" if len(unknown) > 6 else ""
    return f"no wheel metadata on the index for {', '.join(unknown[:6])}{more}: what they require is not in the closure"


def _note_unread_builds(delta: ClosureDelta, old: dict[str, Closure], new: dict[str, Closure], build_index: str | None,
                        build_source: MetadataSource | None) -> None:
    """One note naming the CUDA build's packages whose own metadata was not read: their CUDA
    libraries are not in the closures (the index's are of another build)."""
    unread = sorted({item for closure in (*old.values(), *new.values()) for item in closure.build_unread})
    if not unread:
        return
    why = (build_source.unreachable if build_source is not None and build_source.unreachable
           else "not cached, and the package index is not read" if build_index == NO_INDEX else "not on that index")
    more = " and more" if len(unread) > 4 else ""
    delta.notes.append(f"the CUDA build's own metadata of {', '.join(unread[:4])}{more} was not read from "
                       f"{build_index} ({why}): the CUDA libraries they bring are not in the closure (the "
                       "`cuda-build-index` setting names another index to read them from)")
    delta.build_unread = (f"The CUDA libraries {', '.join(unread[:4])}{more} bring are not in it: that build's "
                          f"metadata was not read ({why}).")


def _platforms_of(declared: DeclaredRequirement, found: BumpClosures) -> Iterator[tuple[dict[str, str], str]]:
    """(environment, platform) of each platform both closures were computed for where the line installs."""
    for environment in environments():
        platform = platform_name(environment)
        if platform in found.new and platform in found.old and applies(declared.requirement.marker, environment):
            yield environment, platform


def _says_it_follows_sglang(ctx: CheckContext, declared: DeclaredRequirement) -> bool:
    """Whether the line's comment, or the comment just above the command it is part of (miles'
    `# Reconcile apache-tvm-ffi with sglang's pin` over its `RUN pip install`), says the line
    follows SGLang's stack: the kind of line that must be revisited at each bump."""
    if declared.matches_stack:
        return True
    lines = ctx.shared(f"lines of the stack file\0{declared.path}",
                       lambda context: _stack_file_lines(context, declared.path))
    row = min(declared.line - 1, len(lines))
    while row > 0 and lines[row - 1].rstrip().endswith("\\"):  # the command's first line
        row -= 1
    while row > 0 and lines[row - 1].lstrip().startswith("#"):
        row -= 1
        if says_it_matches_stack(lines[row]):
            return True
    return False


def _stack_file_lines(ctx: CheckContext, relpath: str) -> list[str]:
    """A stack file's lines, read and split once a run: a Dockerfile of many pins asks for each."""
    text = read_project_text(ctx.project.root / relpath, ctx.project.root)
    return numbered_lines(text) if text is not None else []


def _chain(need: Need | None) -> str:
    return need.path() if need is not None else ""


# -- SGC711 ---------------------------------------------------------------------------------

@contract("SGC711", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def install_below_new_closure(ctx: CheckContext) -> Iterator[Diagnostic]:
    """A pin or install line below the version the new closure pins, that was not below the old
    closure's: an upgrade on the old release that the bump turns into a downgrade. A mirror of
    SGLang's own pin that agreed on the old release is SGC701's."""
    found = closures(ctx)
    if found is None:
        return
    for declared in (*declared_by_project(ctx), *installed_by_project(ctx), *_markers_in_closure(ctx, found)):
        mine = exact_version(declared.requirement.specifier)
        if declared.name == SGLANG or mine is None:
            continue
        diagnostic = _first_downgrade(ctx, found, declared, Version(mine.public))  # `2.14.1+cu129` is a build of 2.14.1
        if diagnostic is not None:
            yield diagnostic


def _first_downgrade(ctx: CheckContext, found: BumpClosures, declared: DeclaredRequirement,
                     mine: Version) -> Diagnostic | None:
    """One report per line, on the first platform where it is a downgrade (or outside the new
    closure's ranges); None where it is none, or mirrors SGLang's own pin."""
    for _, platform in _platforms_of(declared, found):
        new_need, old_need = found.new[platform].first(declared.name, found.old[platform]), \
            found.old[platform].first(declared.name)
        now, was = _need_version(new_need), _need_version(old_need)
        if now is None:
            outside = _outside_new_ranges(found.old[platform], found.new[platform], declared.name, mine)
            if outside is not None:
                return _outside_finding(ctx, declared, platform, outside)
            continue
        if mine >= now or (was is not None and mine < was):
            continue
        if _mirrors_sglang_pin(new_need, old_need, mine, was):
            return None  # a mirror of SGLang's own pin, which agreed: SGC701 says the pin moved
        return _below_finding(ctx, declared, platform, mine, now, was, new_need)
    return None


def _need_version(need: Need | None) -> Version | None:
    return as_version(need.version or "") if need is not None else None


def _mirrors_sglang_pin(new_need: Need, old_need: Need | None, mine: Version, was: Version | None) -> bool:
    return new_need.chain == (ROOT,) and was is not None and mine == was and old_need.chain == (ROOT,)


def _verb(declared: DeclaredRequirement) -> str:
    return "names" if declared.marker else "installs"


def _outside_finding(ctx: CheckContext, declared: DeclaredRequirement, platform: str, outside: Need) -> Diagnostic:
    return finding_at("SGC711", declared.path, declared.line, declared.col, declared.name,
                      severity="warning", pinned=without_marker(declared.requirement),
                      name=declared.name, relation="outside", version=outside.specifier,
                      chain=outside.path(), before=f"sglang {ctx.old_version} admitted it",
                      revisit="", platform=platform, old=ctx.old_version, new=ctx.new_version,
                      pinned_by_sglang=False, verb=_verb(declared), marker=declared.marker)


def _below_finding(ctx: CheckContext, declared: DeclaredRequirement, platform: str, mine: Version, now: Version,
                   was: Version | None, new_need: Need) -> Diagnostic:
    direct = new_need.chain == (ROOT,)
    before = f"sglang {ctx.old_version} brought {was}" if was is not None else \
        f"sglang {ctx.old_version} did not bring it"
    revisit = (f"; the line says it follows SGLang's stack: set it to {declared.name}=={now}"
               if _says_it_follows_sglang(ctx, declared) else "")
    # A marker installs nothing: what it misleads (a script reading the image's
    # FLASHINFER_VERSION) is the project's to judge, a warning
    return finding_at("SGC711", declared.path, declared.line, declared.col, declared.name,
                      severity=None if direct and not declared.marker else "warning",
                      pinned=f"{declared.marker}={mine}" if declared.marker else without_marker(declared.requirement),
                      name=declared.name, relation="below", version=str(now), chain=_chain(new_need), before=before,
                      revisit=revisit, platform=platform, old=ctx.old_version, new=ctx.new_version,
                      pinned_by_sglang=direct, verb=_verb(declared), marker=declared.marker)


def _markers_in_closure(ctx: CheckContext, found: BumpClosures) -> Iterator[DeclaredRequirement]:
    """The project's version markers whose variable names a package of the new closure
    (`FLASHINFER_VERSION` -> flashinfer-python, `CUTLASS_DSL_VERSION` -> nvidia-cutlass-dsl),
    as requirements of that package; a marker of anything else (`CUDA_VERSION`) says nothing."""
    known = {name for closure in found.new.values() for name in closure.needs}
    for marker in marked_by_project(ctx):
        stem = marker.name
        for name in (stem, distribution_of(stem.replace("-", "_")), f"nvidia-{stem}"):
            if name in known:
                yield dataclasses.replace(marker, requirement=Requirement(f"{name}{marker.requirement.specifier}"))
                break


def _outside_new_ranges(old: Closure, new: Closure, name: str, mine: Version) -> Need | None:
    """The new closure's range on `name` that excludes the pin, when every range of the old
    closure admitted it (flashinfer 0.7's `apache-tvm-ffi>=0.1.11` over a `==0.1.9` that
    reconciled with 0.6's); None when the new closure admits it or the old did not."""
    def excludes(need: Need) -> bool:
        specifier = parse_specifier(need.specifier) if need.specifier else None
        return specifier is not None and not specifier.contains(mine, prereleases=True)

    if any(excludes(need) for need in old.needs.get(name, ())):
        return None
    return next((need for need in new.needs.get(name, ()) if excludes(need)), None)


@fixes("SGC711")
def follow_new_closure(diagnostic: Diagnostic, workspace) -> bool:
    """Move an exact pin of a package SGLang itself pins exactly to the new release's version: the
    one rewrite the closure makes certain. A package another pin brings (the warning), a build
    with a local version (`+cu129`: which build is the project's choice) and a range are left."""
    document = workspace.document(diagnostic.path)
    if diagnostic.data.get("marker"):
        document.note(diagnostic.line, diagnostic.col, "SGC711", f"{diagnostic.data['marker']} marks a version the "
                      f"image installs: keep it in step with the install it marks, by hand")
        return False
    if not diagnostic.data.get("pinned_by_sglang"):
        document.note(diagnostic.line, diagnostic.col, "SGC711", f"{diagnostic.data['name']} comes through another pin "
                      f"({diagnostic.data['chain']}): move the line, or drop it, by hand")
        return False
    found = edits.requirement_at(document.line(diagnostic.line) or "", diagnostic.col - 1)
    if found is None or normalized(found[0]) != normalized(diagnostic.data["name"]):
        return False  # the line is not what the check read: leave it
    name, spec = found
    pinned = edits.exact_pin(spec.text)
    if pinned is None or "+" in pinned:
        document.note(diagnostic.line, diagnostic.col, "SGC711", f"{name}{spec.text} is not an exact public version: "
                      f"move it to {diagnostic.data['version']} by hand")
        return False
    # The same version elsewhere in the command (miles' `nvidia-cutlass-dsl-libs-*==4.6.2` beside
    # `nvidia-cutlass-dsl==4.6.2`, and the assert that all five are 4.6.2) moves with this pin:
    # moving one of them alone fails the build
    if edits.held_in_command(document.bare_lines(), diagnostic.line - 1, diagnostic.col - 1):
        document.note(diagnostic.line, diagnostic.col, "SGC711", f"{pinned} is named elsewhere in this command (the "
                      f"pins or checks that move with {name}): move them together, or drop the block, by hand")
        return False
    return document.replace(diagnostic.line, spec.start, spec.end, f"=={diagnostic.data['version']}")


# -- SGC712 ---------------------------------------------------------------------------------

@contract("SGC712", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def pin_requires_other_than_new_closure(ctx: CheckContext) -> Iterator[Diagnostic]:
    """An exact pin whose own requirements (its metadata at that version) admit what the old
    closure pins and exclude what the new one pins (`torchvision==0.24.1` needs `torch==2.9.1`)."""
    found = closures(ctx)
    if found is None:
        return
    for declared in (*declared_by_project(ctx), *installed_by_project(ctx)):
        mine = exact_version(declared.requirement.specifier)
        own = _own_requirements(found, declared)
        if declared.name == SGLANG or own is None or mine is None:
            continue
        for environment, platform in _platforms_of(declared, found):
            new_closure, old_closure = found.new[platform], found.old[platform]
            if new_closure.version(declared.name) not in (None, str(mine), mine.public):
                break  # the pin itself moves with the release: SGC701 or SGC711 says so
            conflicts = _conflicts(own, environment, declared, new_closure, old_closure)
            if conflicts:
                requirement, now, need = conflicts[0]
                more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
                yield finding_at("SGC712", declared.path, declared.line, declared.col, declared.name,
                                 pinned=without_marker(declared.requirement), requires=without_marker(requirement),
                                 name=requirement.name, version=now, chain=_chain(need), more=more,
                                 platform=platform, old=ctx.old_version, new=ctx.new_version)
                break


def _own_requirements(found: BumpClosures, declared: DeclaredRequirement) -> ReleasePins | None:
    """The requirements of the exact pin's version, as read from the index (None when not read)."""
    readable = _readable_version(declared)
    return found.pinned.get((declared.name, readable)) if readable is not None else None


def _conflicts(own: ReleasePins, environment: dict[str, str], declared: DeclaredRequirement, new_closure: Closure,
               old_closure: Closure) -> list[tuple[Requirement, str, Need | None]]:
    """(requirement, new version, need) of each of the pin's own requirements the new closure
    breaks and the old one met."""
    conflicts = []
    for requirement in own.installed_on(environment, frozenset(declared.requirement.extras)):
        now, was = new_closure.version(requirement.name), old_closure.version(requirement.name)
        now_version, was_version = as_version(now or ""), as_version(was or "")
        if now_version is None or requirement.specifier.contains(now_version, prereleases=True):
            continue
        if was_version is not None and not requirement.specifier.contains(was_version, prereleases=True):
            continue  # already at odds with the old release: not the bump's doing
        conflicts.append((requirement, now, new_closure.first(requirement.name, old_closure)))
    return conflicts


def _holds(operator: str, asserted: str, version: str) -> bool | None:
    """Whether `<module>.__version__ <operator> "<asserted>"` holds for the release `version`
    (None when the assert cannot be read as a version). A build's local part (`+cu129`) is the
    wheel's choice, not the release's: versions are compared by their public part."""
    if operator == "startswith":
        return version.startswith(asserted)
    mine, theirs = as_version(asserted), as_version(version)
    if mine is None or theirs is None:
        return None
    mine = Version(mine.public)
    return {"==": theirs == mine, "!=": theirs != mine, ">=": theirs >= mine, "<=": theirs <= mine,
            ">": theirs > mine, "<": theirs < mine}[operator]


@contract("SGC713", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def version_assert_broken_by_closure(ctx: CheckContext) -> Iterator[Diagnostic]:
    """An assert on a package's `__version__` that the old closure's version meets and the new
    one's does not, on the first platform where both pin it exactly."""
    found = closures(ctx)
    if found is None:
        return
    rows = ctx.project.each_file("version-asserts", file_version_asserts, may_assert_version, version_asserts,
                                 by_pattern=True)
    for path, line, col, module, operator, asserted, written in rows:
        if ctx.checked is not None and path not in ctx.checked:
            continue  # a file whose findings this run keeps from the last (every Python file has its row)
        name = distribution_of(module)
        pinned = _first_pinned_by_both(found, name)
        if pinned is None:
            continue
        new_closure, old_closure, now, was = pinned
        if _holds(operator, asserted, was) and _holds(operator, asserted, now) is False:
            yield finding_at("SGC713", path, line, col, f"{module}.__version__", written=written, name=name,
                             version=now, was=was, chain=_chain(new_closure.first(name, old_closure)),
                             old=ctx.old_version, new=ctx.new_version)


def _first_pinned_by_both(found: BumpClosures, name: str) -> tuple[Closure, Closure | None, str, str] | None:
    """(new closure, old closure, new version, old version) on the first platform where both pin `name`."""
    for platform, new_closure in found.new.items():
        old_closure = found.old.get(platform)
        now, was = new_closure.version(name), old_closure.version(name) if old_closure else None
        if now is not None and was is not None:
            return new_closure, old_closure, now, was
    return None


CUDA_TAG = re.compile(r"-cu(\d{2,3})(?![\d.])")  # `v0.5.22-cu129`: CUDA 12.9; `-cu13`: CUDA 13
TORCH_CUDA_LIBRARY = re.compile(r"nvidia-[a-z0-9-]+-cu(\d+)")  # torch's own NCCL, cuDNN, cuBLAS wheels


def tag_cuda_major(tag: str) -> int | None:
    match = CUDA_TAG.search(tag)
    return cuda_major(match.group(1)) if match is not None else None


def torch_cuda_major(closure: Closure) -> tuple[int, str] | None:
    """The CUDA major torch's own CUDA libraries are built for in the closure (`nvidia-nccl-cu13`
    brought by torch: 13), with the chain that says so; where the closure is of the project's
    CUDA build and that build's torch was not read, the index's torch says it."""
    paths = [need.path() for name, needs in sorted(closure.needs.items()) if TORCH_CUDA_LIBRARY.fullmatch(name)
             for need in needs]
    for path in (*paths, *closure.other_build):
        parts = path.split(" -> ")
        match = TORCH_CUDA_LIBRARY.match(parts[-1])
        if match and len(parts) > 2 and parts[1].startswith("torch=="):
            return int(match.group(1)), path
    return None


@contract("SGC714", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def image_cuda_behind_closure(ctx: CheckContext) -> Iterator[Diagnostic]:
    """An SGLang image tag whose CUDA suffix matched the CUDA of the old closure's torch, and not
    the new one's (on the first platform)."""
    moved = _torch_cuda_moved(closures(ctx))
    if moved is None:
        return
    was, now = moved
    releases = [version for version in (as_version(ctx.old_version), as_version(ctx.new_version))
                if version is not None]
    for mention in all_release_mentions(ctx):
        if not _image_of_the_bump(mention, releases):
            continue  # an image of another release, or a doc's example: not what the bump builds on
        major = tag_cuda_major(mention.version)
        if major == was[0]:
            yield finding_at("SGC714", mention.path, mention.line, mention.col, "sglang", written=mention.written,
                             major=str(major), now=str(now[0]), chain=now[1], was=str(was[0]),
                             old=ctx.old_version, new=ctx.new_version)


def _torch_cuda_moved(found: BumpClosures | None) -> tuple[tuple[int, str], tuple[int, str]] | None:
    """(old, new) CUDA major of torch's libraries on the first platform, when it moved; else None."""
    if found is None or not found.new or not found.old:
        return None
    platform = next(iter(found.new))
    was, now = torch_cuda_major(found.old.get(platform, Closure(platform))), torch_cuda_major(found.new[platform])
    if was is None or now is None or was[0] == now[0]:
        return None
    return was, now


def _image_of_the_bump(mention: ReleaseMention, releases: list[Version]) -> bool:
    """Whether the mention is an image tag of either release outside the docs."""
    named = version_in_tag(mention.version)
    return not (mention.kind != "image tag" or named is None or mention.path.endswith(DOC_SUFFIXES)
                or not any(names_release(named, release) for release in releases))
