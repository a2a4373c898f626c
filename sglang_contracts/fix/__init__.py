"""The edits fixes make: the documents they edit (document.py), the libcst edits they share
(python.py) and the text edits (text.py). The fixes themselves live beside their rules' checks
in contracts/ (registered with `@fixes`); the `fix` command's run is check/fixes.py."""
