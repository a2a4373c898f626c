"""Extract what one upstream module defines, statically, with griffe (SGLang is never imported).

The result is a plain, JSON-ready record so it can be cached per module content: a second
run over the same release never parses SGLang again.
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath
from typing import Any

# griffe reports unresolvable aliases and odd code at DEBUG/WARNING level; they are not ours to show.
logging.getLogger("griffe").setLevel(logging.ERROR)


def _parent_chain(module_name: str, relpath: str):
    """griffe resolves relative imports through Module.parent, so give it the package chain."""
    import griffe

    parent = None
    parts = module_name.split(".")[:-1]
    folder = PurePosixPath(relpath).parent
    folders = [folder.parents[i] for i in range(len(parts) - 1)][::-1] + [folder] if parts else []
    for part, path in zip(parts, folders):
        parent = griffe.Module(part, filepath=Path(str(path)) / "__init__.py", parent=parent)
    return parent


def _binding(member) -> dict[str, Any]:
    if member.is_alias:
        return {"kind": "alias", "line": member.alias_lineno or 0, "target": member.target_path}
    kind = member.kind.value  # "class", "function", "attribute", "module"
    return {"kind": kind, "line": member.lineno or 0}


def extract_module(module_name: str, relpath: str, code: str) -> dict[str, Any]:
    """A record of the module's top level: its bindings, star imports and `__all__`."""
    import griffe

    short_name = module_name.rsplit(".", 1)[-1]
    try:
        module = griffe.visit(
            short_name,
            filepath=Path(relpath),
            code=code,
            parent=_parent_chain(module_name, relpath),
        )
    except Exception as error:  # a file griffe cannot read is opaque, not empty
        return {"opaque": f"{type(error).__name__}: {error}".splitlines()[0]}
    bindings: dict[str, Any] = {}
    wildcards: list[str] = []
    for name, member in module.members.items():
        if member.is_alias and name.endswith("/*"):
            wildcards.append(member.target_path)
        else:
            bindings[name] = _binding(member)
    exports = module.exports
    if exports is not None and not all(isinstance(item, str) for item in exports):
        exports = None  # built from other modules' __all__: treat every public name as exported
    return {"bindings": bindings, "wildcards": wildcards, "exports": list(exports) if exports is not None else None}
