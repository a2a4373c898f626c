"""`sglang-contracts fix`: the fix engine. The fixes themselves live beside their rules'
checks in contracts/ (registered with `@fixes`); here are the documents they edit (document.py),
the libcst edits they share (python.py), the text edits (text.py), and the run (engine.py)."""
