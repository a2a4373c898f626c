"""Patch handling: patch files, hunks applied to a release tree, verdicts, classification and rebase."""
