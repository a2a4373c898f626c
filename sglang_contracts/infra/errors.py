"""Errors that end a run with a one-line message (exit status 2), never a traceback."""


class ContractsError(Exception):
    """A problem the user can fix: a missing release, a bad ref, a malformed option."""


class SourceError(ContractsError):
    """An SGLang release could not be found, fetched or read."""


class UsageError(ContractsError):
    """The command line or the configuration is wrong."""


def shown(value: object, limit: int = 120) -> str:
    """`value` as a one-line message names it: an absurdly long one (a 4,000-character path)
    elided in the middle."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit - 40]}...{text[-37:]}"
