"""The upstream model's whole-release searches, and their cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.infra.shapes import ListOf
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.sources.base import Release
from sglang_contracts.sources.directory import DirectoryTree
from sglang_contracts.upstream.model import UpstreamModel


def release_at(root: Path, identity: str | None) -> Release:
    for relpath, text in {"sglang/__init__.py": "", "sglang/srt/layers/norm.py": "def rmsnorm(x):\n    return x\n"}.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return Release("sglang (test)", "0.1.0", DirectoryTree(root), identity=identity)


def test_definitions_are_cached_only_for_releases_that_cannot_change(tmp_path: Path) -> None:
    cache = RecordCache(tmp_path / "cache")
    for identity, survives in (("pypi:sglang==0.1.0", True), (None, False)):
        root = tmp_path / str(identity).replace(":", "_")
        release = release_at(root, identity)
        assert UpstreamModel(release, cache).find_definitions({"rmsnorm"}) == {"rmsnorm": ["sglang.srt.layers.norm"]}
        (root / "sglang/srt/layers/norm.py").write_text("def other(x):\n    return x\n")
        again = UpstreamModel(release, cache).find_definitions({"rmsnorm"})
        assert (again == {"rmsnorm": ["sglang.srt.layers.norm"]}) == survives


def test_a_changed_search_does_not_read_the_old_search_s_answers(tmp_path: Path, monkeypatch) -> None:
    from sglang_contracts.upstream import model as model_module

    cache = RecordCache(tmp_path / "cache")
    release = release_at(tmp_path / "tree", "pypi:sglang==0.1.0")
    texts = ListOf(str)
    assert UpstreamModel(release, cache).whole_release_search("probe", lambda: ["first"], texts) == ["first"]
    assert UpstreamModel(release, cache).whole_release_search("probe", lambda: ["second"], texts) == ["first"]  # cached
    model_module._module_fingerprint.cache_clear()
    monkeypatch.setattr(model_module, "code_fingerprint", lambda *modules: "edited searcher")
    assert UpstreamModel(release, cache).whole_release_search("probe", lambda: ["second"], texts) == ["second"]
    model_module._module_fingerprint.cache_clear()


TRICKY_MODULE = '''\
import ast


def helper(x):
    """A docstring changes nothing."""
    return x + 1


class Scheduler:
    def run(self, batch):
        text = """
a line at column 0 inside a string
"""
        return batch, text

    @property
    def size(self):
        return self._size

    @size.setter
    def size(self, value):
        self._size = value

    def fed(self):\x0c
        return 1

class OneLine:
    x = 1
\x0c    def after(self):
        return 2
'''


def test_body_lines_read_one_definition_as_the_whole_module_reads_it(tmp_path: Path) -> None:
    """A body's lines come from its own lines of text, and are those its module's tree gives:
    for a method with a string at column 0, a property and its setter (both, in order), a form
    feed inside a line, a top-level function; a definition its own text does not parse to (a
    form feed before it) is read from the whole module."""
    import ast

    from sglang_contracts.upstream import bodies
    from sglang_contracts.upstream.model import Member

    text = TRICKY_MODULE
    root = tmp_path / "tree"
    (root / "sglang/srt").mkdir(parents=True)
    (root / "sglang/__init__.py").write_text("")
    (root / "sglang/srt/m.py").write_text(text)
    model = UpstreamModel(Release("sglang (test)", "0.1.0", DirectoryTree(root)), RecordCache(tmp_path / "cache"))
    whole = {owner: {name: facts.lines for name, facts in table.items()}
             for owner, table in bodies.module_bodies(ast.parse(text)).items()}
    asked = [("", "helper"), ("Scheduler", "run"), ("Scheduler", "size"), ("Scheduler", "fed"), ("OneLine", "after")]
    for table, name in asked:
        owner = "sglang.srt.m" + (f".{table}" if table else "")
        assert model.body_lines(Member(owner, name, "method" if table else "function", {})) == whole[table][name]
    assert len(whole["Scheduler"]["size"]) == 2 and whole["Scheduler"]["size"][0] != whole["Scheduler"]["size"][1]
    spans = bodies.definition_spans(bodies.definition_lines(ast.parse(text)), text)
    assert bodies.definition_node(text, spans["OneLine"]["after"][0], "after") is None  # the form feed


def test_a_definition_read_from_its_own_lines_keeps_the_parser_s_warnings_quiet() -> None:
    """An invalid escape in upstream code is a warning of the parser (a SyntaxWarning from
    Python 3.12): reading one definition keeps it off the terminal, as reading a module does,
    and a warning turned into an error does not lose the definition."""
    import warnings

    from sglang_contracts.infra.pysource import parse_quietly
    from sglang_contracts.upstream import bodies

    text = 'class Scheduler:\n    def pattern(self):\n        return "\\d+"\n'
    span = bodies.definition_spans(bodies.definition_lines(parse_quietly(text)), text)["Scheduler"]["pattern"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        node = bodies.definition_node(text, span, "pattern")
    assert node is not None and node.lineno == 2 and bodies.normalised_lines(node)


def test_a_few_names_are_found_as_the_whole_table_finds_them(tmp_path: Path, monkeypatch) -> None:
    from sglang_contracts.upstream import model as model_module

    files = {
        "sglang/__init__.py": "from sglang.a import *\n",
        "sglang/a.py": "def rmsnorm(x):\n    return x\nclass Req:\n    rmsnorm = 1\nLIMIT: int = 3\nasync  def go(): pass\n",
        "sglang/b.py": "# rmsnorm is mentioned, not defined\nif x == rmsnorm:\n    pass\nrmsnorm = None\n",
        "sglang/c/__init__.py": "Req = object\nclass  LIMIT: pass\n",
    }
    for relpath, text in files.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text(text)
    release = Release("sglang (test)", "0.1.0", DirectoryTree(tmp_path), identity=None)
    table = UpstreamModel(release, RecordCache(None))._top_level_definitions
    assert table["rmsnorm"] == ["sglang.a", "sglang.b"] and table["LIMIT"] == ["sglang.a", "sglang.c"]
    names = {"rmsnorm", "Req", "LIMIT", "go", "absent"}
    few = UpstreamModel(release, RecordCache(None))._definitions_of(names)
    assert few == {name: table[name] for name in names if name in table}
    # Over the threshold the table answers: the same verified definitions either way.
    both = [UpstreamModel(release, RecordCache(None)).find_definitions(names)]
    monkeypatch.setattr(model_module, "FEW_NAMES", 0)
    both.append(UpstreamModel(release, RecordCache(None)).find_definitions(names))
    assert both[0] == both[1] and both[0]["rmsnorm"] == ["sglang.a", "sglang.b"]


TWO_CLASSES = '''\
from sglang.srt.layers.norm import rmsnorm as rmsnorm


class Asked:
    def run(self, batch):
        return batch


class NeverAsked:
    def other(self):
        return 1


def helper(x):
    return x
'''


def test_records_are_decoded_when_asked_once_for_both_models_and_read_as_extracted(tmp_path: Path) -> None:
    """A module's classes, methods and functions stay JSON texts until a check asks for them;
    both releases' models share the stored form of a module they have in common and decode it
    once; what they give is what the extraction recorded."""
    from sglang_contracts.upstream.extract import extract_module
    from sglang_contracts.check.prefetch import _extract_all

    release = release_at(tmp_path / "tree", "pypi:sglang==0.1.0")
    (tmp_path / "tree/sglang/srt/two.py").write_text(TWO_CLASSES)
    old, new = UpstreamModel(release, RecordCache(tmp_path / "cache")), UpstreamModel(release, RecordCache(tmp_path / "cache"))
    _extract_all([old, new], {id(old): {"sglang.srt.two"}, id(new): {"sglang.srt.two"}}, workers=1)
    extracted = extract_module("sglang.srt.two", "sglang/srt/two.py", TWO_CLASSES)
    record = old.module("sglang.srt.two")
    assert all(isinstance(text, str) for text in record.classes._entries.values())
    asked = old.class_record("sglang.srt.two.Asked")
    assert new.class_record("sglang.srt.two.Asked") is asked  # decoded once, for both
    assert isinstance(record.classes._entries["NeverAsked"], str)  # never decoded
    assert asked["methods"]["run"] == extracted["classes"]["Asked"]["methods"]["run"]
    assert {key: value for key, value in asked.items() if key != "methods"} \
        == {key: value for key, value in extracted["classes"]["Asked"].items() if key != "methods"}
    assert old.function_record("sglang.srt.two.helper") == extracted["functions"]["helper"]
    assert record.bindings["rmsnorm"]["target"] == "sglang.srt.layers.norm.rmsnorm"
    assert record.bindings["Asked"].get("target") is None and record.bindings["Asked"]["kind"] == "class"
    again = UpstreamModel(release, RecordCache(tmp_path / "cache"))  # from the cache: the same records
    assert again.class_record("sglang.srt.two.NeverAsked") == extracted["classes"]["NeverAsked"] | {
        "methods": again.class_record("sglang.srt.two.NeverAsked")["methods"]}
    assert dict(again.class_record("sglang.srt.two.NeverAsked")["methods"]) == extracted["classes"]["NeverAsked"]["methods"]
    assert again.stats.from_cache == 1 and again.stats.parsed == 0


OLD_SCHEDULER = '''
class Scheduler:
    def run(self):
        self.step()
        return self.done

    @property
    def load(self):
        return self._load

    @load.setter
    def load(self, value):
        self._load = value
        self.loads += 1

    def changed(self):
        return self.a
'''
# `run` and the property getter are written alike; the setter and `changed` differ
NEW_SCHEDULER = OLD_SCHEDULER.replace("        self.loads += 1\n", "").replace(
    "return self.a", "return self.b + self.c")


def test_a_module_extracted_with_its_other_release_gives_the_records_it_gives_alone() -> None:
    """The paired extraction (prefetch._extract_job) keeps body facts by source lines: the
    other release's unchanged bodies are reused, the changed ones computed, and a name merged
    from two definitions (a property and its setter) does not alter the kept facts."""
    from sglang_contracts.upstream.extract import extract_module

    alone = [extract_module("sglang.srt.managers.scheduler", "sglang/srt/managers/scheduler.py", code)
             for code in (OLD_SCHEDULER, NEW_SCHEDULER)]
    known: dict = {}
    paired = [extract_module("sglang.srt.managers.scheduler", "sglang/srt/managers/scheduler.py", code, known)
              for code in (OLD_SCHEDULER, NEW_SCHEDULER)]
    assert paired == alone
    methods = [record["classes"]["Scheduler"]["methods"] for record in paired]
    assert "loads" in methods[0]["load"]["writes"] and "loads" not in methods[1]["load"]["writes"]
    assert methods[0]["load"]["assigns"] == {"_load": "value"}
    assert methods[0]["changed"]["reads"] == ["a"] and methods[1]["changed"]["reads"] == ["b", "c"]
    assert len(known) == 6  # run, getter, two setters, two `changed`: nothing computed twice


def test_a_warm_prefetch_reads_no_record_and_a_cold_one_extracts(tmp_path: Path) -> None:
    """prefetch extracts, in parallel, the modules the project imports that the cache holds no
    record of; when it holds them all (a re-check) it reads none: each is read when a check
    first asks for it, only those."""
    from sglang_contracts.check.prefetch import prefetch
    from sglang_contracts.project.facts import FileFacts, ImportFact, Position

    release = release_at(tmp_path / "tree", "pypi:sglang==0.1.0")
    (tmp_path / "tree/sglang/srt/two.py").write_text(TWO_CLASSES)
    at = Position(1, 1)
    imports = [ImportFact(at, at, "sglang.srt.two", "Asked", "Asked")]
    project = ProjectIndex(root=tmp_path, files={"app.py": FileFacts(path="app.py", module="app", imports=imports)})
    cold = UpstreamModel(release, RecordCache(tmp_path / "cache"))
    assert not cold.all_cached({"sglang.srt.two"})
    prefetch(project, [cold], workers=1)
    assert cold.stats.parsed == 1 and cold.all_cached({"sglang.srt.two"})
    warm = UpstreamModel(release, RecordCache(tmp_path / "cache"))
    prefetch(project, [warm], workers=1)
    assert warm.stats.from_cache == 0 and warm.stats.parsed == 0  # nothing read yet
    assert warm.class_record("sglang.srt.two.Asked") is not None and warm.stats.from_cache == 1


LINKS = 400  # a chain of re-exports this long met Python's recursion limit (seventh campaign, P10)
CHAINS = {
    "as-alias": lambda i: f"from sglang.srt.r{i + 1} import X as X\n",
    "plain": lambda i: f"from sglang.srt.r{i + 1} import X\n",
    "star": lambda i: f"from sglang.srt.r{i + 1} import *\n",
    "listed-star": lambda i: f"from sglang.srt.r{i + 1} import *\n__all__ = ['X']\n",
}


def chain_release(root: Path, link, end: str) -> Release:
    files = {"sglang/__init__.py": "", "sglang/srt/__init__.py": "", f"sglang/srt/r{LINKS - 1}.py": end,
             **{f"sglang/srt/r{i}.py": link(i) for i in range(LINKS - 1)}}
    for relpath, text in files.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return Release("sglang (test)", "0.1.0", DirectoryTree(root), identity=None)


@pytest.mark.parametrize("shape", sorted(CHAINS))
def test_a_chain_of_hundreds_of_re_exports_is_followed_to_its_end(tmp_path: Path, shape: str) -> None:
    cache = RecordCache(tmp_path / "cache")
    defined = UpstreamModel(chain_release(tmp_path / "old", CHAINS[shape], "X = 1\n"), cache)
    removed = UpstreamModel(chain_release(tmp_path / "new", CHAINS[shape], "Y = 1\n"), cache)
    found = defined.resolve_name("sglang.srt.r0", "X")
    assert (found.status, found.origin) == ("found", f"sglang.srt.r{LINKS - 1}.X")
    assert defined.resolve_path("sglang.srt.r0.X").origin == found.origin
    assert removed.resolve_name("sglang.srt.r0", "X").missing
    assert removed.resolve_path("sglang.srt.r0.X").missing
    assert not defined.problems() and not removed.problems()  # every module of the chain was read


def test_a_module_reached_through_hundreds_of_re_exports_is_a_path_s_middle(tmp_path: Path) -> None:
    # `sglang.srt.r0.inner.X`: `inner` is followed along the chain to a module, then X read in it.
    release = chain_release(tmp_path / "tree", lambda i: f"from sglang.srt.r{i + 1} import inner\n",
                            "from sglang.srt import leaf as inner\n")
    (tmp_path / "tree/sglang/srt/leaf.py").write_text("X = 1\n")
    model = UpstreamModel(release, RecordCache(tmp_path / "cache"))
    assert model.resolve_path("sglang.srt.r0.inner.X").origin == "sglang.srt.leaf.X"
    assert model.resolve_path("sglang.srt.r0.inner.Y").missing


def test_a_re_export_cycle_of_hundreds_of_links_is_unknown_not_a_recursion(tmp_path: Path) -> None:
    model = UpstreamModel(chain_release(tmp_path / "tree", CHAINS["as-alias"],
                                        "from sglang.srt.r0 import X as X\n"), RecordCache(tmp_path / "cache"))
    assert model.resolve_name("sglang.srt.r0", "X").status == "unknown"
    assert not model.problems()  # every module of the cycle was read, none met the recursion limit


def test_a_cycle_of_star_imports_resolves_a_missing_name_in_memory_linear_in_the_chain(tmp_path: Path) -> None:
    """Each link of a resolution copied the set of links before it, every copy alive along the
    chain: a name missing from a cycle of N star imports cost N^2 in time and memory (6,000
    modules: 52 s and 900 MB; campaign 9, R21). The chain's links are one set now."""
    import tracemalloc

    release = chain_release(tmp_path / "tree", CHAINS["star"], "from sglang.srt.r0 import *\nX = 1\n")
    model = UpstreamModel(release, RecordCache(tmp_path / "cache"))
    assert model.resolve_name("sglang.srt.r0", "X").origin == f"sglang.srt.r{LINKS - 1}.X"  # every module read
    tracemalloc.start()
    try:
        missing = model.resolve_name("sglang.srt.r0", "Z")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not missing.found
    assert peak < LINKS * 2_000  # a few objects per link; the copies took LINKS^2 / 2 set entries (~8 MB)


def test_a_web_of_star_import_cycles_is_resolved_as_python_does_once_a_link(tmp_path: Path, monkeypatch) -> None:
    """Each module star-imports the next two of a ring: cycles everywhere, valid Python, where
    every module has what any of them defines. A cycle made every name it passes along unknown
    (campaign 10, R14); followed through, its paths double at each module. Counted, not timed:
    a resolution follows each (module, name) link of a star import once."""
    def web(i: int) -> str:
        return f"from sglang.srt.r{i + 1} import *\nfrom sglang.srt.r{(i + 2) % LINKS} import *\n"

    model = UpstreamModel(chain_release(tmp_path / "tree", web, web(LINKS - 1) + "X = 1\n"),
                          RecordCache(tmp_path / "cache"))
    steps = [0]
    name_steps = UpstreamModel._name_steps

    def counted(self, *args):
        steps[0] += 1
        return name_steps(self, *args)

    monkeypatch.setattr(UpstreamModel, "_name_steps", counted)
    assert model.resolve_name("sglang.srt.r0", "X").origin == f"sglang.srt.r{LINKS - 1}.X"
    assert model.resolve_name(f"sglang.srt.r{LINKS // 2}", "X").origin == f"sglang.srt.r{LINKS - 1}.X"
    steps[0] = 0
    assert model.resolve_name("sglang.srt.r0", "Z").missing
    assert steps[0] <= 2 * LINKS  # one a star import


@pytest.mark.parametrize("levels", [100, 101])
def test_a_hierarchy_deeper_than_followed_is_open_ended_and_said(tmp_path: Path, levels: int) -> None:
    """Bases past the depth followed were dropped as if there were none: a member defined above
    was "absent" in both releases and its contracts passed silently (campaign 9, R22)."""
    from sglang_contracts.upstream.model import DEEPEST_CLASS

    assert DEEPEST_CLASS == 100
    classes = [f"class C{levels}:\n    def m(self, q):\n        return 1\n"]
    classes += [f"class C{i}(C{i + 1}):\n    pass\n" for i in range(levels - 1, -1, -1)]
    root = tmp_path / "tree"
    for relpath, text in {"sglang/__init__.py": "", "sglang/srt/a.py": "".join(classes)}.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    model = UpstreamModel(Release("sglang (test)", "0.1.0", DirectoryTree(root), identity=None), RecordCache(tmp_path / "c"))
    order, open_ended = model.mro("sglang.srt.a.C0")
    member = model.member("sglang.srt.a.C0", "m")
    if levels == 100:
        assert not open_ended and member is not None and not model.problems()
    else:
        assert open_ended and member is None
        ((module, stage, error, internal),) = model.problems()
        assert (module, internal) == ("sglang.srt.a", False) and "sglang.srt.a.C0" in stage and "100 levels" in error
