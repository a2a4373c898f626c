"""Patch handling, as its own flow: patch files -> hunks -> applied to a release tree -> verdicts.

patchfile.py  a `.patch` file as `git apply` parses it: file patches and hunks
release.py    a patch path in a release tree, the release's files as `git apply` reads them,
              where a patched file that left the release went
gitapply.py   hunks applied to a tree with git's rules: one verdict per hunk
stack.py      the project's patch files (used by the SGC9xx contracts)
classify.py   `patch classify`: a project's patch against the skeleton patch it derives from
"""
