"""`check`: one run of the contracts over the project (runner.py), and what spares a run its
work: replaying a run whose every input is unchanged (replay.py), and after an edit, checking
again only the files it can change (incremental.py)."""
