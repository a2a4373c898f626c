"""The HTTP model's pieces on small inputs: route tables read from an upstream server module,
requests read from project files, and source-text probes kept as data."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.project.data_probes import _file_probes, yaml_probes
from sglang_contracts.project.http import _file_requests, url_path
from sglang_contracts.project.index import build_index
from sglang_contracts.project.http import http_facts
from sglang_contracts.upstream.http import _read_routes

SERVER = '''
from fastapi import FastAPI, Request, Query
from typing import Annotated, Optional
from sglang.srt.entrypoints.loads import router as loads_router

app = FastAPI()


@app.get("/health")
@app.get("/health_generate")
async def health(request: Request):
    return 1


@app.api_route("/flush_cache", methods=["GET", "POST"])
async def flush_cache(timeout: float = Query(0.0)):
    return 1


@app.post("/update")
async def update(obj: Annotated[Optional[UpdateReqInput], Body()] = None):
    return obj


@app.post("/corpus")
async def corpus(request: Request):
    body = await request.json()
    return CorpusReqInput(**body)


@app.post("/remove")
async def remove(request: Request):
    body = await request.json()
    return body["corpus_id"], body.get("force")


def slow_down():
    return 1


app.add_api_route("/slow_down", slow_down, methods=["POST"])
app.include_router(loads_router, prefix="/v1")
'''


def test_route_table_of_a_server_module() -> None:
    table = _read_routes(SERVER)
    routes = {(r["path"], tuple(r["methods"])): r for r in table["routes"]}
    assert set(routes) == {("/health", ("GET",)), ("/health_generate", ("GET",)), ("/flush_cache", ("GET", "POST")),
                           ("/update", ("POST",)), ("/corpus", ("POST",)), ("/remove", ("POST",)),
                           ("/slow_down", ("POST",))}
    update, corpus = routes["/update", ("POST",)], routes["/corpus", ("POST",)]
    assert (update["body"], update["request_type"]) == ("model", "UpdateReqInput")
    assert (corpus["body"], corpus["request_type"]) == ("construct", "CorpusReqInput")
    remove = routes["/remove", ("POST",)]
    assert (remove["body"], remove["keys"], remove["required"]) == ("dict", ["corpus_id", "force"], ["corpus_id"])
    assert routes["/flush_cache", ("GET", "POST")]["body"] == ""  # a query parameter is no body
    assert table["included"] == [["sglang.srt.entrypoints.loads.router", "/v1"]]
    assert table["opaque"] == []
    # A router built by a call may serve anything: the table says it is not complete.
    assert _read_routes(SERVER + "app.include_router(make_router())\n")["opaque"] == [SERVER.count("\n") + 1]


ROLLOUT = '''"""Talks to the sglang server."""
import requests


BASE = "http://localhost:30000"


def generate(args, prompt, dp_rank):
    url = f"http://{args.host}:{args.port}/generate?stream=0"
    payload = dict(text=prompt, sampling_params={"temperature": 0.0, **args.extra})
    payload["routed_dp_rank"] = dp_rank
    return requests.post(url, json=payload)


def flush(host):
    requests.get("http://" + host + "/flush_cache")
    requests.post(url=BASE + "/abort_request", json={"rid": "all"})
    return "/generate"  # a bare path names no server


class Client:
    def _call(self, endpoint, payload=None):
        return requests.post(f"http://{self.host}/{endpoint}", json=payload or {})

    def pause(self):
        return self._call("pause_generation", {"mode": "abort"})

    def dynamic(self, name):
        return self._call(name, {})
'''


def test_requests_read_from_a_project_file() -> None:
    rows = [row for row in _file_requests("app/rollout.py", ROLLOUT) if row[0] == "request"]
    by_route = {row[4]: row for row in rows}
    assert set(by_route) == {"/generate", "/flush_cache", "/abort_request", "/pause_generation"}
    generate = by_route["/generate"]
    assert generate[5] == "POST" and [k[0] for k in generate[6]] == ["text", "sampling_params", "routed_dp_rank"]
    assert [k[0] for k in generate[8]] == ["temperature"]
    assert generate[7] is True  # dict(...) and an item assignment: every key known
    assert by_route["/flush_cache"][5] == "GET" and by_route["/flush_cache"][6] == []
    assert by_route["/abort_request"][2:4] == [17, 23]  # the URL's position
    pause = by_route["/pause_generation"]
    assert pause[5] == "POST" and [k[0] for k in pause[6]] == ["mode"] and pause[2:4] == [26, 27]


def test_files_that_do_not_mention_sglang_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (tmp_path / "a.py").write_text(ROLLOUT)
    (tmp_path / "b.py").write_text(ROLLOUT.replace("sglang", "tgi"))
    facts = http_facts(build_index(tmp_path, [tmp_path], RecordCache(None), workers=1))
    assert {request.path for request in facts.requests} == {"a.py"}


def test_url_paths() -> None:
    assert url_path("http://\0:\0/generate?x=1") == "/generate"
    assert url_path("\0/v1/chat/completions") == "/v1/chat/completions"
    assert url_path("/generate") is None and url_path("http://host") is None


CONFIG = '''PATCHES = """\\
patches:
  - target: megatron.core.Layer.forward
    edits:
      - match: "x = f(x)"
  - target: sglang.srt.models.m.Layer.forward
    edits:
      - match: 'y = g(y)  # it''s there'
      - match: |
          z = h(
              z
          )
        append: "dump(z)"
      - match: w = k(w)
"""
'''


def test_probes_kept_as_yaml_in_a_string() -> None:
    assert yaml_probes(CONFIG.split('"""', 2)[1]) == [
        ("", "x = f(x)"), ("sglang.srt.models.m.Layer.forward", "y = g(y)  # it's there"),
        ("sglang.srt.models.m.Layer.forward", "z = h(\n    z\n)"), ("sglang.srt.models.m.Layer.forward", "w = k(w)")]
    rows = _file_probes("tests/config.py", CONFIG)
    assert [(row[1], row[2], row[4][:5]) for row in rows] == [(8, 9, "y = g"), (9, 9, "z = h"), (14, 9, "w = k")]


def test_payloads_that_refer_to_each_other_end() -> None:
    text = ('"""sglang."""\nimport requests\n\n\ndef f(url_base):\n'
            '    a = {"sampling_params": b, "text": 1}\n    b = {"sampling_params": a, "top_k": 1}\n'
            '    requests.post("http://h/generate", json=a)\n')
    (row,) = [r for r in _file_requests("x.py", text) if r[0] == "request"]
    assert [k[0] for k in row[6]] == ["sampling_params", "text"] and [k[0] for k in row[8]] == ["sampling_params", "top_k"]


def test_a_route_only_the_projects_patch_serves_is_the_patchs_contract(tmp_path: Path) -> None:
    """slime's patch adds `/pull_weights` to the server; on the next release the hunk no longer
    applies (SGC901). The route is not upstream's to remove: no SGC1101 for it, while a stock
    route the new release dropped still gets one."""
    import difflib

    from sglang_contracts.check.runner import CheckOptions, run_check
    from tests.helpers import upstream_tree, write_tree

    server = "sglang/srt/entrypoints/http_server.py"
    stock = ('from fastapi import FastAPI, Request\n\napp = FastAPI()\n\n\n@app.get("/get_weight_version")\n'
             'async def get_weight_version():\n    return 1\n\n\n@app.post("/generate")\n'
             'async def generate(request: Request):\n    return 1\n')
    patched = stock + '\n\n@app.post("/pull_weights")\nasync def pull_weights(request: Request):\n    return 1\n'
    changed = stock.replace('@app.get("/get_weight_version")\nasync def get_weight_version():\n    return 1\n\n\n',
                            "").replace("return 1\n", "return 2\n")
    relpath = f"python/{server}"
    patch = f"diff --git a/{relpath} b/{relpath}\n" + "".join(difflib.unified_diff(
        stock.splitlines(True), patched.splitlines(True), f"a/{relpath}", f"b/{relpath}"))
    old = upstream_tree(tmp_path / "old", {server: stock}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {server: changed}, "0.2.0")
    root = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "docker/Dockerfile": "FROM lmsysorg/sglang:v0.1.0\nCOPY docker/patch/ /tmp/patch/\n"
                             "RUN cd /sgl-workspace/sglang && git apply /tmp/patch/sglang.patch\n",
        "docker/patch/sglang.patch": patch,
        "app/engine.py": "import requests\n\nimport sglang\n\n\ndef pull(host, port):\n"
                         "    requests.post(f\"http://{host}:{port}/pull_weights\", json={})\n"
                         "    return requests.get(f\"http://{host}:{port}/get_weight_version\")\n",
    })
    result = run_check([root], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    found = sorted((d.path, d.line, d.code) for d in result.diagnostics if d.code in ("SGC1101", "SGC901"))
    assert ("app/engine.py", 8, "SGC1101") in found  # upstream's own route, gone
    assert ("app/engine.py", 7, "SGC1101") not in found  # the patch's route: its hunk is the finding
    assert any(code == "SGC901" and path == "docker/patch/sglang.patch" for path, _, code in found)


def test_only_files_that_can_hold_a_request_or_a_probe_are_parsed() -> None:
    from sglang_contracts.project.data_probes import _may_probe
    from sglang_contracts.project.http import _may_request

    prose = '"""Served by sglang; see https://docs.sglang.ai/ for the API."""\n# https://github.com/x/y\nx = 1\n'
    assert not _may_request(prose)  # a URL in a docstring or a comment is no request
    for request in ('requests.post("http://h:1/generate", json={})', 'post(f"{base}/generate", json={})',
                    'post(self.base + "/generate", json={})', 'post("http" + "://h/generate", json={})',
                    'p = {"sampling_params": {}}'):
        assert _may_request(f"import sglang\n{request}\n"), request
    # the concatenated URL names no scheme: found now, where any "://" in the file was needed before
    text = '"""sglang."""\nimport requests\n\n\ndef f(self):\n    requests.post(self.base + "/generate", json={"text": 1})\n'
    assert _may_request(text) and [r[4] for r in _file_requests("x.py", text) if r[0] == "request"] == ["/generate"]
    assert not _may_probe('"""sglang.srt.x"""\nmatch = re.match(p, target)\n')
    assert _may_probe('P = {"target": "sglang.srt.models.m.Layer.forward", "match": "x"}\n')
    assert _may_probe(CONFIG)
