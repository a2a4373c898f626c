""""Did you mean" hints that name the same thing.

A hint that points at a different definition is worse than none: following it can silently
pass an argument into the wrong parameter. So a new home is suggested as "did you mean X?"
only when the definition there is the same as the one the project used: a function or method
with the same parameters and the same normalised body (the body fingerprint SGC303/SGC706
compare), a class with the same methods and constructor, a ServerArgs field declared alike;
or a re-export of such a definition, named then by where it is defined, not by the shim.
A definition in another top-level subsystem (`sglang.multimodal_gen` beside `sglang.srt`) is
suggested only where the definition moved, not where a copy of its own already lived.
Otherwise up to three candidates are listed with their signatures, marked unverified; where
no other module binds the name, a static or class method of that name in a class of its own
module ("moved into Engine._launch_subprocesses?") or a definition the new release added under
a name holding the lost one, with its fields or methods (`BatchTokenIDOut` ->
`BatchTokenIDOutput`, "renamed to ...?"), each verified as above; or the hint says that none
was found; and where the new release's own code imports the name from a
package outside it (sglang 0.5.23's layers take `rmsnorm` from `sgl_kernel`), that is said too,
as a lead that cannot be verified here. Used by SGC101, SGC102, SGC104, SGC105 and SGC503.
"""

from __future__ import annotations

import re
from typing import Iterable

from sglang_contracts.infra.lines import matches_at_line_start, numbered_lines
from sglang_contracts.infra.shapes import ListOf, TableOf
from sglang_contracts.upstream.model import Member, Symbol, UpstreamModel

MAX_CANDIDATES = 3


def _definition(model: UpstreamModel, origin: str) -> tuple | None:
    """A comparable fingerprint of the definition at `origin`: (kind, parameters, body), or None."""
    record = model.function_record(origin)
    if record is not None:
        module, _, name = origin.rpartition(".")
        return "function", _params(record), tuple(model.body_lines(Member(module, name, "function", record)))
    cls = model.resolve_class(origin)
    if cls is not None and cls == origin:
        record = model.class_record(cls) or {}
        methods = record.get("methods", {})
        bodies = tuple(sorted((name, _params(m), tuple(model.body_lines(Member(cls, name, "method", m))))
                              for name, m in methods.items()))
        return "class", tuple(record.get("bases", [])), bodies
    return None


def same_callable(old: UpstreamModel, was: Member, new: UpstreamModel, now: Member) -> bool:
    """Whether two functions or methods are the same definition, perhaps under another name:
    the same parameters and the same normalised body."""
    return _params(was.record) == _params(now.record) and old.body_lines(was) == new.body_lines(now)


def _params(record: dict) -> tuple:
    return tuple(tuple(p) for p in record.get("params", []))


def signature_text(model: UpstreamModel, origin: str, method: dict | None = None) -> str:
    """`name(a, b=..., *, c)` for a function (or the `method` record given), `class name(a, ...)`
    for a class; the bare name else."""
    leaf = origin.rsplit(".", 1)[-1]
    record = method if method is not None else model.function_record(origin)
    kind = ""
    if record is None and model.resolve_class(origin) == origin:
        init = (model.class_record(origin) or {}).get("methods", {}).get("__init__")
        record, kind = init, "class "
    if record is None:
        return f"{kind}{leaf}"
    parts = _param_texts(record.get("params", []), skip_self=bool(kind))
    return f"{kind}{leaf}({', '.join(parts)})"


def _param_texts(params: list, skip_self: bool) -> list[str]:
    """`a`, `b=...`, `*`, `*args`, `**kwargs` for each recorded parameter [name, kind, has a
    default]; `skip_self`: a leading `self` or `cls` left out (a class's constructor)."""
    parts: list[str] = []
    star = False
    for name, param_kind, has_default in params:
        if skip_self and name in ("self", "cls") and not parts:
            continue
        if param_kind == "va":
            parts.append(f"*{name}")
            star = True
        elif param_kind == "vk":
            parts.append(f"**{name}")
        else:
            if param_kind == "ko" and not star:
                parts.append("*")
                star = True
            parts.append(f"{name}=..." if has_default else name)
    return parts


def same_definition(old: UpstreamModel, old_origin: str, new: UpstreamModel, new_origin: str) -> bool:
    before, after = _definition(old, old_origin), _definition(new, new_origin)
    return before is not None and before == after


def _origins(new: UpstreamModel, name: str, candidates: Iterable[str], reference: str) -> list[str]:
    origins: list[str] = []
    for module in _by_closeness(candidates, reference):
        symbol = new.resolve_name(module, name)
        origin = symbol.origin if symbol.found and symbol.origin else f"{module}.{name}"
        if origin not in origins:
            origins.append(origin)
    return origins


def verified_home(old: UpstreamModel, old_symbol: Symbol, new: UpstreamModel, name: str,
                  candidates: Iterable[str], reference: str) -> str | None:
    """Where the new release defines the same object the project reached at `old_symbol`
    (its qualified name at the definition), or None: what "did you mean X?" names, and what
    the import fixes rewrite to."""
    if not (old_symbol.found and old_symbol.origin):
        return None
    return next((origin for origin in _origins(new, name, candidates, reference)
                 if _same_object(old, old_symbol.origin, new, origin)), None)


def _subsystem(dotted: str) -> str:
    """`srt` of `sglang.srt.layers.x`, `multimodal_gen` of `sglang.multimodal_gen.runtime.y`."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 2 else ""


def _moved_there(old: UpstreamModel, old_origin: str, new_origin: str) -> bool:
    """Whether the old release had no other definition at `new_origin`: it had none there, or
    that place re-exported the very definition the project used."""
    module, _, leaf = new_origin.rpartition(".")
    before = old.resolve_name(module, leaf) if old.module_exists(module) else None
    return before is None or not before.found or before.origin == old_origin


def _same_object(old: UpstreamModel, old_origin: str, new: UpstreamModel, new_origin: str) -> bool:
    """The same definition, and not another subsystem's copy of it: sglang.multimodal_gen keeps
    its own parallel_state with its own module globals (`get_world_group` there reads another
    `_WORLD`), so a definition in another top-level subsystem counts only where it moved."""
    if not same_definition(old, old_origin, new, new_origin):
        return False
    return _subsystem(old_origin) == _subsystem(new_origin) or _moved_there(old, old_origin, new_origin)


def moved_home(old: UpstreamModel, old_symbol: Symbol, new: UpstreamModel, name: str,
               candidates: Iterable[str], reference: str) -> str | None:
    """The verified home, when it is where the definition moved: a place the old release did
    not define it, or where it re-exported the very definition the project used. An identical
    copy that already lived elsewhere (sglang.multimodal_gen's copy of parallel_state) is another
    object, with its own module globals: the hint may name it, a fix must not import it."""
    home = verified_home(old, old_symbol, new, name, candidates, reference)
    return home if home is not None and _moved_there(old, old_symbol.origin or "", home) else None


def home_hint(old: UpstreamModel, old_symbol: Symbol, new: UpstreamModel, name: str,
              candidates: Iterable[str], reference: str) -> str:
    """The hint for a name the project reached at `old_symbol` in the old release, given the
    modules of the new release that bind `name` (`candidates`), closest to `reference` first.
    "; did you mean X?" when X's definition is the same; else the unverified candidates with
    their signatures, or that none was found."""
    home = verified_home(old, old_symbol, new, name, candidates, reference)
    if home is not None:
        return f"; did you mean {home}?"
    origins = _origins(new, name, candidates, reference)
    outside = _outside_hint(new, name, reference)
    if not origins:
        taken_in = _taken_in_hint(old, old_symbol, new, name) or _renamed_hint(old, old_symbol, new, name)
        return taken_in or f"; no definition of {name} was found elsewhere in the new release{outside}"
    listed = ", ".join(f"{o.rpartition('.')[0]}.{signature_text(new, o)}" for o in origins[:MAX_CANDIDATES])
    was = f"; it was {signature_text(old, old_symbol.origin)}" if old_symbol.found and old_symbol.origin else ""
    return f"; unverified candidates, not the same definition: {listed}{was}{outside}"


STATIC_KINDS = ("classmethod", "staticmethod")


def _taken_in_hint(old: UpstreamModel, old_symbol: Symbol, new: UpstreamModel, name: str) -> str:
    """A module function that a class of its module took in as a static or class method of the
    same name (0.5.9's `engine._launch_subprocesses`, `Engine._launch_subprocesses` in
    0.5.10): "; moved into Engine.name (a classmethod now)?", verified as a move is, the
    same parameters (a classmethod's `cls` aside) and body; else listed with its signature."""
    origin = old_symbol.origin if old_symbol.found else None
    taken = taken_in(old, origin, new) if origin else None
    if taken is None:
        return ""
    module, cls, kind, method = taken
    record = old.function_record(origin) or {}
    params = _params(method)[1:] if kind == "classmethod" else _params(method)
    if params == _params(record) and old.body_lines(Member(module, name, "function", record)) \
            == new.body_lines(Member(f"{module}.{cls}", name, "method", method)):
        return f"; did you mean {module}.{cls}.{name} (a {kind} now)?"
    return (f"; moved into {cls}.{name}? a {kind} of {module} now, not the same definition: "
            f"{cls}.{signature_text(new, name, method)}; it was {signature_text(old, origin)}")


def taken_in(old: UpstreamModel, origin: str, new: UpstreamModel) -> tuple[str, str, str, dict] | None:
    """(module, class, "classmethod" or "staticmethod", record) of the static or class method
    that took in the module function at `origin` (of the old release): the first class of its
    module in the new release with one of its name, when the module no longer defines it."""
    module, _, name = origin.rpartition(".")
    if old.function_record(origin) is None or not new.module_exists(module) or new.function_record(origin) is not None:
        return None
    found = new.module(module)
    taken = _static_method_named(found.classes, name) if found is not None else None
    return (module, *taken) if taken is not None else None


def _static_method_named(classes: dict[str, dict], name: str) -> tuple[str, str, dict] | None:
    """(class, "classmethod" or "staticmethod", record) of the first class, by name, with a
    static or class method `name`."""
    for cls in sorted(classes):
        method = (classes[cls].get("methods") or {}).get(name)
        kinds = [kind for kind in STATIC_KINDS if kind in method.get("decorators", ())] if method else []
        if kinds:
            return cls, kinds[0], method
    return None


def _renamed_hint(old: UpstreamModel, old_symbol: Symbol, new: UpstreamModel, name: str) -> str:
    """A definition the new release added under a name that holds the lost one's (its leading
    underscores aside: `BatchTokenIDOut` in `BatchTokenIDOutput`, `_Communicator` in
    `FanOutCommunicator`): "; did you mean X?" when it is the same definition; "; renamed to
    X?" when it has the lost one's shape (a class's methods and constructor, or most of a
    dataclass's fields; a function's parameters), unverified; else nothing."""
    origin = old_symbol.origin if old_symbol.found else None
    core = name.lstrip("_")
    if not origin or len(core) < 6:
        return ""  # a short name is inside too many others to say anything
    found = new.whole_release_search(f"names holding {core}", lambda: _names_holding(new, core), TableOf(ListOf(str)))
    for other, modules in sorted(found.items(), key=lambda item: (len(item[0]), item[0])):
        hint = _renamed_to(old, origin, new, name, other, modules) if other != name else ""
        if hint:
            return hint
    return ""


def _renamed_to(old: UpstreamModel, origin: str, new: UpstreamModel, name: str, other: str,
                modules: list[str]) -> str:
    """The hint of `_renamed_hint` for `other`, defined in `modules` of the new release (the
    closest to `origin` first); "" when none of them defines it as a rename."""
    for module in _by_closeness(modules, origin):
        symbol = new.resolve_name(module, other)
        if not (symbol.found and symbol.origin == f"{module}.{other}") or old.resolve_name(module, other).found:
            continue  # a re-export, or a definition the old release had too: no rename
        if _same_object(old, origin, new, symbol.origin):
            return f"; did you mean {symbol.origin}?"
        alike = _alike(old, origin, new, symbol.origin)
        if alike:
            return f"; renamed to {symbol.origin}? it has {alike} of {name}, not the same definition"
    return ""


def _names_holding(model: UpstreamModel, core: str) -> dict[str, list[str]]:
    """name -> modules that define, at top level, a name holding `core`."""
    texts = model.texts_mentioning(core)
    return {name: modules for name, modules in model.definitions_in(texts).items() if core in name}


def _alike(old: UpstreamModel, old_origin: str, new: UpstreamModel, new_origin: str) -> str:
    """What a renamed definition keeps of the lost one's shape, said in words; "" for nothing."""
    was, now = old.function_record(old_origin), new.function_record(new_origin)
    if was is not None or now is not None:
        return "the parameters" if was is not None and now is not None and _params(was) == _params(now) else ""
    before, after = old.class_record(old_origin), new.class_record(new_origin)
    if before is None or after is None:
        return ""
    fields = [field[0] for field in before.get("fields", [])]
    if fields:
        return _fields_alike(fields, after, new.member_names(new_origin))
    return _methods_alike(before, after)


def _fields_alike(fields: list[str], after: dict, members: set[str]) -> str:
    """"all N fields" or "K of the N fields" a dataclass kept (as fields or members), when it
    kept four fifths of them; "" else."""
    kept = set(fields) & {field[0] for field in after.get("fields", [])} | (set(fields) & members)
    share = f"all {len(fields)}" if len(kept) == len(fields) else f"{len(kept)} of the {len(fields)}"
    return f"{share} fields" if len(kept) * 5 >= len(fields) * 4 else ""


def _methods_alike(before: dict, after: dict) -> str:
    """"the methods and constructor" when a class kept its method names and constructor's parameters."""
    methods, init = set(before.get("methods", {})), before.get("methods", {}).get("__init__")
    later = after.get("methods", {})
    if methods and methods == set(later) and (init is None or _params(init) == _params(later.get("__init__", {}))):
        return "the methods and constructor"
    return ""


_FROM_IMPORT = re.compile(r"from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)")  # at a line's start


def _imports_from_outside(model: UpstreamModel) -> dict[str, dict[str, list[str]]]:
    """name -> package -> modules of the release that import `name` from it, for packages
    outside SGLang (sgl_kernel, flashinfer): where the release's own code gets a name it does
    not define. One pass over the release answers it for every name a run asks about."""
    found: dict[str, dict[str, list[str]]] = {}
    for relpath, text in model.texts_mentioning("import"):
        for _, match in matches_at_line_start(_FROM_IMPORT, text):
            package = match.group(1)
            if package.split(".")[0] == "sglang":
                continue
            module = model.module_name_of(relpath)
            for part in match.group(2).strip("()").split(","):
                modules = found.setdefault(part.split(" as ")[0].strip(), {}).setdefault(package, [])
                if module not in modules:
                    modules.append(module)
    return found


def _outside_hint(model: UpstreamModel, name: str, reference: str) -> str:
    """"; the release's own code imports NAME from PACKAGE (in M and N more), outside the
    release, not verified", for the package most of its modules use; "" when none does."""
    every = model.whole_release_search("imported from outside", lambda: _imports_from_outside(model),
                                       TableOf(TableOf(ListOf(str))))
    found = every.get(name)
    if not found:
        return ""
    package, modules = max(found.items(), key=lambda item: (len(item[1]), item[0]))
    more = f" and {len(modules) - 1} more" if len(modules) > 1 else ""
    return (f"; the release's own code imports {name} from {package} (in {_by_closeness(modules, reference)[0]}{more}), "
            f"a package outside it, so that definition is not verified")


def module_hint(old: UpstreamModel, new: UpstreamModel, module: str, names: list[str],
                same_leaf: Iterable[str], homes: dict[str, list[str]]) -> str:
    """The hint for a module gone from the new release, from which the project imported `names`
    (empty for `import module`). A module is suggested only when it defines every imported
    name as the old module did (`same_leaf` are the modules named like the lost one); else
    where the first name's definition went (`homes`), through `home_hint`."""
    if names:
        candidate = moved_module(old, new, module, names, same_leaf)
        if candidate is not None:
            return f"; did you mean {candidate}?"
        first = names[0]
        return home_hint(old, old.resolve_name(module, first), new, first, homes.get(first, []), module)
    listed = list(_by_closeness(same_leaf, module))[:MAX_CANDIDATES]
    return f"; unverified candidates: {', '.join(listed)}" if listed else ""


def moved_module(old: UpstreamModel, new: UpstreamModel, module: str, names: list[str],
                 same_leaf: Iterable[str]) -> str | None:
    """The module of the new release, named like the lost one, that defines every one of
    `names` as the lost module did (the same definitions), the closest first; None if none."""
    olds = {n: old.resolve_name(module, n) for n in names}
    for candidate in _by_closeness(same_leaf, module):
        if all(s.found and s.origin and _same_at(old, s, new, candidate, n) for n, s in olds.items()):
            return candidate
    return None


def _same_at(old: UpstreamModel, symbol: Symbol, new: UpstreamModel, module: str, name: str) -> bool:
    found = new.resolve_name(module, name)
    return bool(found.found and found.origin and symbol.origin and _same_object(old, symbol.origin, new, found.origin))


def _by_closeness(candidates: Iterable[str], reference: str) -> list[str]:
    import os

    parts = reference.split(".")
    return sorted(set(candidates), key=lambda c: (-len(os.path.commonprefix([c.split("."), parts])), len(c), c))


def _declaration(model: UpstreamModel, owner: str, line: int, name: str) -> str | None:
    """`name: T = default` as written at `line` of the module defining `owner`, without the name."""
    relpath = model.relpath_of(owner)
    text = model.tree.read_source(relpath) if relpath else None
    if not text or line <= 0:
        return None
    lines = numbered_lines(text)
    if line > len(lines):
        return None
    match = re.match(rf"\s*{re.escape(name)}\s*(:.*)$", lines[line - 1])
    return re.sub(r"\s+", "", match.group(1)) if match else None


def rename_hint(old: UpstreamModel, new: UpstreamModel, field: str, old_fields, new_fields) -> str:
    """For a ServerArgs field gone: "; renamed to X?" when a field the new release added is
    declared alike (the same annotation and default) and its name is close; else the close
    names, unverified."""
    import difflib

    added = sorted(set(new_fields.fields) - set(old_fields.fields))
    close = difflib.get_close_matches(field, added, n=MAX_CANDIDATES, cutoff=0.6)
    if not close:
        return ""
    was = old_fields.fields[field]
    before = _declaration(old, was.owner, was.line, field)
    for name in close:
        now = new_fields.fields[name]
        if before is not None and before == _declaration(new, now.owner, now.line, name):
            return f"; renamed to {name}?"
    return f"; unverified candidates (a close name, declared differently): {', '.join(close)}"
