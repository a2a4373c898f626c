"""The check's state kept in memory across runs (engine.py), for the language server and for
the daemon that `check` hands its work to (daemon.py, client.py). Empty on purpose: the client
imports nothing of the checker."""
