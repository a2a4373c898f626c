"""sglang-contracts: which of a project's contracts with SGLang does the next release break?"""

import os as _os
import sys as _sys

__version__ = "0.1.0"


def _leave_the_working_folder_out_of_the_path() -> None:
    """Before this package imports anything: the folders an empty or relative PYTHONPATH entry put
    on sys.path (`export PYTHONPATH=$PYTHONPATH:/opt/x` with none set gives an empty one: the working
    folder, which is the project's, a pull request's files) are taken out, or a committed
    `packaging/__init__.py` ran in this process (campaign 16, R02). What the interpreter imported
    before this (the console script's `re`) cannot be helped: docs/reliability.md."""
    try:
        relative = {_os.path.abspath(entry or ".") for entry in _os.environ.get("PYTHONPATH", "").split(_os.pathsep)
                    if not _os.path.isabs(entry)} if _os.environ.get("PYTHONPATH") else set()
    except OSError:  # the working folder is gone: nothing is imported from it
        return
    _sys.path[:] = [entry for entry in _sys.path if entry not in relative]


_leave_the_working_folder_out_of_the_path()
