import os
import sys

# `python -m` put the working folder first on sys.path, and the tool runs in the project's (a
# pull request's files): it is taken out before this tool imports anything, with os and sys
# alone (loaded at start-up). What CPython's -m imported before this line (contextlib, functools)
# cannot be helped: docs/reliability.md says to run the console script or `python -P -m`.
if not sys.flags.safe_path and sys.path:
    try:
        if sys.path[0] in ("", os.getcwd()):
            del sys.path[0]
    except OSError:  # the working folder is gone: nothing can be imported from it (cli.py says so)
        pass

from sglang_contracts.cli import entry  # noqa: E402 - after the working folder is out of sys.path

entry()
