"""The settings every git this tool runs gets, whatever repository it runs in.

A repository may be one a pull request wrote (a bare repository committed as files, a tree
`patch rebase` built from a patch): its own configuration must not make git run a command (an
fsmonitor, a hook, a signature check's gpg.program) or rewrite what this tool reads. Settings
given with `-c` take precedence over every configuration file.
"""

from __future__ import annotations

import subprocess

SAFE_SETTINGS = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "commit.gpgSign=false", "tag.gpgSign=false",
                 "log.showSignature=false", "core.autocrlf=false", "diff.external=", "core.pager=cat",
                 "protocol.allow=never")


def safe_git_options() -> list[str]:
    """`-c name=value` for each of SAFE_SETTINGS, for a git command line."""
    return [part for setting in SAFE_SETTINGS for part in ("-c", setting)]


def ls_files(folder: str, *arguments: str) -> subprocess.CompletedProcess | None:
    """`git ls-files ARGUMENTS` in `folder`, or None when there is no git or it does not answer.
    Besides SAFE_SETTINGS, git takes no repository it was not pointed at: a folder a pull request
    made to look like a bare repository (HEAD, objects/, refs/) tracks nothing, which would make
    its files look like this tool's own (third campaign, D08)."""
    command = ["git", *safe_git_options(), "-c", "safe.bareRepository=explicit", "-C", folder, "ls-files", *arguments]
    try:
        return subprocess.run(command, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
