"""Cycles and deep nesting in the code read (issue 11): every check completes, and still reports
what it can know.

Each test runs the real check end to end on a tiny upstream release pair and project, with
SGLANG_CONTRACTS_DEBUG set so that no error boundary could hide a crash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sglang_contracts.contracts  # noqa: F401  (registers the checks)
from sglang_contracts.check.runner import CheckOptions, run_check
from tests.helpers import upstream_tree, write_tree

REQ_OLD = '''
from typing import Optional


class Req:
    def __init__(self, rid):
        self.rid = rid
        self.next: Optional["Req"] = None

    def finished(self):
        return False
'''
REQ_NEW = '''
from typing import Optional


class Req:
    def __init__(self, rid):
        self.rid = rid
        self.next: Optional["Req"] = None
'''
SCHEDULE_BATCH = "sglang/srt/managers/schedule_batch.py"


@pytest.fixture(autouse=True)
def debug(monkeypatch) -> None:
    monkeypatch.setenv("SGLANG_CONTRACTS_DEBUG", "1")


def check(tmp_path: Path, old: dict[str, str], new: dict[str, str], project: dict[str, str]) -> list[str]:
    old_root = upstream_tree(tmp_path / "old", old, "0.1.0")
    new_root = upstream_tree(tmp_path / "new", new, "0.2.0")
    root = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **project})
    result = run_check([root], CheckOptions(old=str(old_root), new=str(new_root), use_cache=False, workers=1))
    return sorted(f"{d.path}:{d.line}:{d.col}: {d.code}" for d in result.diagnostics)


# -- D1: receiver types that depend on themselves ---------------------------------------------

def test_an_attribute_walked_forward_through_itself_resolves_to_nothing(tmp_path: Path) -> None:
    """`self.cur = self.cur.next`: the type of `self.cur` is Req or whatever `self.cur.next` is,
    which depends on `self.cur` itself. The resolver does not solve such equations, so the
    receiver is unknown and `self.cur.finished()` is not judged (a contract is never judged on
    a guess). `req.finished()` on the annotated parameter, outside the cycle, still is."""
    project = {"app/walker.py": '''
from sglang.srt.managers.schedule_batch import Req


class Walker:
    def __init__(self, req: Req):
        self.cur = req

    def step(self):
        self.cur = self.cur.next
        self.cur.finished()

    def done(self, req: Req):
        return req.finished()
'''}
    assert check(tmp_path, {SCHEDULE_BATCH: REQ_OLD}, {SCHEDULE_BATCH: REQ_NEW}, project) == [
        "app/walker.py:14:20: SGC321",
    ]


def test_a_lazy_cache_read_and_written_back_through_a_local_resolves_to_nothing(tmp_path: Path) -> None:
    """`buf = self._buf; self._buf = buf` (sglang 0.5.22's flashmla_backend.py): `_buf` has
    the type of `_buf`, nothing more is known about it."""
    project = {"app/cache.py": '''
from sglang.srt.managers.schedule_batch import Req


class Cache:
    def __init__(self, req: Req):
        self._buf = None
        self.req = req

    def get(self):
        buf = self._buf
        if buf is None:
            buf = self._buf
            self._buf = buf
        buf.finished()
        return self.req.finished()
'''}
    assert check(tmp_path, {SCHEDULE_BATCH: REQ_OLD}, {SCHEDULE_BATCH: REQ_NEW}, project) == [
        "app/cache.py:16:25: SGC321",
    ]


def test_an_attribute_assigned_to_itself_keeps_its_other_types(tmp_path: Path) -> None:
    """`self.r = self.r` adds nothing but a self-reference: `self.r` is a Req from __init__, or
    itself. With the cycle it is unknown, and nothing read through it is judged."""
    project = {"app/holder.py": '''
from sglang.srt.managers.schedule_batch import Req


class Holder:
    def __init__(self, req: Req):
        self.r = req

    def refresh(self):
        self.r = self.r
        return self.r.finished()
'''}
    assert check(tmp_path, {SCHEDULE_BATCH: REQ_OLD}, {SCHEDULE_BATCH: REQ_NEW}, project) == []


def test_two_classes_in_two_files_typing_each_others_attributes(tmp_path: Path) -> None:
    """`Left.peer` is `Right.peer`'s type and `Right.peer` is `Left.peer`'s: a cycle across
    files, so neither is known; `Left.req`, typed plainly, still is."""
    project = {
        "app/left.py": '''
from sglang.srt.managers.schedule_batch import Req

from app.right import Right


class Left:
    def __init__(self, right: Right, req: Req):
        self.peer = right.peer
        self.req = req

    def run(self):
        self.peer.finished()
        return self.req.finished()
''',
        "app/right.py": '''
from sglang.srt.managers.schedule_batch import Req


class Right:
    def __init__(self, left: "Left"):
        self.peer = left.peer

    def run(self):
        return self.peer.finished()


from app.left import Left  # noqa: E402
''',
    }
    assert check(tmp_path, {SCHEDULE_BATCH: REQ_OLD}, {SCHEDULE_BATCH: REQ_NEW}, project) == [
        "app/left.py:14:25: SGC321",
    ]


def test_a_chain_that_walks_the_typed_next_attribute_is_still_judged(tmp_path: Path) -> None:
    """Without a cycle the guard changes nothing: `self.head.next.finished()` is a Req's."""
    project = {"app/queue.py": '''
from sglang.srt.managers.schedule_batch import Req


class Queue:
    def __init__(self, req: Req):
        self.head = req

    def second(self):
        return self.head.next.finished()
'''}
    assert check(tmp_path, {SCHEDULE_BATCH: REQ_OLD}, {SCHEDULE_BATCH: REQ_NEW}, project) == [
        "app/queue.py:10:31: SGC321",
    ]


# -- D14: cyclic bases and forwarding __init__ ------------------------------------------------

CYCLIC_BASES = '''
class Base:
    def __init__(self, size=1):
        self.size = size


class A(B):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class B(A):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class Plain(Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
'''
PLAIN_NEW = CYCLIC_BASES.replace("size=1", "capacity=1").replace("self.size = size", "self.size = capacity")


def test_upstream_classes_deriving_from_each_other_with_forwarding_inits(tmp_path: Path) -> None:
    """`A(B)` and `B(A)` each hand `**kwargs` to the other's `__init__`: where a keyword ends
    up is unknown, so `A(size=2)` is not judged. The same keyword on `Plain`, whose chain ends
    at `Base.__init__`, is: `size` became `capacity`."""
    module = "sglang/srt/layers/cyclic.py"
    project = {"app/build.py": '''
from sglang.srt.layers.cyclic import A, B, Plain


def build():
    return A(size=2), B(size=2), Plain(size=2)
'''}
    assert check(tmp_path, {module: CYCLIC_BASES}, {module: PLAIN_NEW}, project) == [
        "app/build.py:6:40: SGC201",
    ]


def test_project_classes_deriving_from_each_other_with_forwarding_inits(tmp_path: Path) -> None:
    """The same cycle in the project, over an upstream base: the project's own ancestry walk
    stops at the cycle, and the upstream call the project makes is still judged."""
    module = "sglang/srt/layers/cyclic.py"
    project = {"app/layers.py": '''
from sglang.srt.layers.cyclic import Plain


class Left(Right, Plain):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class Right(Left):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


def build():
    return Left(size=2), Right(size=2), Plain(size=2)
'''}
    assert check(tmp_path, {module: CYCLIC_BASES}, {module: PLAIN_NEW}, project) == [
        "app/layers.py:16:47: SGC201",
    ]


# -- D3: deep nesting (a long method chain) --------------------------------------------------

BACKEND_OLD = '''
class AttentionBackend:
    def prepare_prefill_shared_read_snapshot(self):
        return None

    def init_forward_metadata(self, batch):
        return batch
'''
BACKEND_NEW = '''
class AttentionBackend:
    def init_forward_metadata(self, batch):
        return batch
'''
BACKEND = "sglang/srt/layers/attention/base_attn_backend.py"


def chain(links: int) -> str:
    return "f()" + ".a()" * links


@pytest.mark.parametrize("links", [200, 600])
def test_a_named_read_in_a_file_with_a_long_method_chain(tmp_path: Path, links: int) -> None:
    """The untyped `attention_backend.<attr>` read is found by the receiver's name (SGC322) in a
    file that also holds a method chain hundreds of calls long, and so do the typed reads."""
    project = {"app/runner.py": f'''
from sglang.srt.layers.attention.base_attn_backend import AttentionBackend


def snapshot(attention_backend):
    attention_backend.prepare_prefill_shared_read_snapshot()


def typed(backend: AttentionBackend):
    return backend.prepare_prefill_shared_read_snapshot()


def f():
    return {chain(links)}
'''}
    assert check(tmp_path, {BACKEND: BACKEND_OLD}, {BACKEND: BACKEND_NEW}, project) == [
        "app/runner.py:10:20: SGC321",
        "app/runner.py:6:23: SGC322",
    ]


def test_a_file_nested_too_deep_to_parse_costs_that_file_only(tmp_path: Path) -> None:
    """3000 links are more than Python's parser can nest: the file is SGC000's to report, and
    the prose readers (its version note) and the other files' checks carry on."""
    project = {
        "app/deep.py": f"# Works with sglang 0.1.0; remove when: sglang>=0.2.0\nimport sglang\nX = {chain(3000)}\n",
        "app/ok.py": f'''
from sglang.srt.managers.schedule_batch import Req


def f(req: Req, other: "{chain(3000)}"):
    return req.finished()
''',
    }
    assert check(tmp_path, {SCHEDULE_BATCH: REQ_OLD}, {SCHEDULE_BATCH: REQ_NEW}, project) == [
        "app/deep.py:1:1: SGC000",
        "app/ok.py:6:16: SGC321",
    ]


def test_an_upstream_method_with_a_long_method_chain_is_still_read(tmp_path: Path) -> None:
    """A chain of 600 calls in an upstream method: its body is still normalised and hashed, and
    a method removed beside it still reported."""
    old = BACKEND_OLD + f"\n    def build(self):\n        return {chain(600)}\n"
    new = BACKEND_NEW + f"\n    def build(self):\n        return {chain(600)}.b()\n"
    project = {"app/runner.py": '''
from sglang.srt.layers.attention.base_attn_backend import AttentionBackend


class Backend(AttentionBackend):
    def build(self):
        return super().build()


def typed(backend: AttentionBackend):
    return backend.prepare_prefill_shared_read_snapshot()
'''}
    assert check(tmp_path, {BACKEND: old}, {BACKEND: new}, project) == [
        "app/runner.py:11:20: SGC321",
        "app/runner.py:6:9: SGC303",
    ]


# -- re-exports that lead back to themselves, borrowed methods that call each other -----------

def test_project_modules_re_exporting_each_others_names(tmp_path: Path) -> None:
    """`app.a` takes `Thing` from `app.b` and `app.b` from `app.a`: it stands for nothing
    upstream, so nothing read through it is judged; `Req`, re-exported once, still is."""
    project = {
        "app/a.py": "from app.b import Thing\nfrom sglang.srt.managers.schedule_batch import Req\n",
        "app/b.py": "from app.a import Thing\n",
        "app/use.py": '''
from app.a import Req, Thing


def run(req: Req, thing: Thing):
    thing.finished()
    return req.finished()
''',
    }
    assert check(tmp_path, {SCHEDULE_BATCH: REQ_OLD}, {SCHEDULE_BATCH: REQ_NEW}, project) == [
        "app/use.py:7:16: SGC321",
    ]


def test_upstream_modules_re_exporting_each_others_names(tmp_path: Path) -> None:
    """An upstream re-export cycle resolves to "unknown", never to "missing": no import is
    reported for it. A name no module of a star-import cycle has is missing from both releases,
    as Python says (reported only with --report-unresolved). The module that still defines `Req`
    keeps its contracts."""
    cyclic = {
        "sglang/srt/one.py": "from sglang.srt.two import Loop\nfrom sglang.srt.three import *\n",
        "sglang/srt/two.py": "from sglang.srt.one import Loop\n",
        "sglang/srt/three.py": "from sglang.srt.one import *\n",
    }
    project = {"app/use.py": '''
from sglang.srt.managers.schedule_batch import Req
from sglang.srt.one import Loop, Starred


def run(req: Req, loop: Loop):
    loop.finished()
    return req.finished(), Starred
'''}
    old = {SCHEDULE_BATCH: REQ_OLD, **cyclic}
    new = {SCHEDULE_BATCH: REQ_NEW, **cyclic}
    assert check(tmp_path, old, new, project) == ["app/use.py:8:16: SGC321"]


def test_names_a_star_import_cycle_re_exports_are_judged_as_python_resolves_them(tmp_path: Path) -> None:
    """`m0` and `m1` each star-import `common`, then each other: valid Python, where each star
    import binds what the other module bound so far, `x` among it. The cycle left every name it
    re-exports unknown: of three imports of a removed `x`, only the one from `common` itself was
    reported (campaign 10, R14)."""
    def release(common: str) -> dict[str, str]:
        return {"sglang/srt/pkg/__init__.py": "from .m0 import *\nfrom .m1 import *\n",
                "sglang/srt/pkg/common.py": common,
                "sglang/srt/pkg/m0.py": "from .common import *\nv0 = 0\nfrom .m1 import *\n",
                "sglang/srt/pkg/m1.py": "from .common import *\nv1 = 1\nfrom .m0 import *\n"}

    project = {"app/m.py": "from sglang.srt.pkg import x\nfrom sglang.srt.pkg.m1 import x as y\n"
                           "from sglang.srt.pkg.common import x as z\nfrom sglang.srt.pkg.m0 import v1, c\n"}
    assert check(tmp_path, release("x = 1\nc = 1\n"), release("c = 1\n"), project) == [
        "app/m.py:1:28: SGC102", "app/m.py:2:31: SGC102", "app/m.py:3:35: SGC102"]


def test_a_ring_of_project_star_imports_is_judged_once_a_link(tmp_path: Path, monkeypatch) -> None:
    """app/r0.py star-imports sglang.srt.a, then app.r1; each app/rI.py star-imports the next,
    the last app.r0 again, and each reads `x`: valid Python, where r0 has bound `x` by the time
    the ring comes back to it. Each file's `x` is sglang.srt.a's, reported at its star import of
    the ring; the search ends, and costs each (module, name) link once, however many files ask
    it (counted, not timed: a search per file would walk the ring each time)."""
    from sglang_contracts.project.releasefacts import ProjectStars

    searched = []
    link = ProjectStars._link

    def counting(stars, module, name, depth):
        searched.append((module, name))
        return link(stars, module, name, depth)

    monkeypatch.setattr(ProjectStars, "_link", counting)
    for size in (20, 40):
        searched.clear()
        ring = {f"app/r{i}.py": f"from app.r{(i + 1) % size} import *\nprint(x)\n" for i in range(1, size)}
        ring["app/r0.py"] = "from sglang.srt.a import *\nfrom app.r1 import *\nprint(x)\n"
        found = check(tmp_path / str(size), {"sglang/srt/a.py": "x = 1\n"}, {"sglang/srt/a.py": "y = 1\n"},
                      {"app/__init__.py": "", **ring})
        at_star = {i: len(f"from app.r{(i + 1) % size} import *") for i in range(size)}  # the `*`'s column
        assert sorted(found) == sorted([f"app/r{i}.py:1:{at_star[i]}: SGC102" for i in range(1, size)]
                                       + [f"app/r0.py:2:{at_star[0]}: SGC102"])
        assert len(searched) <= 3 * size, (size, len(searched))


def test_borrowed_methods_that_call_each_other(tmp_path: Path) -> None:
    """`step` calls `retry`, which calls `step` again: the walk over what borrowed code reads
    visits each method once, and reports the attribute the new `retry` reads."""
    scheduler = "sglang/srt/managers/scheduler.py"
    old = {scheduler: '''
class Scheduler:
    def step(self):
        return self.retry()

    def retry(self):
        return self.step()
'''}
    new = {scheduler: '''
class Scheduler:
    def step(self):
        return self.retry()

    def retry(self):
        self.grammar_queue.clear()
        return self.step()
'''}
    project = {"app/scheduler.py": '''
import types

from sglang.srt.managers.scheduler import Scheduler as _Upstream


class OmniScheduler:
    def run(self):
        return self.step()

    def __getattr__(self, name):
        return types.MethodType(getattr(_Upstream, name), self)
'''}
    assert check(tmp_path, old, new, project) == ["app/scheduler.py:9:21: SGC312"]


# -- the real thing ---------------------------------------------------------------------------

REAL_FILES = ["sglang/srt/layers/attention/flashmla_backend.py", "sglang/srt/models/minimax_m3.py"]


@pytest.mark.network
def test_sglang_0522s_own_lazy_caches_checked_as_project_files(tmp_path: Path, real_cache: Path) -> None:
    """sglang 0.5.22's flashmla_backend.py (`buf = self._eager_kv_indices_buf; ...;
    self._eager_kv_indices_buf = buf`) and models/minimax_m3.py (the same for
    `_aiter_cos_sin_cache`), copied into a project (at test time, from the wheel) and checked
    for 0.5.21 -> 0.5.22: the run recursed forever. It completes, and still reports what the
    files' other, acyclic receivers say."""
    from sglang_contracts.sources import open_release

    release = open_release("0.5.22", sglang_repo=None, cache=real_cache)
    project = {"pyproject.toml": "[project]\nname = 'app'\n", "app/__init__.py": ""}
    for relpath in REAL_FILES:
        project[f"app/{relpath.rsplit('/', 1)[-1]}"] = release.tree.read_source(relpath)
    root = write_tree(tmp_path / "project", project)
    result = run_check([root], CheckOptions(old="0.5.21", new="0.5.22", cache_dir=real_cache, use_cache=False,
                                            workers=1))
    found = sorted(f"{d.path}:{d.code}" for d in result.diagnostics)
    assert "app/flashmla_backend.py:SGC303" in found  # overrides of upstream methods whose bodies changed
    assert not [d for d in result.diagnostics if d.code == "SGC001"]
    # minimax_m3's acyclic receivers are judged too: on the pin alone (no bump-noise filter, which
    # keeps SGC801 only in files the bump touches otherwise) its static-attribute probe is reported
    alone = run_check([root], CheckOptions(old="0.5.22", new="0.5.22", cache_dir=real_cache, use_cache=False,
                                           workers=1))
    assert "app/minimax_m3.py:SGC801" in {f"{d.path}:{d.code}" for d in alone.diagnostics}
    # The lazily built caches themselves are unknown receivers: nothing is judged through them.
    lines = {(d.path, d.line) for d in result.diagnostics}
    assert not {("app/flashmla_backend.py", line) for line in range(147, 154)} & lines


# -- issue 38 D12: receivers nested deeper than recursion goes -----------------------------------

C_OLD = "class C:\n    def m(self, a):\n        pass\n"
C_NEW = "class C:\n    def m(self):\n        pass\n"


def links_in_init(links: int, read_at: int) -> str:
    lines = ["from sglang.srt.a import C", "class W:", "    def __init__(self):", "        self.c0 = C()"]
    lines += [f"        self.c{i + 1} = self.c{i}" for i in range(links)]
    lines += ["    def g(self):", f"        self.c{links}.m(1)", f"        return self.c{read_at}.m(1)"]  # the deep one asked first
    return "\n".join(lines) + "\n"


def links_over_methods(links: int, read_at: int) -> str:
    lines = ["from sglang.srt.a import C", "class W:", "    def __init__(self):", "        self.c0 = C()"]
    for i in range(links):
        lines += [f"    def s{i}(self):", f"        self.c{i + 1} = self.c{i}"]
    lines += ["    def g(self):", f"        self.c{links}.m(1)", f"        return self.c{read_at}.m(1)"]  # the deep one asked first
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("shape", [links_in_init, links_over_methods])
def test_an_attribute_copied_along_300_links_is_unknown_past_the_depth_bound(tmp_path: Path, shape) -> None:
    """`self.c1 = self.c0`, ..., `self.c300 = self.c299`: the resolution recursed once per link,
    past Python's limit (8 SGC001). Past RECEIVER_DEPTH links the receiver is unknown, whichever
    receiver is asked first; a short walk down the same chain is still judged."""
    text = shape(300, read_at=20)  # within RECEIVER_DEPTH
    found = check(tmp_path, {"sglang/srt/a.py": C_OLD}, {"sglang/srt/a.py": C_NEW}, {"app/u.py": text})
    short_read = text.splitlines().index("        return self.c20.m(1)") + 1
    assert found == [f"app/u.py:{short_read}:27: SGC203"]
