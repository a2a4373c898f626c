"""Parsing Python source, SGLang's or the project's, without echoing the compiler's warnings."""

from __future__ import annotations

import ast
import warnings


def parse_quietly(code: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, with the warnings compiling may raise (an invalid escape sequence is a
    SyntaxWarning from Python 3.12) kept off the user's terminal: they are the business of
    the code's own linters, not of its contracts with SGLang."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(code, filename=filename, mode=mode)
