"""One release's command line (`ServerArgs.add_cli_args`) as data, read statically.

Two shapes, often mixed in one release:
- hand-written `parser.add_argument("--a", "--b", dest=..., action=..., ...)` calls in the
  body of `add_cli_args` (every option up to 0.5.13; the deprecated aliases after);
- a call of a generator (`add_cli_args_from_dataclass(parser, ServerArgs)`, from 0.5.14) that
  turns field declarations (`dp_size: A[int, Arg(help=..., aliases=["--data-parallel-size"])] = 1`,
  in `server_args.py` or, from 0.5.20, on the namespace classes under `arg_groups/fields/`)
  into options. How it does so is read from the generator's own code in that release
  (`GeneratorRules`): the metadata class, which of its attributes holds the aliases and the
  explicit name, how a field name becomes an option string, where `dest` comes from, which
  fields are skipped, what a `bool` or a `list` field becomes. A generator whose rules cannot
  be read is an extraction error, as is a command line that yields no option.

argparse's own rule gives the `dest` where none is written: the first long option string,
without its dashes, `-` turned into `_`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Callable

from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.infra.pysource import absolute_from_imports, parse_quietly
from sglang_contracts.infra.shapes import ListOf, Table
from sglang_contracts.upstream.bodies import unparsed
from sglang_contracts.upstream.model import UpstreamModel
from sglang_contracts.upstream.serverargs import SERVER_ARGS, server_args_fields

ENTRY = "add_cli_args"
DEPRECATED_MARKS = ("[deprecated]", "deprecated alias", "deprecated.", "deprecated now", "is deprecated")


@dataclass(frozen=True)
class Option:
    strings: tuple[str, ...]  # as registered, the first one names it
    dest: str
    action: str = "store"  # as written: "store_true", "DeprecatedAliasStoreAction", ...
    type: str = ""
    choices: tuple[str, ...] | None = None  # None: no choices, or not known statically
    default: str = ""  # source text; "" when none is given
    nargs: str = ""
    help: str = ""
    deprecated: bool = False
    replacement: str = ""  # what a deprecated option says to use instead (`new_flag=`)
    line: int = 0
    declared_by: str = ""  # "add_argument", or the field it was generated from (`ServerArgs.dp_size`)

    @property
    def name(self) -> str:
        return self.strings[0] if self.strings else self.dest


@dataclass
class CommandLine:
    options: list[Option]
    shape: str  # "hand-written", "generated" or "mixed"
    allow_abbrev: bool = True  # upstream's own parser (`prepare_server_args`) takes unique prefixes
    by_string: dict[str, Option] = field(default_factory=dict)
    by_dest: dict[str, list[Option]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for option in self.options:
            for string in option.strings:
                self.by_string.setdefault(string, option)
            self.by_dest.setdefault(option.dest, []).append(option)

    def __len__(self) -> int:
        return len(self.options)

    def live(self, dest: str) -> list[Option]:
        """The options storing to `dest` that are not deprecated stand-ins."""
        return [option for option in self.by_dest.get(dest, []) if not option.deprecated]


@dataclass(frozen=True)
class GeneratorRules:
    """How one release's generator turns a field declaration into an option."""

    function: str  # its dotted name
    meta_class: str  # `Arg`
    annotated: tuple[str, ...]  # names that mean typing.Annotated there (`A`)
    bare_string_is_help: bool
    aliases_attr: str
    cli_name_attr: str
    prefix: str  # "--"
    replace: tuple[str, str]  # ("_", "-")
    dest_is_field: bool
    skip_attrs: tuple[str, ...]  # `no_cli`
    needs_meta: bool
    bool_action: str
    list_nargs: str


def take_flag(flag: str, strings: dict[str, Option]) -> tuple[Option | None, list[Option]]:
    """What argparse with abbreviations allowed takes `flag` for among the option `strings`:
    (the option, []) for an exact string or a unique prefix of long option strings, (None, the
    candidates) when the prefix is ambiguous (argparse exits), (None, []) when nothing matches.
    Several strings of one option count as one candidate."""
    if flag in strings:
        return strings[flag], []
    candidates: list[Option] = []
    if flag.startswith("--") and len(flag) > 2:
        for string, option in strings.items():
            if string.startswith(flag) and all(option is not c for c in candidates):
                candidates.append(option)
    return (candidates[0], []) if len(candidates) == 1 else (None, candidates)


def argparse_dest(strings: tuple[str, ...] | list[str]) -> str:
    """argparse's dest for option strings given no `dest=`."""
    long = next((s for s in strings if s.startswith("--")), None)
    chosen = long or next((s for s in strings if s.startswith("-")), "")
    return chosen.lstrip("-").replace("-", "_")


def _text(node: ast.AST | None) -> str:
    """A string built of literals (implicit concatenation, `+`, f-string literal parts), as far as known."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value for part in node.values if isinstance(part, ast.Constant) and isinstance(part.value, str))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return ""


def _string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Constants:
    """Module-level list/tuple/set literals of one module and the names it imports, to read
    `choices=LOAD_FORMAT_CHOICES`; lists built at run time stay unknown."""

    def __init__(self, model: UpstreamModel, module: str, tree: ast.Module, seen: frozenset[str] = frozenset()) -> None:
        self.model, self.module, self.seen = model, module, seen | {module}
        self.values = _module_values(tree)
        self.imported = absolute_from_imports(tree)

    def choices(self, node: ast.AST | None, depth: int = 0) -> tuple[str, ...] | None:
        if node is None or depth > 4:
            return None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return _literal_choices(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.choices(node.left, depth + 1), self.choices(node.right, depth + 1)
            return left + right if left is not None and right is not None else None
        if _is_list_or_tuple_of_one(node):
            return self.choices(node.args[0], depth + 1)  # type: ignore[attr-defined]
        if isinstance(node, ast.Name):
            return self._named_choices(node.id, depth)
        return None

    def _named_choices(self, name: str, depth: int) -> tuple[str, ...] | None:
        """The choices a module-level name holds, defined here or imported from another module."""
        if name in self.values:
            return self.choices(self.values[name], depth + 1)
        if name in self.imported:
            module, _, imported_name = self.imported[name].rpartition(".")
            other = _module_constants(self.model, module, self.seen)
            return other.choices(ast.Name(imported_name), depth + 1) if other is not None else None
        return None


def _module_values(tree: ast.Module) -> dict[str, ast.AST]:
    """Name -> value of each `NAME = value` and `NAME: T = value` of the module's top level (the last wins)."""
    values: dict[str, ast.AST] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            values[statement.targets[0].id] = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            values[statement.target.id] = statement.value
    return values


def _literal_choices(node: ast.List | ast.Tuple | ast.Set) -> tuple[str, ...] | None:
    """The constants a list, tuple or set display holds, as text; None when one is not a constant."""
    values = [element.value for element in node.elts if isinstance(element, ast.Constant)]
    return tuple(str(value) for value in values) if len(values) == len(node.elts) else None


def _is_list_or_tuple_of_one(node: ast.AST) -> bool:
    """`list(x)` or `tuple(x)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple") \
        and len(node.args) == 1


def _module_tree(model: UpstreamModel, module: str) -> ast.Module | None:
    record = model.module(module)
    if record is None or not record.relpath:
        return None
    code = model.tree.readable_source(record.relpath)
    return _parsed(code) if code else None


@lru_cache(maxsize=None)
def _parsed(code: str) -> ast.Module | None:
    """A module's tree, parsed once while one command line is read (`_extracted`): each of
    ServerArgs' 400 fields looks its declaration up, and parsing server_args.py for every one
    was 70 s of a miles run. Nothing here changes a tree."""
    try:
        return parse_quietly(code)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _extracted(model: UpstreamModel) -> dict:
    try:
        return _extract(model)
    finally:
        _parsed.cache_clear()  # the trees are large: not kept past this command line


def _module_constants(model: UpstreamModel, module: str, seen: frozenset[str]) -> _Constants | None:
    if module in seen:
        return None
    tree = _module_tree(model, module)
    return _Constants(model, module, tree, seen) if tree is not None else None


def _keywords(call: ast.Call) -> dict[str, ast.AST]:
    return {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}


def _deprecated(action: str, help_text: str) -> bool:
    lowered = help_text.lower()
    return "deprecated" in action.lower() or any(mark in lowered for mark in DEPRECATED_MARKS) \
        or lowered.startswith("deprecated")


def _flags(call: ast.Call) -> tuple[str, ...]:
    """The call's positional arguments that are literal option strings (`"--tp-size"`)."""
    return tuple(text for text in (_string(arg) for arg in call.args) if text is not None and text.startswith("-"))


def _hand_written(call: ast.Call, constants: _Constants) -> Option | None:
    strings = _flags(call)
    if not strings or len(strings) != len(call.args):
        return None  # options whose strings are computed are not known statically
    kwargs = _keywords(call)
    dest = _string(kwargs.get("dest")) or argparse_dest(strings)
    action = _string(kwargs.get("action")) or (unparsed(kwargs["action"]) if "action" in kwargs else "store")
    help_text = _text(kwargs.get("help"))
    return Option(
        strings=strings, dest=dest, action=action,
        type=unparsed(kwargs["type"]) if "type" in kwargs else "",
        choices=constants.choices(kwargs.get("choices")),
        default=unparsed(kwargs["default"]) if "default" in kwargs else "",
        nargs=unparsed(kwargs["nargs"]) if "nargs" in kwargs else "",
        help=help_text, deprecated=_deprecated(action, help_text),
        replacement=_text(kwargs.get("new_flag")), line=call.lineno, declared_by="add_argument",
    )


# -- the generator's rules, read from its code ---------------------------------------------------


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name), None)


def _or_of_attr(node: ast.AST) -> tuple[str, ast.AST | None] | None:
    """`meta.attr or FALLBACK` -> (attr, FALLBACK)."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and isinstance(node.values[0], ast.Attribute):
        return node.values[0].attr, node.values[1] if len(node.values) > 1 else None
    return None


def _name_rule(tree: ast.Module, function: str) -> tuple[str, tuple[str, str]] | None:
    """`return "--" + name.replace("_", "-")` in the named helper -> ("--", ("_", "-"))."""
    helper = _function(tree, function)
    for node in ast.walk(helper) if helper else ():
        rule = _prefix_and_replace(node)
        if rule is not None:
            return rule
    return None


def _prefix_and_replace(node: ast.AST) -> tuple[str, tuple[str, str]] | None:
    """("--", ("_", "-")) of `return "--" + name.replace("_", "-")`."""
    if not (isinstance(node, ast.Return) and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add)):
        return None
    prefix, call = _string(node.value.left), node.value.right
    if prefix is None or not _is_replace_call(call):
        return None
    old, new = _string(call.args[0]), _string(call.args[1])  # type: ignore[attr-defined]
    return (prefix, (old, new)) if old is not None and new is not None else None


def _is_replace_call(node: ast.AST) -> bool:
    """`x.replace(a, b)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "replace" \
        and len(node.args) == 2


def generator_rules(model: UpstreamModel, dotted: str) -> GeneratorRules:
    """The rules of the option generator `dotted` (module.function), read from its code: the
    metadata class and annotation names of its module, then what the generator's body does
    with a field (one walk of it)."""
    module, _, name = dotted.rpartition(".")
    tree = _module_tree(model, module)
    generator = _function(tree, name) if tree is not None else None
    if tree is None or generator is None:
        raise ContractsError(f"{model.release.label}: the option generator {dotted} cannot be read")
    meta_class, bare = _metadata_class(tree)
    body = _GeneratorBody()
    for node in ast.walk(generator):
        body.read(tree, node)
    missing = _missing_rules(meta_class, body)
    if missing:
        raise ContractsError(f"{model.release.label}: cannot read the rules of the option generator {dotted} "
                             f"({', '.join(missing)} not found)")
    return GeneratorRules(dotted, meta_class, tuple(sorted(_annotated_names(tree))), bare, body.aliases_attr,
                          body.cli_name_attr, body.name_rule[0], body.name_rule[1], body.dest_is_field,
                          tuple(body.skip_attrs), body.needs_meta, body.bool_action or "store", body.list_nargs or "+")


def _missing_rules(meta_class: str, body: _GeneratorBody) -> list[str]:
    """What of the generator's rules could not be read, in words."""
    return [what for what, got in (("its metadata class", meta_class),
                                   ("where aliases come from", body.aliases_attr),
                                   ("the explicit name", body.cli_name_attr),
                                   ("how a field is named", body.name_rule)) if not got]


def _annotated_names(tree: ast.Module) -> set[str]:
    """`Annotated` and the module's aliases of it (`A = Annotated`)."""
    return {"Annotated"} | {target.id for node in tree.body if isinstance(node, ast.Assign)
                            and isinstance(node.value, ast.Name) and node.value.id == "Annotated"
                            for target in node.targets if isinstance(target, ast.Name)}


def _metadata_class(tree: ast.Module) -> tuple[str, bool]:
    """(the module's class the generator tests metadata against with isinstance, whether it
    also takes a bare string there)."""
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    meta_class, bare = "", False
    for node in ast.walk(tree):
        tested = _isinstance_class(node)
        if tested is None:
            continue
        if tested in classes and not meta_class:
            meta_class = tested
        bare = bare or tested == "str"
    return meta_class, bare


def _isinstance_class(node: ast.AST) -> str | None:
    """`C` of `isinstance(x, C)`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
            and len(node.args) == 2 and isinstance(node.args[1], ast.Name):
        return node.args[1].id
    return None


@dataclass
class _GeneratorBody:
    """What the generator's body does with a field, as its nodes are read in walk order."""

    aliases_attr: str = ""  # `[...] + (meta.aliases or [])`
    cli_name_attr: str = ""  # `meta.cli_name or helper(field.name)`
    name_rule: tuple[str, tuple[str, str]] | None = None  # the helper's `"--" + name.replace("_", "-")`
    list_nargs: str = ""  # `meta.nargs or "+"`
    dest_is_field: bool = False  # `{"dest": field.name}`
    skip_attrs: list[str] = field(default_factory=list)  # `if meta.skip: continue`
    needs_meta: bool = False  # `if meta is None: continue`
    bool_action: str = ""  # `if ... is bool: ... action="store_true"`

    def read(self, tree: ast.Module, node: ast.AST) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            self._assignment(tree, node.value)
        if isinstance(node, ast.Dict):
            self.dest_is_field |= _gives_field_name_as_dest(node)
        if isinstance(node, ast.If) and any(isinstance(item, ast.Continue) for item in node.body):
            self._skip(node.test)
        if _tests_is_bool(node):
            self._bool_action(node)

    def _bool_action(self, branch: ast.If) -> None:
        """The last literal `action=` under `if ... is bool:`."""
        for inner in ast.walk(branch):
            if isinstance(inner, ast.keyword) and inner.arg == "action" and _string(inner.value):
                self.bool_action = _string(inner.value) or ""

    def _assignment(self, tree: ast.Module, value: ast.AST) -> None:
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(value.left, ast.List):
            held = _or_of_attr(value.right)
            self.aliases_attr = held[0] if held else self.aliases_attr
        held = _or_of_attr(value)
        if held and _called_on_field_name(held[1]):
            self.cli_name_attr, self.name_rule = held[0], _name_rule(tree, held[1].func.id)
        if held and _string(held[1]) is not None:
            self.list_nargs = _string(held[1]) or self.list_nargs

    def _skip(self, test: ast.expr) -> None:
        if isinstance(test, ast.Attribute):
            self.skip_attrs.append(test.attr)
        elif isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Is) \
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
            self.needs_meta = True


def _gives_field_name_as_dest(node: ast.Dict) -> bool:
    """`{"dest": field.name, ...}`."""
    return any(_string(key) == "dest" and isinstance(value, ast.Attribute) and value.attr == "name"
               for key, value in zip(node.keys, node.values))


def _tests_is_bool(node: ast.AST) -> bool:
    """`if <x> is bool:`."""
    return isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.ops[0], ast.Is) \
        and isinstance(node.test.comparators[0], ast.Name) and node.test.comparators[0].id == "bool"


def _called_on_field_name(node: ast.AST | None) -> bool:
    """`helper(field.name, ...)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and bool(node.args) \
        and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "name"


def _class_annotations(model: UpstreamModel, origin: str) -> dict[str, ast.AnnAssign]:
    module, _, name = origin.rpartition(".")
    tree = _module_tree(model, module)
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {item.target.id: item for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)}
    return {}


def _annotations_of(model: UpstreamModel) -> Callable[[str], dict[str, ast.AnnAssign]]:
    """_class_annotations, each class's read once: each of ServerArgs' fields looked its class's
    whole body over again (fields squared: campaign 19)."""
    tables: dict[str, dict[str, ast.AnnAssign]] = {}

    def of(origin: str) -> dict[str, ast.AnnAssign]:
        if origin not in tables:
            tables[origin] = _class_annotations(model, origin)
        return tables[origin]

    return of


def _subscript_name(node: ast.AST) -> str:
    return unparsed(node.value).rsplit(".", 1)[-1] if isinstance(node, ast.Subscript) else ""


def _generated(field_name: str, owner: str, declaration: ast.AnnAssign, rules: GeneratorRules,
               constants: _Constants) -> Option | None:
    """The option the generator makes of one annotated field, as `rules` say it does: none for a
    field without metadata, or with a skip attribute set."""
    annotation = declaration.annotation
    if _subscript_name(annotation) not in rules.annotated or not isinstance(annotation, ast.Subscript):
        return None  # no metadata: the generator leaves it to hand-written code
    parts = _slice_items(annotation)
    inner, metas = parts[0], parts[1:]
    meta = _field_metadata(metas, rules)
    if meta is None or _skipped(meta, rules):
        return None
    strings = _option_strings(field_name, meta, rules)
    optional = _without_none(inner)
    choices = _generated_choices(meta, optional, constants)
    action = _generated_action(meta, optional, rules)
    nargs = _generated_nargs(meta, optional, rules)
    help_text = _text(meta.get("help"))
    return Option(
        strings=strings, dest=field_name if rules.dest_is_field else argparse_dest(strings), action=action,
        type=unparsed(meta["type_parser"]) if "type_parser" in meta else unparsed(inner), choices=choices,
        default=unparsed(declaration.value) if declaration.value is not None else "", nargs=nargs, help=help_text,
        deprecated=_deprecated(action, help_text), line=declaration.lineno,
        declared_by=f"{owner.rsplit('.', 1)[-1]}.{field_name}",
    )


def _slice_items(subscript: ast.Subscript) -> list[ast.expr]:
    """`[A, B]` of `X[A, B]`, `[A]` of `X[A]`."""
    return subscript.slice.elts if isinstance(subscript.slice, ast.Tuple) else [subscript.slice]


def _skipped(meta: dict[str, ast.AST], rules: GeneratorRules) -> bool:
    """Whether the metadata sets a skip attribute (`Arg(skip=True)`): the generator makes no option."""
    return any(isinstance(meta.get(attr), ast.Constant) and meta[attr].value for attr in rules.skip_attrs)


def _generated_choices(meta: dict[str, ast.AST], optional: ast.AST, constants: _Constants) -> tuple[str, ...] | None:
    """The metadata's `choices=`, or the values of a `Literal[...]` type."""
    choices = constants.choices(meta.get("choices"))
    if choices is None and _subscript_name(optional) == "Literal":
        choices = constants.choices(ast.Tuple(_slice_items(optional)))  # type: ignore[arg-type]
    return choices


def _generated_nargs(meta: dict[str, ast.AST], optional: ast.AST, rules: GeneratorRules) -> str:
    """The metadata's `nargs=`, or the generator's for a list field it has no type parser for."""
    nargs = _string(meta.get("nargs")) or ""
    if not nargs and _subscript_name(optional) in ("list", "List") and "type_parser" not in meta:
        nargs = rules.list_nargs
    return nargs


def _field_metadata(metas: list[ast.AST], rules: GeneratorRules) -> dict[str, ast.AST] | None:
    """The keywords of the field's metadata (an instance of the metadata class, its first
    argument the help; or a bare string, the help, where the generator takes one)."""
    for item in metas:
        if isinstance(item, ast.Call) and unparsed(item.func).rsplit(".", 1)[-1] == rules.meta_class:
            meta = _keywords(item)
            if item.args:
                meta.setdefault("help", item.args[0])
            return meta
        if rules.bare_string_is_help and _string(item) is not None:
            return {"help": item}
    return None


def _option_strings(field_name: str, meta: dict[str, ast.AST], rules: GeneratorRules) -> tuple[str, ...]:
    """The explicit name or the one made of the field's, then the aliases."""
    explicit = _string(meta.get(rules.cli_name_attr))
    cli_name = explicit or rules.prefix + field_name.replace(*rules.replace)
    aliases = meta.get(rules.aliases_attr)
    alias_strings = tuple(text for text in (_string(e) for e in aliases.elts) if text) \
        if isinstance(aliases, (ast.List, ast.Tuple)) else ()
    return (cli_name, *alias_strings)


def _without_none(inner: ast.AST) -> ast.AST:
    """`Optional[X]`, `Union[X, ...]`'s first, `X | None`: X; any other type as it is."""
    if isinstance(inner, ast.Subscript) and _subscript_name(inner) in ("Optional", "Union"):
        return inner.slice.elts[0] if isinstance(inner.slice, ast.Tuple) else inner.slice
    if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.BitOr):
        kept = [side for side in (inner.left, inner.right)
                if not (isinstance(side, ast.Constant) and side.value is None)]
        return kept[0] if len(kept) == 1 else inner
    return inner


def _generated_action(meta: dict[str, ast.AST], optional: ast.AST, rules: GeneratorRules) -> str:
    if "action" in meta:
        return _string(meta["action"]) or unparsed(meta["action"])
    if isinstance(optional, ast.Name) and optional.id == "bool":
        return rules.bool_action
    return "store"


def _entry(tree: ast.Module) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ServerArgs":
            found = _function(ast.Module(body=node.body, type_ignores=[]), ENTRY)
            if found is not None:
                return found
    return None


def _extract(model: UpstreamModel) -> dict:
    symbol = model.resolve_path(SERVER_ARGS)
    module = symbol.origin.rpartition(".")[0] if symbol.origin else "sglang.srt.server_args"
    tree = _module_tree(model, module)
    entry = _entry(tree) if tree is not None else None
    if entry is None:
        return {"error": f"no ServerArgs.{ENTRY} found in {module}"}
    parser = entry.args.args[0].arg if entry.args.args else "parser"
    constants = _Constants(model, module, tree)
    options: list[Option] = []
    generated = hand = 0
    for node in ast.walk(entry):
        if _is_add_argument(node, parser):
            option = _hand_written(node, constants)
            if option is not None:
                options.append(option)
                hand += 1
        elif _calls_generator(node, parser, constants.imported):
            made = _generated_options(model, module, constants, constants.imported[node.func.id])
            options += made
            generated += len(made)
    shape = _shape(generated, hand)
    options = _field_defaults_resolved(model, options)
    return {"shape": shape, "options": [asdict(option) for option in options], "allow_abbrev": _allows_abbrev(tree)}


def _is_add_argument(node: ast.AST, parser: str) -> bool:
    """`<parser>.add_argument(...)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument" \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == parser


def _calls_generator(node: ast.AST, parser: str, imported: dict[str, str]) -> bool:
    """`imported_generator(<parser>, ServerArgs, ...)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and bool(node.args) \
        and isinstance(node.args[0], ast.Name) and node.args[0].id == parser and node.func.id in imported \
        and len(node.args) >= 2 and unparsed(node.args[1]) == "ServerArgs"


def _generated_options(model: UpstreamModel, module: str, constants: _Constants, generator: str) -> list[Option]:
    """The options the generator `generator` makes of ServerArgs' fields, each read with the
    constants of the module its field is declared in."""
    rules = generator_rules(model, generator)
    fields = server_args_fields(model)
    options = []
    annotations = _annotations_of(model)
    for name, declared in (fields.fields.items() if fields else ()):
        declaration = annotations(declared.owner).get(name)
        if declaration is None:
            continue
        owner_module = declared.owner.rpartition(".")[0]
        owner_constants = constants if owner_module == module else \
            (_module_constants(model, owner_module, frozenset()) or constants)
        option = _generated(name, declared.owner, declaration, rules, owner_constants)
        if option is not None:
            options.append(option)
    return options


def _shape(generated: int, hand: int) -> str:
    """The command line's shape by how many of its options were generated and hand-written."""
    return "mixed" if generated and hand else "generated" if generated else "hand-written"


FIELD_REFERENCE = re.compile(r"ServerArgs\.(\w+)")


def _field_defaults_resolved(model: UpstreamModel, options: list[Option]) -> list[Option]:
    """Hand-written `default=ServerArgs.tp_size` replaced by the field's declared default (`1`),
    so that defaults compare across the two shapes."""
    if not any(FIELD_REFERENCE.fullmatch(option.default) for option in options):
        return options
    fields = server_args_fields(model)
    declared: dict[str, str] = {}
    annotations = _annotations_of(model)
    for name, found in (fields.fields.items() if fields else ()):
        declaration = annotations(found.owner).get(name)
        if declaration is not None and declaration.value is not None:
            declared[name] = unparsed(declaration.value)
    resolved = []
    for option in options:
        reference = FIELD_REFERENCE.fullmatch(option.default)
        if reference and reference.group(1) in declared:
            option = replace(option, default=declared[reference.group(1)])
        resolved.append(option)
    return resolved


MADE_EMPTY = {"list": "[]", "dict": "{}", "set": "set()", "tuple": "()"}


def default_spelled(option: Option) -> str:
    """The option's default as argparse ends up with it, spelled comparably across releases and
    shapes: argparse's implicit ones (`False` for `store_true`, `None`), a field declared with a
    factory or a default as what it gives (`field(default_factory=list)`,
    `msgspec.field(default_factory=list)` and `[]` are one default)."""
    text = _field_value(option.default) or option.default
    if not text:
        text = {"store_true": "False", "store_false": "True"}.get(option.action, "None")
    return text


def _field_value(text: str) -> str | None:
    """What `field(...)` (dataclasses', msgspec's) gives a field that is not set: its default,
    or what its factory makes (`[]` for `list`, the body of a `lambda:`); None for anything else."""
    if "field(" not in text:
        return None
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.Call) or _callee_name(node) != "field":
        return None
    for keyword in node.keywords:
        if keyword.arg == "default_factory":
            return _factory_made(keyword.value)
        if keyword.arg == "default":
            return unparsed(keyword.value)
    return None


def _factory_made(factory: ast.expr) -> str:
    """What a `default_factory` makes: `[]` for `list`, the body of a `lambda:`, `f()` for `f`."""
    made = unparsed(factory.body if isinstance(factory, ast.Lambda) and not factory.args.args else factory)
    return MADE_EMPTY.get(made, made if isinstance(factory, ast.Lambda) else f"{made}()")


def _callee_name(call: ast.Call) -> str | None:
    """`f` of `f(...)` or of `mod.f(...)` (an attribute's name, else a name's)."""
    return getattr(call.func, "attr", None) or getattr(call.func, "id", None)


def is_argument_parser(node: ast.AST) -> bool:
    """An `ArgumentParser(...)` or `argparse.ArgumentParser(...)` call."""
    return isinstance(node, ast.Call) and _callee_name(node) == "ArgumentParser"


def allow_abbrev(call: ast.Call) -> bool | None:
    """The `allow_abbrev` of an `ArgumentParser(...)` call (argparse's default, True, when not
    given); None when it is computed."""
    for keyword in call.keywords:
        if keyword.arg == "allow_abbrev":
            value = keyword.value
            return value.value if isinstance(value, ast.Constant) and isinstance(value.value, bool) else None
    return True


def _allows_abbrev(tree: ast.Module) -> bool:
    """Does every parser the module builds around `ServerArgs.add_cli_args` (`prepare_server_args`)
    leave argparse's `allow_abbrev=True`?"""
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef) or ENTRY not in {getattr(n, "attr", "") for n in ast.walk(function)}:
            continue
        if any(is_argument_parser(node) and allow_abbrev(node) is not True for node in ast.walk(function)):
            return False
    return True


# What _extracted makes, as its cached record is read back: an Option's fields (asdict), or why there are none.
_OPTION = Table(strings=ListOf(str), dest=str, action=str, type=str, choices=(ListOf(str), None), default=str,
                nargs=str, help=str, deprecated=bool, replacement=str, line=int, declared_by=str, closed=True)
EXTRACTED = (Table(error=str), Table(shape=str, options=ListOf(_OPTION), optional={"allow_abbrev": bool}))


def command_line(model: UpstreamModel) -> CommandLine | None:
    """The release's `ServerArgs` command line; None without a ServerArgs. Raises ContractsError
    when it has one but no option can be read from it."""
    symbol = model.resolve_path(SERVER_ARGS)
    if not symbol.found:
        return None
    data = model.whole_release_search("server-args command line", lambda: _extracted(model), EXTRACTED)
    if not isinstance(data, dict) or "error" in data or not data.get("options"):
        reason = data.get("error", "no option") if isinstance(data, dict) else "no option"
        raise ContractsError(f"{model.release.label}: the ServerArgs command line yields no option ({reason}); "
                             "refusing to judge command-line contracts on nothing")
    options = []
    for raw in data["options"]:  # the cached data is not changed: a process that keeps records reads it again
        choices = tuple(raw["choices"]) if raw["choices"] is not None else None
        options.append(Option(**{**raw, "strings": tuple(raw["strings"]), "choices": choices}))
    return CommandLine(options, data["shape"], data.get("allow_abbrev", True))
