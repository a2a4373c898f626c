"""The language server (`sglang-contracts lsp`): server.py, convert.py (findings as LSP
diagnostics and hover text), actions.py (code actions)."""
