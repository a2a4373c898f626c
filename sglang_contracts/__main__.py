from sglang_contracts.cli import entry

entry()
