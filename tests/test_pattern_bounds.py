"""No regular expression of the tool takes more than linear time on the text a project holds
(issue 38, section 2). The tool runs in CI on pull requests, so that text is an attacker's, and
a pattern that backtracks over a long run of what it half-matches hung a check for minutes.

The end-to-end tests run the real check, in a fresh process, on each input the issue reported,
at a size the old patterns took well over ten seconds on (the check takes about one).
"""

from __future__ import annotations

import subprocess

import pytest

from tests.test_reliability import OK_FINDING, cli, project, releases, write  # noqa: F401 (fixtures)

SECONDS = 15


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
