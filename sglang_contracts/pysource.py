"""Decoding and parsing Python source, SGLang's or the project's, without echoing the compiler's warnings."""

from __future__ import annotations

import ast
import io
import tokenize
import warnings


def decode_source(data: bytes) -> str:
    """Python source as the interpreter reads it: a UTF-8 byte-order mark or a PEP 263 coding
    comment names the encoding, UTF-8 otherwise. Bytes that do not decode are replaced, so
    the rest of the file is still read."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError):  # an unknown codec, or a mark and a comment that disagree
        encoding = "utf-8"
    try:
        return data.decode(encoding, "replace")
    except LookupError:  # a codec Python knows by name but cannot decode with
        return data.decode("utf-8", "replace")


def parse_quietly(code: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, with the warnings compiling may raise (an invalid escape sequence is a
    SyntaxWarning from Python 3.12) kept off the user's terminal: they are the business of
    the code's own linters, not of its contracts with SGLang."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(code, filename=filename, mode=mode)
