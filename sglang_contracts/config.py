"""Configuration: `[tool.sglang-contracts]` in the project's pyproject.toml, or `--config FILE`.

Every key is checked: an unknown key, or a value of the wrong type, is an error that names
it. Relative paths are relative to the configuration file's folder. What a run is given
(the command line's flags, a language client's settings) wins over the file:
check/options.py resolve_options merges the two, for the command line, the daemon and the
language server alike.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Callable

from sglang_contracts.infra.errors import UsageError
from sglang_contracts.infra.files import VERSION_CONTROL_FOLDERS, Unreadable, read_text_limited
from sglang_contracts.infra.roots import anyones_file, working_folder
from sglang_contracts.infra.tomltext import parse_toml
from sglang_contracts.requirements import SPECIFIER_STARTS, admits_some_version, as_version, parse_specifier

TABLE = "sglang-contracts"
SEVERITY_VALUES = ("error", "warning", "info")
SOURCES = {"index": "pypi", "git": "git", "directory": "dir"}  # `source` -> the REF prefix it implies
CODE_PREFIX = re.compile(r"SGC\d*")
LONGEST_NAME = 255  # bytes of one path part, as Linux's and macOS's file systems take them (NAME_MAX)


class _Invalid(Exception):
    pass


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid("must be a string")
    return value


def _path(value: Any) -> str:
    """A path on this machine (`sglang-repo`): a NUL in it names no file, and stopped the run in
    an internal error (campaign 20, R13)."""
    given = _string(value)
    if not given or "\0" in given:
        raise _Invalid(f"{given!r} names no file or folder")
    return given


def _release(value: Any) -> str:
    """`old`/`new`: never empty, which as a path would be the configuration's own folder."""
    if not _string(value).strip():
        raise _Invalid("is empty (give an SGLang version, a git ref, or a directory)")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("must be true or false")
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Invalid("must be a list of strings")
    return value


def _unique_strings(value: Any) -> list[str]:
    """Strings, each once: a glob listed again adds nothing but its work (campaign 9, R24)."""
    return list(dict.fromkeys(_strings(value)))


def _within_project(value: Any) -> list[str]:
    """Paths relative to the project's root that stay in it: the configuration is the project's
    (a pull request's) text, and `paths = ["/home"]` or `["../.."]` would make the run read, and
    `fix` write, outside the project."""
    paths = _strings(value)
    for given in paths:
        path = PurePath(given)
        if path.is_absolute():
            raise _Invalid(f"{given!r} is absolute: give a path or glob relative to the project's root")
        if not path.parts or "\0" in given:
            raise _Invalid(f"{given!r} names no file: give a path or glob relative to the project's root")
        if ".." in path.parts:
            raise _Invalid(f"{given!r} leaves the project: give a path or glob within the project's root")
        if any(len(os.fsencode(part)) > LONGEST_NAME for part in path.parts):
            # the file system refuses it (ENAMETOOLONG): the rules reading the setting met it as an
            # internal error in bump's last check (campaign 20, R13)
            raise _Invalid(f"{given[:60]!r}... holds a name longer than the file system takes")
        if any(part.lower() in VERSION_CONTROL_FOLDERS for part in path.parts):  # `.git/config`: campaign 18, R03
            raise _Invalid(f"{given!r} is in the project's version control folder: give a file of the project")
    return paths


def _slash_paths(value: Any) -> Any:
    """Paths and globs (a list, or a table's keys) written with `/`: `sub\\m.py` matches nothing
    here, silently (campaign 18, R04)."""
    for item in value if isinstance(value, (list, dict)) else ():
        if isinstance(item, str) and "\\" in item:
            raise _Invalid(f"{item!r} holds a backslash: write paths with /")
    return value


def _globs(value: Any) -> list[str]:
    """Paths or globs within the project (_within_project), each one Path.glob takes (it refuses
    a `**` inside a name with an exception, not an answer)."""
    patterns = _within_project(value)
    for pattern in patterns:
        parts = PurePath(pattern).parts
        if any("**" in part and part != "**" for part in parts):
            raise _Invalid(f"{pattern!r}: `**` can only be a whole path component")
        # Each `**` walks every folder below each match of what precedes it: ten of them kept a
        # run on 121 folders busy for minutes (a pull request can write the setting).
        if parts.count("**") > 1:
            raise _Invalid(f"{pattern!r}: a glob may have one `**` (it already matches any depth)")
    return _unique_strings(patterns)


def _codes(value: Any) -> list[str]:
    codes = [code.strip().upper() for item in _strings(value) for code in item.split(",") if code.strip()]
    for code in codes:
        if not CODE_PREFIX.fullmatch(code):
            raise _Invalid(f"{code!r} is not a rule code or code prefix (SGC, SGC1, SGC102, ...)")
    return codes


def _choice(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            raise _Invalid(f"must be one of {', '.join(allowed)}")
        return value

    return check


def _table(check_value: Callable[[Any], Any], check_key: Callable[[str], str] = str) -> Callable[[Any], dict]:
    """A table whose keys `check_key` reads: two keys it reads alike (`"m.py"` and `"./m.py"` in
    `serves`, `SGC102` and `sgc102` in `severity`) are an error, not the later one silently
    replacing the earlier (campaign 12, R06: the order of two lines decided a file's findings)."""
    def check(value: Any) -> dict:
        if not isinstance(value, dict):
            raise _Invalid("must be a table")
        result, written = {}, {}
        for key, item in value.items():
            try:
                normal = check_key(key)
                result[normal] = check_value(item)
            except _Invalid as error:
                raise _Invalid(f"[{key}] {error}") from None
            if normal in written:
                raise _Invalid(f"has both [{written[normal]}] and [{key}], which name the same {normal!r}: keep one")
            written[normal] = key
        return result

    return check


def _project_file(value: Any) -> str:
    """One file of the project, by its path relative to the root (_within_project)."""
    return _within_project(_string(value))[0]


def _index_location(value: Any) -> str:
    """`package-index` / `cuda-build-index`: an http(s) URL, "none", or a folder within the
    project. The setting is a pull request's text: a folder anywhere else (an absolute path, `..`,
    a `file:` URL) had its packages' metadata read and their names printed (campaign 9, R19)."""
    given = _string(value)
    if given == "none" or re.match(r"https?://", given, re.I):
        return given
    if "://" in given:
        raise _Invalid(f"{given!r}: give an http(s) URL, \"none\", or a folder within the project")
    return _within_project(given)[0]


def _releases_served(value: Any) -> list[str]:
    """`serves`' values: versions (`0.5.20`) or specifiers (`>=0.5.22`). An item that is neither
    would admit no release, and every finding of its files would go unsaid (campaign 9, R01); so
    would a list of none (campaign 10, R02)."""
    items = _strings(value)
    if not items:
        raise _Invalid("is an empty list, which admits no release: give the versions (0.5.20) or specifiers "
                       "(>=0.5.22) the files serve")
    for item in items:
        # "" would parse as the specifier that admits every release: a slip, not a choice
        specifier = parse_specifier(item) if item[:1] in SPECIFIER_STARTS and item.strip() else None
        if (specifier if item[:1] in SPECIFIER_STARTS else as_version(item)) is None:
            raise _Invalid(f"has {item!r}, which is neither a version (0.5.20) nor a version specifier (>=0.5.22)")
        if specifier is not None and not admits_some_version(specifier):
            raise _Invalid(f"has {item!r}, which admits no release: its files' findings would all go unsaid")
    return items


def _within_project_key(key: str) -> str:
    """A folder or file of the project, as its relative POSIX path (`serves`' keys)."""
    return PurePath(_within_project(key)[0]).as_posix()


def _code_key(key: str) -> str:
    """A `severity` key: one code or prefix. A key of none (`""`, `","`) ended the run in an
    internal error, and one of two (`"SGC1,SGC2"`) set the first only (campaign 17, R01, R02)."""
    codes = _codes([key])
    if len(codes) != 1:
        raise _Invalid("is not one rule code or code prefix (SGC, SGC1, SGC102, ...): give each code a key of its own")
    return codes[0]


# The patterns a configuration's `exclude` or `per-file-ignores` may hold: each path of the
# project is tried against those whose literal text it holds (diagnostics/suppressions.py
# PathGlobs), and 40,000 whose text every path holds took 32 s over 4,000 files (campaign 15,
# R11); a real configuration holds a few dozen.
MAX_PATH_PATTERNS = 1000
# `patch-files` globs: each is matched by a walk of the project's folders (patch/stack.py), 4,000
# took 40 s over 2,000 files (campaign 16, R09); a project's stack is named by a handful.
MAX_PATCH_GLOBS = 100


def _at_most_patterns(check: Callable[[Any], Any], most: int = MAX_PATH_PATTERNS) -> Callable[[Any], Any]:
    def bounded(value: Any) -> Any:
        count = len({repr(item) for item in value}) if isinstance(value, (list, dict)) else 0  # each once
        if count > most:
            raise _Invalid(f"holds {count:,} patterns, more than the {most:,} a configuration may hold")
        return check(value)

    return bounded


# key -> validator. Kept in one place so the error for an unknown key can suggest a near one.
KEYS: dict[str, Callable[[Any], Any]] = {
    "paths": _within_project,
    "exclude": _at_most_patterns(lambda value: _unique_strings(_slash_paths(value))),
    "old": _release,
    "new": _release,
    "source": _choice(*SOURCES),
    "sglang-repo": _path,
    "select": _codes,
    "ignore": _codes,
    "per-file-ignores": _at_most_patterns(lambda value: _table(_codes)(_slash_paths(value))),
    "severity": _table(_choice(*SEVERITY_VALUES), _code_key),
    "report-unresolved": _boolean,
    "report-unused-noqa": _boolean,
    "baseline": _project_file,  # the project's (a pull request's) text: never a file out of it
    # Read by the rules of their surface (ServerArgs, tests, patch files).
    "server-args-seam": _strings,
    "fakes": _table(_string),
    "patch-files": _at_most_patterns(_globs, MAX_PATCH_GLOBS),
    "serves": _table(_releases_served, _within_project_key),
    # Where the dependency closure's metadata comes from: a simple index's URL, a folder holding
    # one, or "none" (the cache only); pip's configured index when absent (closure/index.py).
    "package-index": _index_location,
    # Where the CUDA build's own torch, torchvision, torchaudio are read (`cu129` builds: PyTorch's
    # index, https://download.pytorch.org/whl/{cuda}); a URL or folder, `{cuda}` naming the build.
    "cuda-build-index": _index_location,
    # Where `patch rebase` (of the stack) and `bump` write the plan and the pull request's body;
    # `{new}` is the release bumped to.
    "upgrade-plan": _project_file,
    "pr-body": _project_file,
}
RULE_SETTINGS = ("server-args-seam", "fakes", "patch-files", "serves", "package-index", "cuda-build-index")


@dataclass
class Config:
    path: Path | None = None  # the file it was read from; None when there is none
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent if self.path else Path(working_folder())

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def path_value(self, key: str) -> Path | None:
        value = self.values.get(key)
        # As named, links not followed: whether it is a link out of the project is judged on that.
        return None if value is None else Path(os.path.abspath(self.folder / Path(value).expanduser()))

    def release_spec(self, key: str) -> str | None:
        """`old`/`new` as written, with a relative directory made relative to the file's folder."""
        value = self.values.get(key)
        if value is None:
            return None
        kind, _, rest = value.partition(":")
        if kind == "dir" and rest and not Path(rest).is_absolute():
            return f"dir:{self.folder / rest}"
        candidate = self.folder / value
        try:
            is_dir = not Path(value).is_absolute() and candidate.is_dir()
        except (OSError, ValueError):  # a name too long for a path: a version or ref, if anything
            is_dir = False
        return str(candidate) if is_dir else value

    def settings(self) -> dict[str, Any]:
        return {key: self.values[key] for key in RULE_SETTINGS if key in self.values}


def configured_objects(settings: dict[str, Any]) -> tuple[str, ...]:
    """The project's own objects the rule settings name, as sorted dotted paths: the classes
    `fakes` maps, the `server-args-seam` functions (`pkg.module:function`). A project's index
    reads their modules whatever they mention (project/index.py ProjectIndex.configured)."""
    seams = (seam.replace(":", ".") for seam in settings.get("server-args-seam", ()))
    return tuple(sorted({*settings.get("fakes", {}), *seams}))


# The table's name as a text may write it: `tool.sglang-contracts`, quoted (`tool."sglang-contracts"`,
# the same table to TOML: a broken file holding it was taken for one without it, campaign 18,
# R05), or with the import's `_`.
OUR_TABLE_WRITTEN = re.compile(r"""tool\s*\.\s*["']?sglang[-_]contracts\b""", re.I)


def _our_name(name: str) -> bool:
    """A name of `[tool]` meant for this tool (`sglang_contracts`, `SGLang-Contracts`)."""
    return name.lower().replace("_", "-") == TABLE


def _validate(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise UsageError(f"{where} must be a table")
    values = {}
    for key, value in raw.items():
        if key not in KEYS:
            near = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise UsageError(f"{where}: unknown key {key!r}{hint}")
        try:
            values[key] = KEYS[key](value)
        except _Invalid as error:
            raise UsageError(f"{where}: {key} {error}") from None
    return values


def read_config(path: Path, *, required: bool, within: Path | None = None) -> Config:
    """The configuration in `path`: its `[tool.sglang-contracts]` table, or for a file that is
    not a pyproject.toml and has no such table, the whole file. A pyproject.toml without the
    table is no configuration (an error when the file was named with --config)."""
    try:
        # Bytes that are not UTF-8 (a latin-1 comment) are replaced: TOML then judges the
        # text, and a table of ours holding such a byte is reported as invalid there.
        text = read_text_limited(path, within=within)  # the project's own, never a link out of it
    except Unreadable as error:
        raise UsageError(f"{path}: cannot read the configuration ({error.reason})") from None
    try:
        document = parse_toml(text)
    except tomllib.TOMLDecodeError as error:
        if not required and not OUR_TABLE_WRITTEN.search(text):
            return Config()  # a broken pyproject.toml that holds no configuration of ours
        raise UsageError(f"{path}: not valid TOML ({error})") from None
    tool = document.get("tool", {})
    if isinstance(tool, dict) and (slip := next((name for name in tool if name != TABLE and _our_name(name)), None)):
        # `[tool.sglang_contracts]`, the import's name: nothing of it applied, silently (campaign 18, R04)
        raise UsageError(f"{path}: [tool.{slip}] is not read: this tool's table is [tool.{TABLE}]")
    if isinstance(tool, dict) and TABLE in tool:
        return Config(path.resolve(), _validate(tool[TABLE], f"{path}: [tool.{TABLE}]"))
    if path.name == "pyproject.toml":
        if required:
            raise UsageError(f"{path}: no [tool.{TABLE}] table")
        return Config()
    return Config(path.resolve(), _validate(document, str(path)))


def find_config(root: Path, explicit: Path | None) -> Config:
    if explicit is not None:
        return read_config(explicit, required=True)
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or anyones_file(str(pyproject)):  # another user's, in /tmp: not this run's
        return Config()
    return read_config(pyproject, required=False, within=root)


def with_source(spec: str | None, source: str | None) -> str | None:
    """A bare REF read with the configured default source (`source = "git"`: a tag of the clone)."""
    if spec is None or source is None:
        return spec
    kind, _, rest = spec.partition(":")
    if kind in SOURCES.values() and rest:
        return spec  # said explicitly
    return f"{SOURCES[source]}:{spec}"

