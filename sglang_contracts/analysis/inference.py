"""astroid's inference, at the few sites where no annotation says what a receiver is.

`batch = ScheduleBatch.init_new(...)`, `Worker = A if fast else B; self.worker = Worker()`,
`TorchMemorySaverAdapter.create(...).pause()`: the scanner's types stop at a call whose
result nothing annotates. Where a rule meets such a receiver and the attribute or method it
reads is one the bump changed (resolve.py asks only then), this module infers the receiver
with astroid, against one release at a time: the project's file and the release's own
modules are given to astroid as source text, and every other import fails, so nothing is
imported, and nothing installed (another SGLang, torch) is read. The answer is the classes
whose instances the receiver may be; anything else it may be (a value astroid cannot infer,
a function, a module) leaves it undecided, and the rule stays as silent as before.

The cost is bounded per site, deterministically: astroid's own count of inferred nodes
(InferenceContext.max_inferred), the number of modules one inference may reach
(MODULES_PER_SITE), and the number of nodes it may ask astroid to infer (STEPS_PER_SITE),
counted and checked inside astroid's inference itself, where a wall-clock limit is checked
too as a safety net: a site stopped by either is undecided. It is bounded per file and per
run too: a file is built and its reads indexed once, and past SITES_PER_FILE (or SITES_PER_RUN)
sites are left undecided without inference, since a pull request may hold thousands of them.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import threading
from collections import OrderedDict
import time
import warnings
from typing import Any

from sglang_contracts.infra.cache import code_fingerprint
from sglang_contracts.infra.display import printable
from sglang_contracts.infra.memo import KeptPerReleasePair
from sglang_contracts.infra.shapes import ListOf, Table, TableOf
from sglang_contracts.project.facts import Position
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.upstream import model as upstream_model
from sglang_contracts.upstream.model import EXTRACTOR, UpstreamModel, is_upstream

MODULES_PER_SITE = 8  # modules one inference may reach: the file and the release's modules (ScheduleBatch.init_new decides with 4)
SECONDS_PER_SITE = 30.0  # a safety net against a pathological module: far above any real site (a few seconds)
# Nodes one inference may ask astroid to infer: sglang 0.5.22's ScheduleBatch.init_new(...),
# Scheduler(...) and ModelRunner() sites ask 3,000-5,600; a chain of 400 project classes asked
# 162,000 (astroid's cost grows with the cube of such a chain: 12 s a site).
STEPS_PER_SITE = 50_000
STEPS_PER_FILE = 150_000  # and per project file and release, and per release and run: what a
STEPS_PER_RUN = 600_000  # stopped site cost is not spent again at each of the file's sites
SITES_PER_FILE = 64  # inferences per project file and release (sglang's own tree as a project: 68 sites in all)
SITES_PER_RUN = 512  # inferences per release and run
# A release's modules kept built between sites, those used last: a site reaches at most
# MODULES_PER_SITE, and sites of one file reach the same ones (sglang's own tree as a project
# built hundreds, about 1 MB of nodes each, all kept to the run's end).
MODULES_KEPT = 32
# astroid's process-wide memos keyed by nodes, each of which keeps the node's whole tree alive
# (constraint's memo of guards is not bounded at all): emptied after each site, so that the
# trees of the modules and project files no longer kept are freed. Those an installed astroid
# does not have are passed over (they came with later releases).
_MEMO_CLEARERS = (("astroid.inference_tip", "clear_inference_tip_cache"),
                  ("astroid.constraint", "clear_preceding_guards_cache"))
_LRU_MEMOS = (("astroid.nodes._base_nodes", "LookupMixIn", "lookup"),
              ("astroid.nodes.scoped_nodes", "ClassDef", "_metaclass_lookup_attribute"),
              ("astroid.interpreter.objectmodel", "ObjectModel", "attributes"))
# What ChangedNames' kept answers rest on: the records' form and how classes and members are resolved.
NAMES_READER = f"{EXTRACTOR}-{code_fingerprint(upstream_model, sys.modules[__name__])}"
_KEPT_ANSWERS = Table(origins=TableOf(str), lost=TableOf(ListOf(str)), params=TableOf(bool))
NOT_A_CLASS = frozenset({"builtins"})  # instances of its classes are values, not SGLang objects

_LOCK = threading.Lock()  # astroid keeps its modules and caches in process-wide state
_ACTIVE: list["ReleaseInference"] = []  # the session astroid's module lookups are served from
_INSTALLED = False


def _install() -> None:
    """Route astroid's every module lookup to the active session. astroid would otherwise find
    modules on sys.path (an installed SGLang, not the release being read) and import C
    extensions to introspect them; a lookup outside a session keeps astroid's own behaviour."""
    global _INSTALLED
    if _INSTALLED:
        return
    from astroid.manager import AstroidManager

    original = AstroidManager.ast_from_module_name

    def served(self: Any, modname: str | None, context_file: str | None = None, use_cache: bool = True) -> Any:
        if not _ACTIVE:
            return original(self, modname, context_file, use_cache)
        return _ACTIVE[-1].module(modname or "")

    AstroidManager.ast_from_module_name = served

    from astroid.nodes.node_ng import NodeNG

    inferred = NodeNG.infer

    def budgeted(self: Any, context: Any = None, **kwargs: Any) -> Any:
        # every inference of every node goes through here, so the limits stop a single
        # inference however astroid recurses, not only when it reaches a new module
        if _ACTIVE:
            _ACTIVE[-1].step()
        return inferred(self, context, **kwargs)

    NodeNG.infer = budgeted
    _INSTALLED = True


class _SiteStopped(BaseException):
    """A site's inference went past its budget. Not an Exception, so that none of astroid's
    handlers (it turns many errors into "uninferable" and goes on) takes it for its own."""


_UNUSABLE: list[str] = []  # why astroid could not be imported, once said


def _say_astroid_is_unusable(error: ImportError) -> None:
    """An astroid that is installed and cannot be imported (the run's notes say when it is not
    installed): said once on standard error, never silently dropped."""
    if not _UNUSABLE:
        _UNUSABLE.append(str(error))
        print(f"sglang-contracts: note: astroid cannot be imported ({printable(str(error))}): receivers no "
              "annotation types are not inferred", file=sys.stderr)


class _ProjectFile:
    """The site's project file as astroid builds it, and its attribute reads by where their
    names are: built and indexed once for all the file's sites."""

    def __init__(self, module: str, path: str, text: str) -> None:
        self.module, self.path, self.text = module, path, text
        self.built: Any = None
        self.receivers: dict[tuple[str, Position], Any] | None = None  # (attr, name's position) -> receiver

    def same(self, module: str, path: str, text: str) -> bool:
        return (self.module, self.path) == (module, path) and (self.text is text or self.text == text)

    def receiver(self, attr: str, position: Position) -> Any:
        """The receiver expression of the `.attr` load whose name is at `position`."""
        if self.receivers is None:
            from astroid import nodes

            at = SourcePositions(self.text)
            self.receivers = {}
            for node in self.built.nodes_of_class(nodes.Attribute):
                self.receivers.setdefault((node.attrname, at.attribute_name(_AttributeShape(node))), node.expr)
        return self.receivers.get((attr, position))


class ReleaseInference:
    """astroid's modules of one release, built from its text as sites ask for them."""

    def __init__(self, model: UpstreamModel) -> None:
        self.model = model
        self._modules: OrderedDict[str, Any] = OrderedDict()  # the release's modules built, MODULES_KEPT of them
        self._project: _ProjectFile | None = None  # the site's file
        self._scratch: dict[str, Any] = {}  # astroid's own module cache while a site is inferred
        self._reached: set[str] = set()
        self._deadline = 0.0
        self._steps = 0
        self._limit = 0  # the steps the site may take: its own budget, or what is left of its file's or the run's
        self._stopped = False
        self._steps_by_file: dict[str, int] = {}
        self._sites_by_file: dict[str, int] = {}
        self.sites = 0  # inferences run, and the time they took (benchmarks, tests)
        self.seconds = 0.0
        self.over_budget = 0  # sites left undecided without inference, past the file's or the run's budget
        self.stopped = 0  # inferences stopped past their steps or time
        self.steps = 0  # nodes astroid was asked to infer, over every site (tests)

    def step(self) -> None:
        """One more node to infer for the site: stopped past its budget of steps or of time."""
        self._steps += 1
        self.steps += 1
        if self._stopped or self._steps > self._limit or (self._steps % 64 == 0 and time.monotonic() > self._deadline):
            self._stopped = True
            raise _SiteStopped

    def module(self, name: str) -> Any:
        """astroid's module `name`: the site's project file, or the release's module; an import
        error for anything else, and for a module past the site's budget."""
        from astroid.builder import AstroidBuilder
        from astroid.exceptions import AstroidImportError
        from astroid.manager import AstroidManager

        if name == "builtins":
            return self._scratch["builtins"]
        if name not in self._reached:
            if len(self._reached) >= MODULES_PER_SITE:  # (the time is checked at each step: step())
                raise AstroidImportError("{modname}: past the inference budget of one site", modname=name)
            self._reached.add(name)
        project = self._project
        if project is not None and name == project.module:  # it shadows the release's module of that name (sglang's own tree)
            if project.built is None:
                project.built = AstroidBuilder(AstroidManager()).string_build(project.text, name, project.path)
            return project.built
        if name in self._modules:
            self._modules.move_to_end(name)
            return self._modules[name]
        source = self.model.module_text(name) if is_upstream(name) else None
        if source is None:
            raise AstroidImportError("{modname} is neither the file nor a module of the release", modname=name)
        relpath, code = source
        built = self._modules[name] = AstroidBuilder(AstroidManager()).string_build(code, name, relpath)
        if len(self._modules) > MODULES_KEPT:
            self._modules.popitem(last=False)
        return built

    def classes_at(self, module: str, path: str, text: str, position: Position, attr: str) -> tuple[str, ...] | None:
        """The qualified names of the classes whose instances the receiver of `.attr` at
        `position` may be (None: undecided, or no such read there)."""
        with _LOCK, warnings.catch_warnings():
            asked, spent = self._sites_by_file.get(path, 0), self._steps_by_file.get(path, 0)
            self._limit = min(STEPS_PER_SITE, STEPS_PER_FILE - spent, STEPS_PER_RUN - self.steps)
            if asked >= SITES_PER_FILE or self.sites >= SITES_PER_RUN or self._limit <= 0:
                self.over_budget += 1
                return None
            self._sites_by_file[path] = asked + 1
            started = time.monotonic()
            self.sites += 1
            self._deadline = started + SECONDS_PER_SITE
            self._steps, self._stopped = 0, False
            try:
                found = self._classes_at(module, path, text, position, attr)
                return None if self._stopped else found  # astroid may have taken the stop for an error of its own
            except ImportError as error:
                if error.name is None or error.name.split(".")[0] != "astroid":
                    return None  # astroid's own lookups fail on imports outside the release: undecided
                _say_astroid_is_unusable(error)
                return None
            except (Exception, RecursionError, _SiteStopped):  # astroid met what it cannot handle, or the budget: undecided
                return None
            finally:
                self.stopped += self._stopped
                self._steps_by_file[path] = spent + self._steps
                self.seconds += time.monotonic() - started

    def _classes_at(self, module: str, path: str, text: str, position: Position, attr: str) -> tuple[str, ...] | None:
        _install()
        from astroid.context import _invalidate_cache
        from astroid.manager import AstroidManager

        brain = AstroidManager.brain
        if "builtins" not in brain["astroid_cache"]:
            AstroidManager().bootstrap()  # astroid's builtins, introspected from this interpreter's
        saved = brain["astroid_cache"]
        # astroid's builder files each module it builds in its process-wide cache: a scratch one
        # per site, so that neither release's modules linger there for the other's sites.
        self._scratch = brain["astroid_cache"] = {"builtins": saved["builtins"]}
        _ACTIVE.append(self)
        if self._project is None or not self._project.same(module, path, text):
            self._project = _ProjectFile(module, path, text)
        self._reached = set()
        try:
            # astroid compiles each module it builds: what Python warns of there (an invalid
            # escape in a release's regex) is no news of this run's
            warnings.simplefilter("ignore")
            self.module(module)
            receiver = self._project.receiver(attr, position)
            return _instance_classes(receiver) if receiver is not None else None
        finally:
            _ACTIVE.pop()
            brain["astroid_cache"] = saved
            _invalidate_cache()  # astroid's memo of inferred nodes: each site starts alike, whatever came before
            _forget_astroid_memos()


def _forget_astroid_memos() -> None:
    """Empty astroid's memos keyed by nodes (_MEMO_CLEARERS, _LRU_MEMOS)."""
    for module_name, function in _MEMO_CLEARERS:
        clear = getattr(importlib.import_module(module_name), function, None)
        if clear is not None:
            clear()
    for module_name, owner, method in _LRU_MEMOS:
        memo = getattr(getattr(importlib.import_module(module_name), owner, None), method, None)
        if hasattr(memo, "cache_clear"):
            memo.cache_clear()


def _instance_classes(receiver: Any) -> tuple[str, ...] | None:
    """The qualified names of the classes astroid infers the receiver (a node) to be an
    instance of; None when it cannot tell, or it may be something else."""
    from astroid import bases, nodes
    from astroid.context import InferenceContext
    from astroid.util import UninferableBase

    found: list[str] = []
    for value in receiver.infer(context=InferenceContext()):
        if isinstance(value, UninferableBase):
            return None
        if isinstance(value, nodes.Const) and value.value is None:
            continue  # `self.x = None` before it is built narrows nothing, as for the scanner
        if type(value) is not bases.Instance or not isinstance(value._proxied, nodes.ClassDef):
            return None
        name = value._proxied.qname()
        if name.split(".")[0] in NOT_A_CLASS:
            return None
        if name not in found:
            found.append(name)
    return tuple(found) or None


class _AttributeShape:
    """An astroid Attribute in the shape SourcePositions reads of `ast.Attribute` (astroid keeps ast's offsets)."""

    __slots__ = ("attr", "end_lineno", "end_col_offset")

    def __init__(self, node: Any) -> None:
        self.attr = node.attrname
        self.end_lineno = node.end_lineno
        self.end_col_offset = node.end_col_offset


class ChangedNames(KeptPerReleasePair):
    """Whether the bump changed a member name on an upstream class (with its bases): gone from
    the class in the new release (what SGC322 collects), or a method whose parameters changed.
    It depends on the releases alone. Asked name by name: a method's record is decoded only
    when its name is asked about (most of a class's never are). For two releases whose content
    never changes (a published version, a commit, either with a patch stack) the answers are
    kept in the cache: answering them decodes the records of every module on a class's bases
    (most of a re-check's upstream reading), and the next process asks the same ones."""

    def __init__(self, old: UpstreamModel, new: UpstreamModel) -> None:
        self.old, self.new = old, new
        self._origins: dict[str, str | None] = {}  # a dotted name the project imports -> the old release's class
        self._lost: dict[str, frozenset[str]] = {}
        self._own: dict[tuple[int, str], frozenset[str]] = {}  # (release, class) -> names it defines itself
        self._params: dict[tuple[str, str], bool] = {}
        self._kept_params: dict[str, bool] = {}  # "origin\0name" -> _params' answer, kept by an earlier process
        identities = (old.release.identity, new.release.identity)
        self._record = hashlib.sha256(f"{NAMES_READER}\0changed-names\0{identities}".encode()).hexdigest() \
            if all(identities) else None
        self._new_answers = False
        self._read_back(self._kept())

    def origin(self, dotted: str) -> str | None:
        """The class of the old release that `dotted` (an import's target) names, or None."""
        if dotted not in self._origins:
            self._origins[dotted] = self.old.resolve_class(dotted)
            self._new_answers = True
        return self._origins[dotted]

    def changed(self, origin: str, name: str) -> bool:
        return name in self.lost(origin) or self.parameters_changed(origin, name)

    def lost(self, origin: str) -> frozenset[str]:
        if origin not in self._lost:
            now = self.new.resolve_class(origin)
            gone = self._names(self.old, origin) - (self._names(self.new, now) if now is not None else set())
            self._lost[origin] = frozenset(name for name in gone if not name.startswith("__") or name == "__init__")
            self._new_answers = True
        return self._lost[origin]

    def parameters_changed(self, origin: str, name: str) -> bool:
        """The method's parameters as written (a candidate is a name, not a verdict)."""
        key = (origin, name)
        if key not in self._params and isinstance(kept := self._kept_params.get(f"{origin}\0{name}"), bool):
            self._params[key] = kept
        if key not in self._params:
            was = self.old.member(origin, name)
            now = self.new.resolve_class(origin)
            is_ = self.new.member(now, name) if now is not None and was is not None else None
            self._params[key] = was is not None and is_ is not None and was.kind == is_.kind == "method" \
                and was.record.get("params") != is_.record.get("params")
            self._new_answers = True
        return self._params[key]

    def keep(self) -> None:
        if self._record is None or not self._new_answers:
            return
        # Read again: the run's other process may have kept its own answers meanwhile.
        kept = self._kept() or {"origins": {}, "lost": {}, "params": {}}
        kept["origins"].update({dotted: origin or "" for dotted, origin in self._origins.items()})
        kept["lost"].update({origin: sorted(names) for origin, names in self._lost.items()})
        kept["params"].update({f"{origin}\0{name}": changed for (origin, name), changed in self._params.items()})
        self.old.cache.put(self._record, kept)
        self._new_answers = False

    def _kept(self) -> dict[str, Any] | None:
        return self.old.cache.get(self._record, _KEPT_ANSWERS) if self._record is not None else None

    def _read_back(self, kept: dict[str, Any] | None) -> None:
        if kept is None:
            return
        self._origins.update({dotted: origin or None for dotted, origin in kept["origins"].items()})
        self._lost.update({origin: frozenset(names) for origin, names in kept["lost"].items()})
        self._kept_params = kept["params"]  # thousands: each read back when asked

    def _names(self, model: UpstreamModel, origin: str) -> set[str]:
        """Every name `member` finds on the class, from each class of its MRO's own names."""
        names: set[str] = set()
        for owner in model.mro(origin)[0]:
            key = (id(model), owner)
            if key not in self._own:  # an InitVar field counts too: a candidate is a name, not a verdict
                record = model.class_record(owner)
                self._own[key] = frozenset([*record["methods"], *record["attributes"], *(f[0] for f in record["fields"])])
            names |= self._own[key]
        return names
