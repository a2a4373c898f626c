"""No regular expression of the tool takes more than linear time on the text a project holds
(issue 38, section 2). The tool runs in CI on pull requests, so that text is an attacker's, and
a pattern that backtracks over a long run of what it half-matches hung a check for minutes.

The end-to-end tests run the real check, in a fresh process, on each input the issue reported,
at a size the old patterns took well over ten seconds on (the check takes about one).
"""

from __future__ import annotations

import signal
import subprocess
from contextlib import contextmanager
from typing import Iterator

import pytest

from sglang_contracts.infra.shell import UNSET, expand
from tests.test_reliability import OK_FINDING, cli, project, releases, write  # noqa: F401 (fixtures)

SECONDS = 15
BOUND = 2.0  # seconds for one pattern (or one function) on about a megabyte: linear takes milliseconds


class TooSlow(Exception):
    pass


@contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Stop what runs inside after `seconds` with TooSlow, so that a regression fails and does not
    hang the suite (`re` looks at signals while it matches)."""
    def stop(*_) -> None:
        raise TooSlow(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def checked_in_time(project, releases) -> str:
    """The check's output; a failure, not a hang, when it takes more than SECONDS."""
    try:
        status, out, err = cli(project, releases, timeout=SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the check took more than {SECONDS} s")
    assert status == 1, err
    assert OK_FINDING in out  # the rest of the project was checked
    return out


def test_d3_a_string_of_image_name_pieces_in_python_is_read_in_time(project, releases) -> None:
    # IMAGE_REFERENCE was tried from every character of the string and backtracked over it.
    write(project, {"app/build.py": '# built on sglang 0.1.0\nIMAGE = "' + "sglang-" * 600 + '"\n'})
    checked_in_time(project, releases)


def test_d3_a_line_of_image_name_pieces_in_a_stack_file_is_read_in_time(project, releases) -> None:
    # The image tag mention was tried once per run, but backtracked from each `sglang` in it.
    write(project, {"README.md": "Built on sglang:\n" + "sglang-" * 50000 + "\n"})
    checked_in_time(project, releases)


def test_d4_a_requirement_comment_of_cue_words_is_read_in_time(project, releases) -> None:
    # MATCHES_STACK read the rest of the comment again from every "match" (`[^#]*` then "sglang").
    for release in releases:  # SGLang pins transformers: the line's comment is then read
        write(release, {"pyproject.toml": '[project]\nname = "sglang"\ndependencies = ["transformers==4.50.0"]\n'})
    write(project, {"requirements.txt": "transformers==4.50.0  # " + "match " * 12000 + "\n"})
    checked_in_time(project, releases)


def test_d5_a_removal_condition_followed_by_quotes_is_read_in_time(project, releases) -> None:
    # REQUIREMENT_END was tried from each quote of the run and backtracked over the rest of it.
    write(project, {"app/overlay.py": "# Remove when: sglang>=0.2.0" + "`'" * 10000 + "x\nx = 1\n"})
    checked_in_time(project, releases)


def test_d6_a_from_line_of_unclosed_variables_is_read_in_time(project, releases) -> None:
    # VARIABLE was tried from each `${` and read the rest of the line again for its `}`.
    write(project, {"Dockerfile": "FROM lmsysorg/sglang:" + "${A:-" * 20000 + "\n"})
    checked_in_time(project, releases)


def test_d6_a_shell_word_of_unclosed_variables_before_a_brace_expands_in_time() -> None:
    # The cut of an unclosed `${...` at a word's end was a pattern tried from each `${`, reading
    # on to the `}` each time; it is a search for the last `}` now.
    with time_bound(BOUND):
        assert expand("${" * 500_000 + "}x", {}) == UNSET
