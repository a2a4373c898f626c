"""Migration by upstream example: how SGLang rewrote its own uses of an API it changed.

When a release changes an API, it migrates its own callers in the same release. For an API a
finding is about (a callable that lost a keyword, an attribute a class lost, a module that
moved), this stage collects upstream's uses of it in the old release, by resolved target
(sites.py), pairs each with its counterpart in the new release (the same module and function,
matched by position within the function: pairing.py), extracts the edit and generalises it
across examples up to the names that the edit carries over (edits.py), and keeps what it
learned per release pair (learn.py). The checks say what upstream did in their messages, and
their fixes apply it (contracts/calls.py, attributes.py, imports.py).

It sits between the upstream models and the checks: it reads the releases (upstream/) with the
project scanner's facts of upstream files (project/scanner.py), and never the checks.
"""
