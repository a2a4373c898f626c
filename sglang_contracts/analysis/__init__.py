"""The analyses rule modules share (contracts/ holds the rules): receiver types (resolve.py,
inference.py), did-you-mean hints (hints.py), the import graph (importgraph.py), patch
targets (targets.py), the upstream methods a project object is handed to (borrowing.py), the
upstream callers that reach a project method (callers.py), overrides (overrides.py) and how
an upstream body changed (body_changes.py). A rule module imports these, never another rule
module; these import no rule module.
"""
