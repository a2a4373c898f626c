"""The README is a front page and the documents link where they say: the three commands on its
first screen (the install and test commands exactly as .ci/run runs them), under 250 lines,
and every relative link of the README, CONTRIBUTING.md and docs/ names a file that exists and,
with a `#fragment`, a heading of it."""

from __future__ import annotations

import re

from tests.helpers import CHECKOUT

FIRST_SCREEN = 30  # lines
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(`{3,}|~{3,})", re.M)


def _documents():
    return [CHECKOUT / "README.md", CHECKOUT / "CONTRIBUTING.md", *sorted((CHECKOUT / "docs").glob("*.md"))]


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a markdown text's headings (outside code blocks)."""
    anchors, fence = set(), None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if opening and (fence is None or opening.group(1).startswith(fence)):
            fence = None if fence else opening.group(1)[0] * 3
            continue
        if fence is None and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_the_readme_is_a_front_page() -> None:
    lines = (CHECKOUT / "README.md").read_text().splitlines()
    assert len(lines) < 250
    first = "\n".join(lines[:FIRST_SCREEN])
    ci = (CHECKOUT / ".ci" / "run").read_text()
    assert "pip install -e '.[test]'" in first and re.search(r"^pip install (--quiet )?-e '\.\[test\]'$", ci, re.M)
    assert "python -m pytest -q" in first and re.search(r"^python -m pytest -q$", ci, re.M)
    assert "sglang-contracts check --new" in first  # your project
    assert "sglang-contracts check fixtures/project --old fixtures/upstream/old --new fixtures/upstream/new" in first


def test_relative_links_resolve() -> None:
    broken = []
    for document in _documents():
        text = document.read_text()
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            path, _, fragment = target.partition("#")
            linked = (document.parent / path).resolve() if path else document
            if not linked.exists():
                broken.append(f"{document.name}: {target}")
            elif fragment and linked.suffix == ".md" and fragment not in _anchors(linked.read_text()):
                broken.append(f"{document.name}: {target} (no such heading)")
    assert not broken, broken
