"""project/texts.py: texts held compactly read back exactly as they were decoded."""

import sys

from sglang_contracts.infra.shapes import Row, rows_of
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.project.texts import ProjectTexts, as_text, held

SAMPLES = {
    "ascii.py": "import sglang\n" * 50,
    "latin1.py": "# déjà été\nimport sglang\n" * 50,  # one byte a character as a str, more in UTF-8: kept so
    "comment.py": "# 注意: 中文注释\nimport sglang\n" + "x = 1\n" * 200,  # two bytes a character as a str
    "emoji.py": "# 🚀\nimport sglang\n" + "y = 2\n" * 200,  # four
    "cjk.py": "文字" * 500,  # three bytes each in UTF-8: the str is smaller
    "surrogate.py": "s = '\udcff'\n" + "z = 3\n" * 100,  # a lone surrogate, as surrogateescape decodes a bad byte
}


def test_every_text_reads_back_as_it_was_given_and_the_mostly_ascii_ones_are_held_as_smaller_utf8() -> None:
    texts = ProjectTexts()
    for relpath, text in SAMPLES.items():
        texts[relpath] = text
    assert dict(texts) == SAMPLES and len(texts) == len(SAMPLES) and "cjk.py" in texts
    kept_as_bytes = {relpath for relpath in SAMPLES if isinstance(held(texts, relpath), bytes)}
    assert kept_as_bytes == {"comment.py", "emoji.py", "surrogate.py"}
    for relpath in kept_as_bytes:
        assert len(held(texts, relpath)) < sys.getsizeof(SAMPLES[relpath])
        assert as_text(held(texts, relpath)) == SAMPLES[relpath]
    del texts["cjk.py"]
    assert "cjk.py" not in texts and len(texts) == len(SAMPLES) - 1


@rows_of(Row(str, str, int, str))
def _lines_and_length(relpath: str, text: str) -> list:
    # Never raises: a worker's failure would be hidden by the analysis running again in this process.
    return [[relpath, type(text).__name__, len(text), text[:20] if isinstance(text, str) else ""]]


def test_a_per_file_analysis_reads_each_text_as_decoded_in_a_worker_and_in_this_process(tmp_path) -> None:
    index = ProjectIndex(root=tmp_path)
    for relpath, text in SAMPLES.items():
        index.texts[relpath] = text * 400  # past PARALLEL_MIN_BYTES: the analysis runs on workers
        index.digests[relpath] = relpath
    expected = [[relpath, "str", len(text) * 400, (text * 400)[:20]]
                for relpath, text in sorted(SAMPLES.items())]
    assert index.each_file("lines", _lines_and_length, lambda text: True, sys.modules[__name__]) == expected
    serial = ProjectIndex(root=tmp_path / "other")
    serial.texts.update({relpath: text for relpath, text in SAMPLES.items()})  # too little text for workers
    serial.digests.update({relpath: relpath for relpath in SAMPLES})
    assert serial.each_file("lines", _lines_and_length, lambda text: True, sys.modules[__name__]) == [
        [relpath, "str", len(text), text[:20]] for relpath, text in sorted(SAMPLES.items())]
