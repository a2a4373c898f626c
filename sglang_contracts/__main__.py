import sys

from sglang_contracts.infra.pythonpath import drop_working_folder

drop_working_folder(sys.path)

from sglang_contracts.cli import entry  # noqa: E402 - after the working folder is out of sys.path

entry()
