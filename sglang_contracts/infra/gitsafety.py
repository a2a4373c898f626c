"""The settings every git this tool runs gets, whatever repository it runs in.

A repository may be one a pull request wrote (a bare repository committed as files, a tree
`patch rebase` built from a patch): its own configuration must not make git run a command (an
fsmonitor, a hook, a signature check's gpg.program) or rewrite what this tool reads. Settings
given with `-c` take precedence over every configuration file. git reaches no remote either:
a partial clone fetches a missing object from its remote when asked for it, which runs the
remote's transport (an `ext::` command, an `uploadpack` program), and a repository's own
`protocol.ext.allow = always` outranks `protocol.allow=never`; GIT_ALLOW_PROTOCOL empty
outranks every configuration (campaign 15, R02).
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Mapping

TRANSPORTS = ("ext", "fd", "file", "git", "ssh", "http", "https", "ftp", "ftps")
SAFE_SETTINGS = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "commit.gpgSign=false", "tag.gpgSign=false",
                 "log.showSignature=false", "core.autocrlf=false", "diff.external=", "core.pager=cat",
                 "protocol.allow=never", *(f"protocol.{name}.allow=never" for name in TRANSPORTS))
# Every git this tool runs, and each process it starts (cli.entry), has these in its environment:
# no transport allowed, whatever the configuration; no lazy fetch of a partial clone (git 2.44+).
SAFE_ENVIRONMENT = {"GIT_ALLOW_PROTOCOL": "", "GIT_NO_LAZY_FETCH": "1"}
# The only GIT_ variable of the environment a git of this tool keeps: where git's own programs are.
# The others choose a repository, index, object store or work tree (git exports GIT_INDEX_FILE,
# and in a worktree GIT_DIR, to every hook it runs: a pre-commit hook's `bump` committed into the
# user's repository and replaced its index: campaign 15, R14), or configure git (GIT_CONFIG_*):
# each git of this tool is pointed at its repository, and set, by its own command line.
KEPT_GIT_VARIABLES = frozenset({"GIT_EXEC_PATH"})


def safe_git_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without GIT_ variables but KEPT_GIT_VARIABLES, with `extra`
    (the caller's own settings) and SAFE_ENVIRONMENT."""
    return {**without_git_variables(os.environ), **(extra or {}), **SAFE_ENVIRONMENT}


def without_git_variables(environment: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in environment.items()
            if not name.startswith("GIT_") or name in KEPT_GIT_VARIABLES}


def callers_git_variables() -> list[str]:
    """The GIT_ variables of this process's environment that no git of this tool keeps (not
    SAFE_ENVIRONMENT's, which the entry put there: campaign 15, R17)."""
    return sorted(set(os.environ) - set(without_git_variables(os.environ)) - SAFE_ENVIRONMENT.keys())


def never_reach_a_remote() -> None:
    """For every process this one starts from now on (GitPython's git included): no GIT_ variable
    of the caller's but KEPT_GIT_VARIABLES, and SAFE_ENVIRONMENT."""
    for name in callers_git_variables():
        del os.environ[name]
    os.environ.update(SAFE_ENVIRONMENT)


def safe_git_options() -> list[str]:
    """`-c name=value` for each of SAFE_SETTINGS, for a git command line."""
    return [part for setting in SAFE_SETTINGS for part in ("-c", setting)]


def git_in(folder: str, *arguments: str, timeout: float = 30, extra: dict[str, str] | None = None,
           named_repository: bool = False, settings: tuple[str, ...] = ()) -> subprocess.CompletedProcess | None:
    """`git ARGUMENTS` in `folder`, or None when there is no git or it does not answer.
    Besides SAFE_SETTINGS, git takes no repository it was not pointed at: a folder a pull request
    made to look like a bare repository (HEAD, objects/, refs/) is refused, not read as the
    project's repository (third campaign, D08: it tracks nothing, which would make the project's
    files look like this tool's own; campaign 13, R07: its history would be the project's).
    `named_repository`: `folder` is a repository the user named (an SGLang clone, which may be a
    bare mirror), taken as it is. `extra`: environment variables of the caller's (safe_git_environment);
    `settings`: the caller's `-c` settings."""
    # a named repository is asked about alone; the project's folders are one repository's, mostly
    waited_on = folder if named_repository else ""
    if time.monotonic() < _UNANSWERED.get(waited_on, 0.0):  # git just waited its whole time: it would again
        return None
    taken = [] if named_repository else ["-c", "safe.bareRepository=explicit"]
    command = ["git", *safe_git_options(), *taken, *(part for setting in settings for part in ("-c", setting)),
               "-C", folder, *arguments]
    try:
        return subprocess.run(command, capture_output=True, timeout=timeout, check=False,
                              env=safe_git_environment(extra))
    except subprocess.TimeoutExpired:
        _UNANSWERED[waited_on] = time.monotonic() + UNANSWERED_SECONDS
        return None
    except (OSError, subprocess.SubprocessError, ValueError):  # ValueError: a NUL in an argument
        return None


# A git that does not answer (a repository whose index is a FIFO, a hung file system) is not asked
# again for this long: each question cost its whole timeout (campaign 15, R13; campaign 16, R03).
UNANSWERED_SECONDS = 60.0
_UNANSWERED: dict[str, float] = {}  # until when; "" for the project's folders, else the named repository
# Seconds git has to say what it tracks: milliseconds when it can answer at all.
GIT_PATIENCE = 5.0


def ls_files(folder: str, *arguments: str, settings: tuple[str, ...] = ()) -> subprocess.CompletedProcess | None:
    """`git ls-files ARGUMENTS` in `folder`, in the repository git_in takes, within GIT_PATIENCE."""
    return git_in(folder, "ls-files", *arguments, timeout=GIT_PATIENCE, settings=settings)


def no_repository(done: subprocess.CompletedProcess) -> bool:
    """Whether git failed because the folder is in no repository (which tracks nothing), not
    because it refused one (another user's, "dubious ownership"; one made to look bare), which
    may track anything."""
    return done.returncode == 128 and b"not a git repository" in done.stderr.lower()
