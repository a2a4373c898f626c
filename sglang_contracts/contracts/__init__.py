"""Contracts: for each fact the project relies on, does it hold on the old release and break on the new?

Importing this package registers every check (one function per rule code).
"""

from sglang_contracts.contracts import (  # noqa: F401
    attributes, bare_instances, borrowed, calls, commandline, defensive, dependencies, dispatch, doubles,
    http, imports, mirrors, monkeypatches, patches, returns, serverargs, stack, subclasses,
)
