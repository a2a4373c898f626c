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


def git_in(folder: str, *arguments: str, timeout: float = 30,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess | None:
    """`git ARGUMENTS` in `folder`, or None when there is no git or it does not answer.
    Besides SAFE_SETTINGS, git takes no repository it was not pointed at: a folder a pull request
    made to look like a bare repository (HEAD, objects/, refs/) is refused, not read as the
    project's repository (third campaign, D08: it tracks nothing, which would make the project's
    files look like this tool's own; campaign 13, R07: its history would be the project's)."""
    command = ["git", *safe_git_options(), "-c", "safe.bareRepository=explicit", "-C", folder, *arguments]
    try:
        return subprocess.run(command, capture_output=True, timeout=timeout, check=False, env=env)
    except (OSError, subprocess.SubprocessError):
        return None


def ls_files(folder: str, *arguments: str) -> subprocess.CompletedProcess | None:
    """`git ls-files ARGUMENTS` in `folder`, in the repository git_in takes."""
    return git_in(folder, "ls-files", *arguments)
