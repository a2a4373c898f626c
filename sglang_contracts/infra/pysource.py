"""Decoding and parsing Python source, SGLang's or the project's, without echoing the compiler's warnings;
and telling a Python script of no suffix by its first line."""

from __future__ import annotations

import ast
import io
import keyword
import os
import re
import stat
import sys
import tokenize
import warnings
from functools import lru_cache
from itertools import islice

from identify import extensions as identify_extensions

from sglang_contracts.infra.files import Unreadable, read_head
from sglang_contracts.infra.lines import numbered_lines


# The interpreters pre-commit's `identify` tags `python` (the python entries of its INTERPRETERS).
PYTHON_INTERPRETERS = frozenset({"python", "python2", "python3"})
SHEBANG_BYTES = 128  # of a file of no suffix, read to tell a Python script


def python_shebang(head: bytes) -> bool:
    """Whether a file's first bytes are a `#!` line naming Python (`#!/usr/bin/python3`,
    `#!/usr/bin/env python3`, `#!/usr/bin/env -S python3 -u`): what pre-commit's `identify` tags
    `python`, and passes to the hook."""
    if not head.startswith(b"#!"):
        return False
    words = head[2:].split(b"\n", 1)[0].decode("latin-1").split()
    if words and os.path.basename(words[0]) == "env":  # its options and VAR=value settings come first
        words = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
    return bool(words) and is_python_interpreter(os.path.basename(words[0]))


def is_python_interpreter(name: str) -> bool:
    """Whether `identify` takes an interpreter's name for Python: as its `tags_from_interpreter`,
    `.xyz` parts are dropped from the end until a name is known (python3.13t, python3.12-dbg and
    python3.11.2 are python3; python3-dbg and python4 are no Python)."""
    while name:
        if name in PYTHON_INTERPRETERS:
            return True
        name = name.rpartition(".")[0]
    return False


def named_as_nothing(name: str) -> bool:
    """Whether pre-commit's `identify` tells nothing of a file by its name (no suffix, or one it
    does not know: `bin/tool.v2`), and so tells it by its shebang: an executable python-shebang
    file so named is passed to the hook as Python (campaign 15, R08). Read from identify's own
    tables, as its tags_from_filename reads them."""
    if any(part in identify_extensions.NAMES for part in (name, *name.split("."))):
        return False
    suffix = os.path.splitext(name)[1][1:].lower()
    return not suffix or (suffix not in identify_extensions.EXTENSIONS
                          and suffix not in identify_extensions.EXTENSIONS_NEED_BINARY_CHECK)


def is_python_script(path: str, within: str | os.PathLike | None = None) -> bool:
    """Whether a file is a Python script: executable, its first line a python
    shebang (only its first bytes read; never through a link out of `within`, the project)."""
    try:
        mode = os.stat(path).st_mode
        return stat.S_ISREG(mode) and bool(mode & 0o111) and python_shebang(read_head(path, SHEBANG_BYTES, within))
    except (OSError, Unreadable):
        return False


def is_python_file(path: str, within: str | os.PathLike | None = None) -> bool:
    """Whether the project's Python is read from this file: a `.py` file, or a Python script
    (is_python_script) of a name that tells nothing (named_as_nothing)."""
    name = os.path.basename(path)
    return name.endswith(".py") or named_as_nothing(name) and is_python_script(path, within)


def is_dotted_name(text: str) -> bool:
    """Whether `text` is a name an import statement can spell (`sglang.srt.x`, `Req`): each part
    an identifier and no keyword. A release's file may be named anything (`evil; import os.py`)."""
    return bool(text) and all(part.isidentifier() and not keyword.iskeyword(part) for part in text.split("."))


def absolute_import(node: ast.ImportFrom, module_name: str, is_package: bool) -> str | None:
    """The module a from-import in module `module_name` names, its dots resolved (`from .io import
    x` in `sglang.srt.managers.scheduler` -> `sglang.srt.managers.io`); None past the top."""
    module = node.module or ""
    if not node.level:
        return module
    package = module_name.split(".") if is_package else module_name.split(".")[:-1]
    if node.level - 1 > len(package):
        return None
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([module] if module else []))


def absolute_from_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted path of each absolute `from M import x [as y]` of the module's top
    level (not under an `if` or a `try`), in source order."""
    return {alias.asname or alias.name: f"{node.module}.{alias.name}"
            for node in tree.body if isinstance(node, ast.ImportFrom) and node.module and not node.level
            for alias in node.names}


def decode_source(data: bytes) -> str:
    """Python source as the interpreter reads it: a UTF-8 byte-order mark or a PEP 263 coding
    comment names the encoding, UTF-8 otherwise. Bytes that do not decode are replaced, so
    the rest of the file is still read."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError):  # an unknown codec, or a mark and a comment that disagree
        encoding = "utf-8"
    try:
        text = data.decode(encoding, "replace")
    except (LookupError, ValueError, TypeError):
        # A codec Python knows by name but cannot decode with (`rot13`), or one that raises
        # whatever the error handler says (`idna`, `punycode`, `undefined`).
        return data.decode("utf-8", "replace")
    return text if isinstance(text, str) else data.decode("utf-8", "replace")


class TooComplex(ValueError):
    """Source nested too deeply for Python's own parser (a 3,000-term `a+a+...`)."""


class TooLarge(TooComplex):
    """Source of more pieces than this tool parses in one file (PIECES_READ)."""


# Python's parser holds about 0.7 KB for each token of a file: 380,000 one-line calls, 3.8 MB and
# 3 million tokens, took it 2.2 GB, and 1.9 million `x;` 3.4 GB (campaign 12, R04). SGLang's
# largest module (0.5.23) has 45,000 tokens.
PIECES_READ = 500_000
PIECE = re.compile(r"\w+|[^\w\s]")  # a word, or any other character but white space: a token or more


def _refuse_too_many_pieces(code: str) -> None:
    """A TooLarge for more than PIECES_READ pieces, counted no further than that."""
    if len(code) > PIECES_READ and next(islice(PIECE.finditer(code), PIECES_READ, None), None) is not None:
        raise TooLarge(f"more than the {PIECES_READ:,} pieces of syntax this tool parses in one file")


def parse_quietly(code: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, with the warnings compiling may raise (an invalid escape sequence is a
    SyntaxWarning from Python 3.12) kept off the user's terminal: they are the business of
    the code's own linters, not of its contracts with SGLang. Source too deep for the parser
    is a `TooComplex` (a ValueError, as for NUL bytes), never a RecursionError; source of more
    pieces than PIECES_READ a `TooLarge`, never parsed."""
    _refuse_unknown_encoding(code)
    _refuse_too_many_pieces(code)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(code, filename=filename, mode=mode)
        except (RecursionError, MemoryError):
            raise TooComplex("nested too deeply for Python's parser") from None


def _refuse_unknown_encoding(code: str) -> None:
    """A coding comment that names no text codec (`# -*- coding: bogus-codec -*-`, `rot13`) makes
    Python refuse to import the module, while `ast.parse` of a decoded text ignores the comment:
    raise the SyntaxError the import would."""
    if "coding" not in code[:400]:
        return
    head = "".join(numbered_lines(code, keepends=True)[:2]).encode("utf-8", "surrogateescape")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
        b"x".decode(encoding)  # a transform (rot13) is no text codec: LookupError
    except (LookupError, UnicodeError):  # `undefined` raises whatever it is asked to decode
        raise SyntaxError(f"encoding problem: {encoding}") from None


def why_unparsable(error: Exception) -> str:
    """Why `parse_quietly` refused a text, in one line. A syntax error names its line and asks
    whether the grammar is newer than the running Python's (PEP 695 `type X = int` on 3.11)."""
    message = str(getattr(error, "msg", error))
    if "null bytes" in message:  # a SyntaxError or a ValueError, by Python version
        return "does not parse: it holds NUL bytes, UTF-16 or not text?"
    if isinstance(error, TooLarge):
        return f"not read: {message}"
    if isinstance(error, TooComplex) or "too many nested" in message:
        return "does not parse: nested too deeply for Python's parser"
    if isinstance(error, SyntaxError) and message.startswith(("unknown encoding", "encoding problem")):
        return f"does not parse: {message} (its coding comment names no codec Python can read it with)"
    if isinstance(error, SyntaxError):
        running = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return f"does not parse: {message} at line {error.lineno or 1} on Python {running}; needs a newer Python?"
    return numbered_lines(f"does not parse: {type(error).__name__}: {message}")[0]


def parse_shared(code: str, filename: str = "<unknown>") -> ast.AST:
    """`parse_quietly`, one tree for the analyses of the same text that follow each other (a
    re-check's scan of the edited module, its HTTP requests, its prose: a 160 KB module takes
    50 ms to parse). Callers never change the tree. A text that does not parse raises what the
    caller's own parse would (naming its file)."""
    try:
        return _shared_tree(code)
    except (SyntaxError, ValueError):
        return parse_quietly(code, filename)


@lru_cache(maxsize=2)
def _shared_tree(code: str) -> ast.AST:
    return parse_quietly(code)


def tree_depth(tree: ast.AST) -> int:
    """How many levels deep a syntax tree goes, walked without recursion (costs half a parse:
    computed only once a walk has failed)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def source_depth(code: str) -> int:
    """`tree_depth` of source text; a text the parser cannot take counts as infinitely deep when
    it is too complex, and as flat when it is not Python at all."""
    try:
        return tree_depth(parse_quietly(code))
    except TooComplex:
        return 1 << 30
    except (SyntaxError, ValueError):
        return 0


# Shapes of a function's results, read alike from SGLang's bodies and the project's.

# Nodes with no structure below them (a name, a literal, a load/store marker): most of a
# body's nodes, and nothing an analysis of its statements and calls looks for.
LEAVES = (ast.Name, ast.Constant, ast.expr_context)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)  # code that runs apart


def nodes_below(root: ast.AST):
    """Every node under `root` (itself included) but the LEAVES, each before the nodes below it:
    `ast.walk` without the names, literals and contexts that are most of a tree's nodes."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(branch_nodes(node))


# The node classes the parser makes, and those but the LEAVES: a membership test per child
# instead of isinstance calls, in the walks that visit every node of every body.
_NODE_TYPES = frozenset(kind for kind in vars(ast).values() if isinstance(kind, type) and issubclass(kind, ast.AST))
BRANCH_TYPES = frozenset(kind for kind in _NODE_TYPES if not issubclass(kind, LEAVES))
_CHILD_TYPES = frozenset(kind for kind in _NODE_TYPES if not issubclass(kind, ast.expr_context))


# Fields that never hold a node, by the grammar's own word (each node class's docstring is its
# ASDL signature: `Name(identifier id, expr_context ctx)`): names, numbers, strings, constants
# and the load/store marker. A walk then looks only at the fields that may hold nodes (a Name
# or a Constant, most of a tree, has none), in field order as before.
_NOT_NODES = re.compile(r"\b(?:identifier|int|string|constant|expr_context)[?*]?\s+(\w+)")


def _node_fields(kind: type) -> tuple[str, ...]:
    signature = kind.__doc__ or ""
    if not signature.startswith(kind.__name__ + "("):
        return kind._fields  # no signature to go by: every field
    skipped = set(_NOT_NODES.findall(signature))
    return tuple(name for name in kind._fields if name not in skipped)


_NODE_FIELDS = {kind: _node_fields(kind) for kind in _NODE_TYPES}


# Node classes with nothing below them (a name, a literal, an operator): a walk need not look.
CHILDLESS = frozenset(kind for kind, fields in _NODE_FIELDS.items() if not fields)


def node_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes, in field order."""
    fields = _NODE_FIELDS.get(kind)
    return kind._fields if fields is None else fields


def _nodes_of_kinds_below(node: ast.AST, kinds: frozenset[type]) -> list[ast.AST]:
    """The nodes right below `node` whose class is one of `kinds`, in field order."""
    below: list[ast.AST] = []
    fields = _NODE_FIELDS.get(type(node))  # node_fields, inlined: called for every node of every walk
    for name in node._fields if fields is None else fields:
        value = getattr(node, name, None)
        if type(value) is list:
            below.extend([item for item in value if type(item) in kinds])
        elif type(value) in kinds:
            below.append(value)
    return below


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes` as a list, without the load/store markers (nothing is below
    them and no walk looks at them): a third of the cost of the generator."""
    return _nodes_of_kinds_below(node, _CHILD_TYPES)


def branch_nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes right below `node`, but the LEAVES, in field order."""
    return _nodes_of_kinds_below(node, BRANCH_TYPES)


def own_nodes(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of the function's own body, not those of functions or classes defined in it
    (those are listed, not entered), in source order, without the LEAVES."""
    found: list[ast.AST] = []
    pending = [child for child in reversed(node.body)]
    while pending:
        child = pending.pop()
        found.append(child)
        if not isinstance(child, SCOPES):
            pending.extend(reversed(branch_nodes(child)))
    return found


def returned_shape(node: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST] | None = None) -> int | None:
    """The tuple length every `return` of the body gives, when each returns a tuple display
    (`return a, b`) of the same length; None otherwise (a generator, a bare `return`, a name,
    returns of different lengths: unknown, never judged). `nodes`: its `own_nodes`, if known
    (or only those of them that are returns and yields)."""
    lengths = set()
    for child in own_nodes(node) if nodes is None else nodes:
        if isinstance(child, (ast.Yield, ast.YieldFrom)):
            return None
        if isinstance(child, ast.Return):
            value = child.value
            if not isinstance(value, ast.Tuple) or any(isinstance(e, ast.Starred) for e in value.elts):
                return None
            lengths.add(len(value.elts))
    return lengths.pop() if len(lengths) == 1 else None


def sole_return(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Return | None:
    """The function's `return` when its body (imports, `pass` and docstrings apart) is that one
    statement, else None."""
    body = [s for s in function.body if not isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass))
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return body[0] if len(body) == 1 and isinstance(body[0], ast.Return) else None


def returns_its_receiver(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a method's body is `return self` (its first parameter) and nothing else, and no
    decorator makes that parameter something else than the instance (a class or static method):
    `with C() as c` then binds the instance itself."""
    found = sole_return(function)
    arguments = [*function.args.posonlyargs, *function.args.args]
    return (found is not None and isinstance(found.value, ast.Name) and not function.decorator_list
            and bool(arguments) and found.value.id == arguments[0].arg)


def unpack_count(target: ast.AST) -> int | None:
    """How many values a target takes: `a, b = ...` 2; None for one name or a starred target."""
    if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
        return len(target.elts)
    return None


PLACEHOLDER = "\0"  # a formatted value in a rendered f-string


def rendered(node: ast.AST, names: dict[str, str] | None = None) -> str | None:
    """A string expression's text, each formatted value a placeholder; None for anything else.
    `names`: names whose string value is known (a module's constants), which stand for that value
    where they are formatted plainly (`f"{M}.x"`), added (`M + ".x"`) or given alone.
    A concatenation is flattened with a stack, not recursion: a long `a + b + ...` is fine."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if names and isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else _formatted(part, names)
                       for part in node.values)
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return None
    return _rendered_sum(node, names)


def _formatted(part: ast.AST, names: dict[str, str] | None) -> str:
    """A formatted value of an f-string: a known name's value when formatted plainly, else the placeholder."""
    if names and isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) \
            and part.conversion == -1 and part.format_spec is None and part.value.id in names:
        return names[part.value.id]
    return PLACEHOLDER


def _rendered_sum(node: ast.BinOp, names: dict[str, str] | None) -> str | None:
    """rendered of `a + b + ...`: None when no operand is a string expression."""
    pieces: list[str | None] = []
    pending: list[ast.AST] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BinOp) and isinstance(current.op, ast.Add):
            pending.extend((current.right, current.left))  # the left one is taken first
        elif isinstance(current, (ast.Constant, ast.JoinedStr)) or names and isinstance(current, ast.Name):
            pieces.append(rendered(current, names))
        else:
            pieces.append(None)
    if all(piece is None for piece in pieces):
        return None
    return "".join(PLACEHOLDER if piece is None else piece for piece in pieces)
