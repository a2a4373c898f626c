"""libcst edits the Python fixes share: find the node a finding points at, by its position,
and replace it, leaving every other byte of the file as it was."""

from __future__ import annotations

import re
import weakref
from collections import Counter
from typing import Callable, Sequence

import libcst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from sglang_contracts.fix.document import Document, FixNotBuilt
from sglang_contracts.infra.pysource import is_dotted_name

Edit = Callable[[libcst.CSTNode], libcst.CSTNode | libcst.FlattenSentinel | libcst.RemovalSentinel]


class _OnOneLine(libcst.CSTTransformer):
    """A transformer whose edit lies on one line of the file (1-based `line`): it descends only
    into the statements that span that line (a decorated definition's from its first decorator),
    and keeps every other statement as it is rather than rebuild it."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line

    def on_visit(self, node: libcst.CSTNode) -> bool:
        # Statements only: an expression's or a parameter's position leaves out its parentheses
        # or annotation, a statement's holds all but its decorators and leading comment lines.
        if isinstance(node, (libcst.SimpleStatementLine, libcst.BaseCompoundStatement)) and not self.reaches(node):
            return False
        return super().on_visit(node)

    def reaches(self, statement: libcst.CSTNode) -> bool:
        where = self.get_metadata(PositionProvider, statement)
        decorators = getattr(statement, "decorators", ())
        first = self.get_metadata(PositionProvider, decorators[0]).start.line if decorators else where.start.line
        return first <= self.line <= where.end.line


class _AtPosition(_OnOneLine):
    """Applies `edit` to the first node of `kinds` that starts at (line, column)."""

    def __init__(self, line: int, column: int, kinds: tuple[type, ...], edit: Edit) -> None:
        super().__init__(line)
        self.column, self.kinds, self.edit = column, kinds, edit
        self.done = False

    def on_leave(self, original, updated):
        if not self.done and isinstance(original, self.kinds):
            start = self.get_metadata(PositionProvider, original).start
            if (start.line, start.column) == (self.line, self.column):
                self.done = True
                return self.edit(updated)
        return updated


def edit_at(document: Document, line: int, col: int, kinds: tuple[type, ...], edit: Edit) -> bool:
    """Edit the node of one of `kinds` at a finding's 1-based (line, col); whether one was there
    and the file changed."""
    return transform(document, _AtPosition(line, col - 1, kinds, edit))


def rename_at(diagnostic, workspace, kinds: tuple[type, ...], rename: Callable[[libcst.CSTNode, str], libcst.CSTNode],
              unrenamed: str) -> bool:
    """The fix of a name renamed in place (SGC201, SGC321): the node of `kinds` at the finding
    gets the check's `renamed_to`; without one, the finding is left, saying `unrenamed`."""
    document = workspace.document(diagnostic.path)
    renamed = diagnostic.data.get("renamed_to")
    if not document.python:
        return False
    if not renamed:
        document.note(diagnostic.line, diagnostic.col, diagnostic.code, unrenamed)
        return False
    return edit_at(document, diagnostic.line, diagnostic.col, kinds, lambda node: rename(node, renamed))


def document_to_rewrite(diagnostic, workspace, ready: bool, why: str) -> Document | None:
    """The finding's Python file, when its fix has what it needs (`ready`); else None, the
    finding noted with `why` (and None, nothing said, for a file that is not Python)."""
    document = workspace.document(diagnostic.path)
    if not document.python:
        return None
    if not ready:
        document.note(diagnostic.line, diagnostic.col, diagnostic.code, why)
        return None
    return document


def transform(document: Document, transformer: _OnOneLine) -> bool:
    """Run a transformer that sets `done` when it found its node; whether the file changed. It
    runs on the top-level statement holding its line alone, when one can be told (the positions
    and the code of the whole file cost a pass over every node of it for a one-line edit)."""
    around = _statement_around(document, transformer.line)
    if around is None or transformer.get_inherited_dependencies() != {PositionProvider}:
        module, code = document.metadata.visit(transformer), None
    else:
        module, code = _transformed_alone(document, transformer, *around)
    if not transformer.done:
        return False
    code = module.code if code is None else code
    if code == document.text:
        return False
    document.edited(module, code)
    return True


def _transformed_alone(document: Document, transformer: _OnOneLine, index: int, start: int, end: int,
                       lines_before: int) -> tuple[libcst.Module, str | None]:
    """The module with the transformer run on its top-level statement at `index` alone (its
    characters [start, end) of the text, `lines_before` lines above it), and the module's code,
    the statement's new code put in the text (None when the statement is gone)."""
    module = document.module
    alone = module.with_changes(header=[], body=[module.body[index]], footer=[], has_trailing_newline=True)
    with transformer.resolve(_Shifted(alone, lines_before)):
        edited = alone.visit(transformer).body
    module = module.with_changes(body=[*module.body[:index], *edited, *module.body[index + 1:]])
    if not edited:  # the module's own code then: an empty one still ends its line
        return module, None
    return module, document.text[:start] + "".join(module.code_for_node(s) for s in edited) + document.text[end:]


_NEWLINE = re.compile(r"\r\n?|\n")  # a line's end, as libcst's positions count lines


def _statement_around(document: Document, line: int) -> tuple[int, int, int, int] | None:
    """The top-level statement whose lines (its leading comments too) hold 1-based `line`: (its
    index in the module's body, its first and end characters in the text, the lines before it);
    None when its code is not the text there (the file's last line with no line end)."""
    module, text = document.module, document.text
    header = "".join(module.code_for_node(empty) for empty in module.header)
    start, lines_before = len(header), len(_NEWLINE.findall(header))
    rendered = _RENDERED.setdefault(document, {})
    for index, statement in enumerate(module.body):
        # A statement no fix changed is the same node after each edit: rendered once, not once a
        # fix (1,000 fixes of a file's imports rendered its 500 statements each: 39 s, campaign 19)
        known = rendered.get(id(statement))
        if known is None or known[0] is not statement:
            code = module.code_for_node(statement)
            known = rendered[id(statement)] = (statement, code, len(_NEWLINE.findall(code)))
        _, code, lines = known
        if lines_before < line <= lines_before + lines:
            end = start + len(code)
            return (index, start, end, lines_before) if text[start:end] == code else None
        start, lines_before = start + len(code), lines_before + lines
    return None


# Each document's statements as rendered: id -> (the node, its code, its lines); the node kept so
# that an id is never another's.
_RENDERED: "weakref.WeakKeyDictionary[Document, dict[int, tuple[libcst.CSTNode, str, int]]]" = \
    weakref.WeakKeyDictionary()


class _Shifted:
    """A statement's positions as they are in the file (`lines_before` lines above it), for a
    transformer run on it alone (MetadataDependent.resolve takes what resolves its metadata)."""

    def __init__(self, alone: libcst.Module, lines_before: int) -> None:
        self.alone, self.lines_before = alone, lines_before

    def resolve_many(self, providers) -> dict:
        shift = self.lines_before
        positions = MetadataWrapper(self.alone, unsafe_skip_copy=True).resolve(PositionProvider)
        positions = {node: CodeRange(CodePosition(where.start.line + shift, where.start.column),
                                     CodePosition(where.end.line + shift, where.end.column))
                     for node, where in positions.items()}
        return {PositionProvider: positions}


def nodes_at(document: Document, line: int, col: int, kinds: tuple[type, ...]) -> list[libcst.CSTNode]:
    """The nodes of `kinds` that start at a 1-based (line, col), outermost first."""
    positions = document.metadata.resolve(PositionProvider)
    return [node for node, where in positions.items()
            if isinstance(node, kinds) and (where.start.line, where.start.column) == (line, col - 1)]


def dotted(name: str) -> libcst.Attribute | libcst.Name:
    """`a.b.c` as an expression node."""
    if not is_dotted_name(name):  # parsed as an expression, `x; import os` would not even be one
        raise FixNotBuilt(f"{name} is not a Python name")
    return libcst.parse_expression(name)  # type: ignore[return-value]


def expression(text: str) -> libcst.BaseExpression:
    """An expression a fix writes (upstream's own code, learned), as a node; one that is not a
    single Python expression is never written."""
    try:
        return libcst.parse_expression(text)
    except libcst.ParserSyntaxError:
        raise FixNotBuilt(f"{text} is not a Python expression") from None


def dotted_text(node: libcst.CSTNode) -> str:
    return libcst.Module([]).code_for_node(node)


def without(names: Sequence[libcst.ImportAlias], index: int) -> list[libcst.ImportAlias]:
    """The aliases of an import without the one at `index`, the last one's comma as before."""
    kept = [alias for i, alias in enumerate(names) if i != index]
    if index == len(names) - 1 and kept:
        kept[-1] = kept[-1].with_changes(comma=_closing_comma(kept[-1].comma, names[-1].comma))
    return kept


def _closing_comma(mine, removed):
    """The new last alias's comma: the removed one's (the line's end before `)`), but with the
    comment this alias's own line ended with."""
    if (isinstance(mine, libcst.Comma) and isinstance(removed, libcst.Comma)
            and isinstance(mine.whitespace_after, libcst.ParenthesizedWhitespace)
            and isinstance(removed.whitespace_after, libcst.ParenthesizedWhitespace)):
        return removed.with_changes(whitespace_before=mine.whitespace_before, whitespace_after=
                                    removed.whitespace_after.with_changes(first_line=mine.whitespace_after.first_line))
    return removed


class _MoveImportedName(_OnOneLine):
    """`from old import a, name, b` -> `from old import a, b` + `from new import name` on the next
    line (or the module renamed in place when `name` is all the statement imports)."""

    def __init__(self, line: int, column: int, name: str, home: str) -> None:
        super().__init__(line)
        if not is_dotted_name(home) or not is_dotted_name(name):
            raise FixNotBuilt(f"{home if is_dotted_name(name) else name} is not a Python name")
        self.target, self.name = (line, column), name
        self.module, _, self.leaf = home.rpartition(".")
        self.done = False
        self.split: libcst.ImportFrom | None = None

    def leave_ImportFrom(self, original: libcst.ImportFrom, updated: libcst.ImportFrom) -> libcst.ImportFrom:
        if self.done or isinstance(original.names, libcst.ImportStar) or original.relative:
            return updated
        for index, alias in enumerate(original.names):
            start = self.get_metadata(PositionProvider, alias).start
            if (start.line, start.column) != self.target or dotted_text(alias.name) != self.name:
                continue
            self.done = True
            keep_as = alias.asname or (libcst.AsName(libcst.Name(self.name)) if self.leaf != self.name else None)
            moved = updated.names[index].with_changes(name=libcst.Name(self.leaf), asname=keep_as)
            if len(original.names) == 1:
                return updated.with_changes(module=dotted(self.module), names=[moved])
            self.split = libcst.ImportFrom(module=dotted(self.module),
                                           names=[moved.with_changes(comma=libcst.MaybeSentinel.DEFAULT)])
            return updated.with_changes(names=without(updated.names, index))
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        if self.split is None:
            return updated
        added, self.split = libcst.SimpleStatementLine(body=[self.split]), None
        return libcst.FlattenSentinel([updated, added])


def move_imported_name(document: Document, line: int, col: int, name: str, home: str) -> bool:
    """Import `name` (imported at 1-based line:col) from where `home` (`pkg.mod.leaf`) defines it."""
    return transform(document, _MoveImportedName(line, col - 1, name, home))


class _ReplaceAttribute(_OnOneLine):
    """`m.name` (its `name` at line:column), or `f(...)` (its `f` there) -> the expression `replacement`."""

    def __init__(self, line: int, column: int, replacement: libcst.BaseExpression) -> None:
        super().__init__(line)
        self.target, self.replacement = (line, column), replacement
        self.done = False

    def leave_Attribute(self, original: libcst.Attribute, updated: libcst.Attribute):
        if not self.done:
            start = self.get_metadata(PositionProvider, original.attr).start
            if (start.line, start.column) == self.target:
                self.done = True
                return self.replacement.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return updated

    def leave_Call(self, original: libcst.Call, updated: libcst.Call):
        """`f(m.name)` (its `f` at line:column: a read's level that upstream rewrote whole)."""
        if not self.done and isinstance(original.func, libcst.Name):
            start = self.get_metadata(PositionProvider, original.func).start
            if (start.line, start.column) == self.target:
                self.done = True
                return self.replacement.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return updated


def replace_attribute(document: Document, line: int, col: int, replacement: str) -> bool:
    """`m.name` -> the dotted name `replacement`."""
    return transform(document, _ReplaceAttribute(line, col - 1, dotted(replacement)))


def rewrite_read(document: Document, line: int, col: int, replacement: str) -> bool:
    """`m.name` -> the expression `replacement` (as upstream now reads the value)."""
    return transform(document, _ReplaceAttribute(line, col - 1, expression(replacement)))


def ensure_import(document: Document, module_name: str) -> None:
    """`import module_name` at module level, unless the file has it (LibCST's AddImportsVisitor:
    after the file's top block of imports, its docstring and `__future__` imports kept first)."""
    if not is_dotted_name(module_name):
        raise FixNotBuilt(f"{module_name} is not a Python name")
    from libcst.codemod.visitors import AddImportsVisitor

    context = codemod_context(document)
    AddImportsVisitor.add_needed_import(context, module_name)
    added = document.metadata.visit(AddImportsVisitor(context))
    if added.code != document.text:
        document.module = _sorted_into_imports(added, module_name)


def codemod_context(document: Document):
    """A LibCST codemod's context on the document's tree and its metadata as resolved: its
    visitor is run with `document.metadata.visit`, not `transform_module`, which would copy the
    tree and resolve its metadata again."""
    from libcst.codemod import CodemodContext

    return CodemodContext(wrapper=document.metadata)


def _import_key(statement: libcst.CSTNode) -> tuple[int, int, str] | None:
    """Where isort's default order puts a top-level import statement: (section: `__future__`,
    the standard library, the others, relative; `import x` before `from x import`; the module)."""
    if not isinstance(statement, libcst.SimpleStatementLine) or not statement.body:
        return None
    small = statement.body[0]
    if isinstance(small, libcst.Import):
        name = dotted_text(small.names[0].name)
        return _section(name), 0, name
    if isinstance(small, libcst.ImportFrom):
        name = dotted_text(small.module) if small.module is not None else ""
        return (3 if small.relative else _section(name)), 1, name
    return None


def _section(module_name: str) -> int:
    import sys

    top = module_name.partition(".")[0]
    return 0 if top == "__future__" else 1 if top in sys.stdlib_module_names else 2


def _sorted_into_imports(module: libcst.Module, module_name: str) -> libcst.Module:
    """The `import module_name` statement AddImportsVisitor put after the file's top block of
    imports, moved to where isort's default order has it in that block: `import msgspec` before
    `from sglang... import`, a standard library module among the others of its section."""
    body = list(module.body)
    key = (_section(module_name), 0, module_name)
    index = next((i for i, statement in enumerate(body) if _import_key(statement) == key
                  and len(statement.body) == 1 and statement.body[0].names[0].asname is None), None)
    if index is None:
        return module
    added = body.pop(index)
    first = next((i for i, statement in enumerate(body) if _import_key(statement) is not None), None)
    if first is None:
        return module
    last = first
    while last + 1 < len(body) and _import_key(body[last + 1]) is not None:
        last += 1
    later = next((i for i in range(first, last + 1) if _import_key(body[i]) > key), None)
    if later is None:  # after the block's last import, a section of its own when it is another
        fresh = _import_key(body[last])[0] != key[0]
        body.insert(last + 1, added.with_changes(leading_lines=[libcst.EmptyLine()] if fresh else []))
        return module.with_changes(body=body)
    following = body[later]
    lines = list(following.leading_lines)
    blank = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
    if _import_key(following)[0] == key[0]:  # it takes the blank lines before the section; a comment stays
        body[later] = following.with_changes(leading_lines=lines[blank:])
        body.insert(later, added.with_changes(leading_lines=lines[:blank]))
    elif later == first:  # a section of its own, first in the block
        body[later] = following.with_changes(leading_lines=[libcst.EmptyLine(), *lines[blank:]])
        body.insert(later, added.with_changes(leading_lines=lines[:blank]))
    elif _import_key(body[later - 1])[0] == key[0]:  # the last of its section
        body.insert(later, added.with_changes(leading_lines=[]))
    else:  # a section of its own, between two others
        body.insert(later, added.with_changes(leading_lines=[libcst.EmptyLine()]))
    return module.with_changes(body=body)


# (module, the name imported from it, its alias), as RemoveImportsVisitor takes an import
ImportSpec = tuple[str, "str | None", "str | None"]


def imports_in_use(wrapper: MetadataWrapper) -> set[ImportSpec]:
    """The top-level imports of the wrapper's module whose names its code reads."""
    from libcst.metadata import GlobalScope, ScopeProvider

    scopes = wrapper.resolve(ScopeProvider)
    scope = next((found for found in scopes.values() if isinstance(found, GlobalScope)), None)
    read = {assignment.name for assignment in scope.assignments if assignment.references} if scope else set()
    return {spec for spec, names in _top_level_imports(wrapper.module) if names & read}


def _top_level_imports(module: libcst.Module) -> list[tuple[ImportSpec, set[str]]]:
    """Each top-level import's alias, with the names it binds (`import a.b`: `a.b` and `a`)."""
    found = []
    for statement in module.body:
        for small in statement.body if isinstance(statement, libcst.SimpleStatementLine) else ():
            if isinstance(small, libcst.Import):
                for alias in small.names:
                    name, asname = alias.evaluated_name, alias.evaluated_alias
                    found.append(((name, None, asname), {asname} if asname else {name, name.partition(".")[0]}))
            elif isinstance(small, libcst.ImportFrom) and not small.relative and small.module is not None \
                    and not isinstance(small.names, libcst.ImportStar):
                for alias in small.names:
                    name, asname = alias.evaluated_name, alias.evaluated_alias
                    found.append(((dotted_text(small.module), name, asname), {asname or name}))
    return found


_WORD = re.compile(r"[^\W\d]\w*")  # an identifier, as Python spells one


def _words_outside_imports(module: libcst.Module, code: str) -> Counter:
    """How often each identifier is spelled (in code, strings or comments) outside the module's
    top-level lines of imports alone; `code` is the module's text, as the document holds it
    (generating it again from the tree would cost a pass over every node of the file)."""
    words = Counter(_WORD.findall(code))
    for statement in module.body:
        if isinstance(statement, libcst.SimpleStatementLine) and \
                all(isinstance(small, (libcst.Import, libcst.ImportFrom)) for small in statement.body):
            words.subtract(_WORD.findall(module.code_for_node(statement)))
    return +words


def remove_imports_left_unused(document: Document) -> None:
    """Remove the imports the edits left unused: those the file read before them (an import the
    file never read, it may keep for its side effects or to re-export; LibCST's
    RemoveImportsVisitor keeps one `__all__` names, too)."""
    if not document.python or not document.changed:
        return
    # Only an import whose name the edits spelled more or fewer times can have lost its reads: a
    # read, and any binding that would shadow one, spells the name. Its scopes are resolved (a
    # pass over every node of the file) only then: a moved import changes no other line.
    spelled = _words_outside_imports(document.original_module, document.original_text)
    spelled_now = _words_outside_imports(document.module, document.text)
    touched = {spec for spec, names in _top_level_imports(document.module)
               if any(spelled[top] != spelled_now[top] for top in {name.partition(".")[0] for name in names})}
    if not touched:
        return
    unread = touched - imports_in_use(document.metadata)
    # The file as read is resolved (its scopes cost more than a parse) only for an import unread
    # now whose name it spelled outside its imports: a read spells the name (`from __future__
    # import annotations` is never read).
    maybe_read = {spec for spec, names in _top_level_imports(document.module)
                  if spec in unread and {name.partition(".")[0] for name in names} & set(spelled)}
    gone = maybe_read and maybe_read & imports_in_use(MetadataWrapper(document.original_module, unsafe_skip_copy=True))
    if not gone:
        return
    from libcst.codemod.visitors import RemoveImportsVisitor

    context = codemod_context(document)
    for module_name, name, asname in sorted(gone, key=repr):
        RemoveImportsVisitor.remove_unused_import(context, module_name, name, asname)
    document.module = document.metadata.visit(RemoveImportsVisitor(context))


class _ReplaceCallee(_OnOneLine):
    """`f(...)`, `m.f(...)` (the callee's last name at line:column) -> `replacement(...)`."""

    def __init__(self, line: int, column: int, replacement: libcst.BaseExpression) -> None:
        super().__init__(line)
        self.target, self.replacement = (line, column), replacement
        self.done = False

    def leave_Call(self, original: libcst.Call, updated: libcst.Call) -> libcst.Call:
        if self.done:
            return updated
        func = original.func
        named = func.attr if isinstance(func, libcst.Attribute) else func
        start = self.get_metadata(PositionProvider, named).start
        if (start.line, start.column) != self.target:
            return updated
        self.done = True
        return updated.with_changes(func=self.replacement)


def replace_callee(document: Document, line: int, col: int, replacement: str) -> bool:
    """The call whose callee's last name is at 1-based line:col now calls the dotted `replacement`."""
    return transform(document, _ReplaceCallee(line, col - 1, dotted(replacement)))


def ensure_name_import(document: Document, module_name: str, name: str) -> None:
    """`from module_name import name` at module level, after the last top-level import, unless
    the file has it."""
    if not is_dotted_name(module_name) or not is_dotted_name(name) or "." in name:
        raise FixNotBuilt(f"from {module_name} import {name} is not a Python import")
    _ensure(document, f"from {module_name} import {name}\n", lambda small: _imports_name_from(small, module_name, name))


def _imports_name_from(small: libcst.CSTNode, source: str, name: str) -> bool:
    return (isinstance(small, libcst.ImportFrom) and small.module is not None and not small.relative
            and dotted_text(small.module) == source and not isinstance(small.names, libcst.ImportStar)
            and any(a.asname is None and dotted_text(a.name) == name for a in small.names))


def _ensure(document: Document, import_line: str, present) -> None:
    """`import_line` after the last top-level import, unless one of them is `present`."""
    module = document.module
    last = -1
    for index, statement in enumerate(module.body):
        if not isinstance(statement, libcst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, (libcst.Import, libcst.ImportFrom)):
                last = index
                if present(small):
                    return
    if last == -1 and module.body and _is_docstring(module.body[0]):
        last = 0
    added = libcst.parse_statement(import_line)
    body = list(module.body)
    body.insert(last + 1, added)
    document.module = module.with_changes(body=body)


def replace_string(document: Document, line: int, col: int, value: str) -> bool:
    """The plain string literal at 1-based line:col now says `value` (its prefix and quotes kept)."""
    def edit(node: libcst.SimpleString) -> libcst.SimpleString:
        return node.with_changes(value=f"{node.prefix}{node.quote}{value}{node.quote}")

    return edit_at(document, line, col, (libcst.SimpleString,), edit)


def _is_docstring(statement: libcst.CSTNode) -> bool:
    return (isinstance(statement, libcst.SimpleStatementLine) and isinstance(statement.body[0], libcst.Expr)
            and isinstance(statement.body[0].value, (libcst.SimpleString, libcst.ConcatenatedString)))


# Calls that build an empty container: the only non-literal values a fix writes.
EMPTY_CONTAINERS = {"list": None, "dict": None, "set": None, "tuple": None, "frozenset": None,
                    "deque": "collections", "OrderedDict": "collections", "Counter": "collections"}


def plain_value(value: str, document: Document) -> str | None:
    """`value` (as upstream writes it) when it is a literal or an empty container's constructor,
    spelled so that it runs in `document` (`collections.deque()` where `deque` is not imported);
    None otherwise."""
    import ast

    try:
        expression = ast.parse(value, mode="eval").body
    except SyntaxError:
        return None
    try:
        ast.literal_eval(expression)
        return value
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if not (isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name)
            and not expression.args and not expression.keywords and expression.func.id in EMPTY_CONTAINERS):
        return None
    name, module = expression.func.id, EMPTY_CONTAINERS[expression.func.id]
    if module is None or _imports_name(document.module, module, name):
        return f"{name}()"
    document.imports_needed.add(module)
    return f"{module}.{name}()"


def _imports_name(module: libcst.Module, source: str, name: str) -> bool:
    return any(_imports_name_from(small, source, name) for statement in module.body
               if isinstance(statement, libcst.SimpleStatementLine) for small in statement.body)


def _self_assignment(statement: libcst.CSTNode) -> bool:
    return (isinstance(statement, libcst.SimpleStatementLine)
            and any(isinstance(small, (libcst.Assign, libcst.AnnAssign)) and _targets_self(small)
                    for small in statement.body))


def _targets_self(small) -> bool:
    targets = [t.target for t in small.targets] if isinstance(small, libcst.Assign) else [small.target]
    return any(isinstance(t, libcst.Attribute) and isinstance(t.value, libcst.Name) and t.value.value == "self"
               for t in targets)


class _SetInInit(_OnOneLine):
    def __init__(self, class_name: str, line: int, values: dict[str, str]) -> None:
        super().__init__(line)
        self.class_name, self.values = class_name, values
        self.done = False

    def leave_ClassDef(self, original: libcst.ClassDef, updated: libcst.ClassDef):
        where = self.get_metadata(PositionProvider, original)
        if self.done or original.name.value != self.class_name or not where.start.line <= self.line <= where.end.line:
            return updated
        body = list(updated.body.body)
        for index, statement in enumerate(body):
            if isinstance(statement, libcst.FunctionDef) and statement.name.value == "__init__":
                body[index] = self._extended(statement)
                self.done = True
                return updated.with_changes(body=updated.body.with_changes(body=body))
        return updated

    def _extended(self, init: libcst.FunctionDef) -> libcst.FunctionDef:
        statements = list(init.body.body)
        last = max((i for i, s in enumerate(statements) if _self_assignment(s)), default=len(statements) - 1)
        added = [libcst.parse_statement(f"self.{attr} = {value}\n") for attr, value in self.values.items()]
        statements[last + 1:last + 1] = added
        return init.with_changes(body=init.body.with_changes(body=statements))


def set_in_init(document: Document, class_name: str, line: int, values: dict[str, str]) -> bool:
    """Add `self.attr = value` lines to the `__init__` of the class `class_name` defined at `line`."""
    return transform(document, _SetInInit(class_name, line, values))


class _AddParameters(_OnOneLine):
    """Parameters added to the function whose name is at line:column, and passed on by keyword
    in its calls of the upstream method (`super().name(...)`, `Base.name(self, ...)`)."""

    def __init__(self, line: int, column: int, method: str, added: list[tuple[str, str, str]]) -> None:
        super().__init__(line)
        self.target, self.method, self.added = (line, column), method, added
        self.depth = 0  # > 0 inside the override
        self.done = False

    def reaches(self, statement: libcst.CSTNode) -> bool:
        return self.depth > 0 or super().reaches(statement)  # its calls of the upstream method too

    def visit_FunctionDef(self, node: libcst.FunctionDef) -> None:
        start = self.get_metadata(PositionProvider, node.name).start
        if self.depth or (start.line, start.column) == self.target and node.name.value == self.method:
            self.depth += 1

    def leave_FunctionDef(self, original: libcst.FunctionDef, updated: libcst.FunctionDef):
        if not self.depth:
            return updated
        self.depth -= 1
        if self.depth:
            return updated
        self.done = True
        parameters = updated.params
        taken = {p.name.value for p in (*parameters.posonly_params, *parameters.params, *parameters.kwonly_params)}
        for name, kind, default in self.added:
            if name in taken:
                continue
            param = libcst.Param(libcst.Name(name), default=libcst.parse_expression(default),
                                 equal=libcst.AssignEqual(libcst.SimpleWhitespace(""), libcst.SimpleWhitespace("")))
            if kind == "ko":
                star = parameters.star_arg
                parameters = parameters.with_changes(
                    kwonly_params=[*parameters.kwonly_params, param],
                    star_arg=libcst.ParamStar() if isinstance(star, libcst.MaybeSentinel) else star)
            else:
                parameters = parameters.with_changes(params=[*parameters.params, param])
        return updated.with_changes(params=parameters)

    def leave_Call(self, original: libcst.Call, updated: libcst.Call):
        if not self.depth or not self._calls_upstream(updated):
            return updated
        passed = {arg.keyword.value for arg in updated.args if arg.keyword is not None}
        extra = [libcst.Arg(libcst.Name(name), keyword=libcst.Name(name),
                            equal=libcst.AssignEqual(libcst.SimpleWhitespace(""), libcst.SimpleWhitespace("")))
                 for name, _, _ in self.added if name not in passed]
        return updated.with_changes(args=[*updated.args, *extra]) if extra else updated

    def _calls_upstream(self, call: libcst.Call) -> bool:
        func = call.func
        if not (isinstance(func, libcst.Attribute) and func.attr.value == self.method):
            return False
        if isinstance(func.value, libcst.Call) and isinstance(func.value.func, libcst.Name) \
                and func.value.func.value == "super":
            return True
        first = call.args[0].value if call.args else None
        on_a_class = not (isinstance(func.value, libcst.Name) and func.value.value == "self")
        return on_a_class and isinstance(first, libcst.Name) and first.value == "self"


def add_parameters(document: Document, line: int, col: int, method: str, added: list[tuple[str, str, str]]) -> bool:
    return transform(document, _AddParameters(line, col - 1, method, added))


class _RewriteArguments(_OnOneLine):
    """The call whose callee's last name is at line:column: the keyword arguments `remove`
    dropped, and `write` ((keyword, expression text) pairs) put where the first of them was,
    in its formatting. `already`: the call was rewritten so before (a sibling finding's fix)."""

    def __init__(self, line: int, column: int, keyword: str, remove: set[str], write: list[tuple[str, str]]) -> None:
        super().__init__(line)
        self.target, self.keyword, self.remove, self.write = (line, column), keyword, remove, write
        self.done = self.already = False

    def leave_Call(self, original: libcst.Call, updated: libcst.Call):
        func = original.func
        name = func.attr if isinstance(func, libcst.Attribute) else func
        start = self.get_metadata(PositionProvider, name).start
        if self.done or (start.line, start.column) != self.target:
            return updated
        self.done = True
        keywords = [arg.keyword.value if arg.keyword is not None else None for arg in updated.args]
        if self.keyword not in keywords:
            self.already = not self.remove & set(keywords) and all(slot in keywords for slot, _ in self.write)
            return updated
        dropped = [index for index, keyword in enumerate(keywords) if keyword in self.remove]
        arguments = []
        for index, argument in enumerate(updated.args):
            if index == dropped[0]:
                for number, (slot, text) in enumerate(self.write):
                    written = argument.deep_clone()  # a copy each: a node twice in one tree shares its metadata
                    comma = written.comma
                    if number < len(self.write) - 1 and not isinstance(comma, libcst.Comma):
                        comma = libcst.Comma(whitespace_after=libcst.SimpleWhitespace(" "))
                    arguments.append(written.with_changes(keyword=libcst.Name(slot), value=expression(text),
                                                          comma=comma))
            elif index not in dropped:
                arguments.append(argument)
        if arguments and dropped[-1] == len(updated.args) - 1 and (not self.write or dropped[0] != dropped[-1]):
            arguments[-1] = arguments[-1].with_changes(comma=updated.args[-1].comma)  # the line's end before `)`
        return updated.with_changes(args=arguments)


def rewrite_arguments(document: Document, line: int, col: int, keyword: str, remove: set[str],
                      write: list[tuple[str, str]]) -> bool:
    """Rewrite the arguments of the call whose callee is named at 1-based line:col, where it
    passes `keyword`; True also when a fix of the same call's other finding did it already."""
    transformer = _RewriteArguments(line, col - 1, keyword, remove, write)
    return transform(document, transformer) or transformer.already


class _AddArguments(_OnOneLine):
    """The call whose callee's last name is at line:column gets the keyword arguments `write`
    ((keyword, expression text) pairs) after its last argument, unless it passes one of them."""

    def __init__(self, line: int, column: int, write: list[tuple[str, str]]) -> None:
        super().__init__(line)
        self.target, self.write = (line, column), write
        self.done = False

    def leave_Call(self, original: libcst.Call, updated: libcst.Call):
        func = original.func
        name = func.attr if isinstance(func, libcst.Attribute) else func
        if self.done or (self.get_metadata(PositionProvider, name).start.line,
                         self.get_metadata(PositionProvider, name).start.column) != self.target:
            return updated
        self.done = True
        arguments = list(updated.args)
        if any(arg.keyword is not None and arg.keyword.value == slot for arg in arguments for slot, _ in self.write):
            return updated
        between = arguments[-2].comma if len(arguments) > 1 else None  # the call's own separator
        closing = arguments[-1].comma if arguments else libcst.MaybeSentinel.DEFAULT
        if not isinstance(between, libcst.Comma):
            between = libcst.Comma(whitespace_after=libcst.SimpleWhitespace(" "))
        added = [libcst.Arg(expression(text), keyword=libcst.Name(slot), comma=between.deep_clone(),
                            equal=libcst.AssignEqual(libcst.SimpleWhitespace(""), libcst.SimpleWhitespace("")))
                 for slot, text in self.write]
        if arguments:
            arguments[-1] = arguments[-1].with_changes(comma=between.deep_clone())  # a copy each, as above
        added[-1] = added[-1].with_changes(comma=closing)
        return updated.with_changes(args=[*arguments, *added])


def add_arguments(document: Document, line: int, col: int, write: list[tuple[str, str]]) -> bool:
    """Pass the keyword arguments `write` to the call whose callee is named at 1-based line:col."""
    return transform(document, _AddArguments(line, col - 1, write))


class _ImportModule(_OnOneLine):
    """`from old import ...` whose module is at line:column -> `from new import ...`."""

    def __init__(self, line: int, column: int, module: str) -> None:
        super().__init__(line)
        self.target, self.module = (line, column), module
        self.done = False

    def leave_ImportFrom(self, original: libcst.ImportFrom, updated: libcst.ImportFrom) -> libcst.ImportFrom:
        if self.done or original.module is None or original.relative:
            return updated
        start = self.get_metadata(PositionProvider, original.module).start
        if (start.line, start.column) != self.target:
            return updated
        self.done = True
        return updated.with_changes(module=dotted(self.module))


def replace_import_module(document: Document, line: int, col: int, module: str) -> bool:
    """The `from ... import` whose module is named at 1-based line:col imports from `module`."""
    return transform(document, _ImportModule(line, col - 1, module))
