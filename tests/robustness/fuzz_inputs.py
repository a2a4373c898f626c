"""Inputs for the fuzz tests (test_fuzz.py): two small SGLang-shaped releases, a downstream
project in sglang-omni's shape and a stack in slime's and miles' shape, all written for these
tests (none of it is SGLang's, sglang-omni's, slime's or miles' code)."""

from __future__ import annotations

# -- two releases, 0.5.16 and 0.5.17, with a few breaking differences -------------------------

SERVER_ARGS_OLD = '''\
"""The server's arguments (fuzz fixture)."""

import argparse
import dataclasses
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    tp_size: int = 1
    mem_fraction_static: Optional[float] = None
    enable_ep_moe: bool = False
    chunked_prefill_size: int = 8192

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--model-path", type=str)
        parser.add_argument("--tp-size", type=int, default=1)

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> "ServerArgs":
        return cls(**{field.name: getattr(args, field.name) for field in dataclasses.fields(cls)})


@dataclasses.dataclass
class PortArgs:
    scheduler_input_ipc_name: str


def prepare_server_args(argv: list[str]) -> ServerArgs:
    return ServerArgs(*argv)
'''

SERVER_ARGS_NEW = SERVER_ARGS_OLD.replace(
    "    enable_ep_moe: bool = False\n", "    default_chat_template_kwargs: Optional[dict] = None\n"
).replace('''

def prepare_server_args(argv: list[str]) -> ServerArgs:
    return ServerArgs(*argv)
''', "")

SCHEDULER_OLD = '''\
"""The scheduler process (fuzz fixture)."""

from sglang.srt.managers.schedule_batch import Req, ScheduleBatch
from sglang.srt.server_args import PortArgs, ServerArgs


class Scheduler:
    def __init__(self, server_args: ServerArgs, port_args: PortArgs) -> None:
        self.server_args = server_args
        self.waiting_queue: list[Req] = []
        self.running_batch = None
        self.chunked_req = None
        self.max_running_requests = 8

    def event_loop_normal(self):
        while True:
            batch = self.get_next_batch_to_run()
            if batch is None:
                break

    def get_next_batch_to_run(self):
        return self.get_new_batch_prefill()

    def get_num_allocatable_reqs(self, running_bs):
        return self.max_running_requests - running_bs

    def get_new_batch_prefill(self) -> ScheduleBatch | None:
        return None

    def process_batch_result(self, batch, result):
        return result


def run_scheduler_process(server_args: ServerArgs, port_args: PortArgs) -> None:
    Scheduler(server_args, port_args).event_loop_normal()
'''

SCHEDULER_NEW = SCHEDULER_OLD.replace("get_num_allocatable_reqs", "get_num_allocatable_requests").replace(
    "    def process_batch_result(self, batch, result):\n        return result\n",
    "    def process_batch_result(self, batch, result, *, launch_done=None):\n"
    "        self.grammar_queue = []\n        return result\n",
)

SCHEDULE_BATCH_OLD = '''\
"""Requests and batches (fuzz fixture)."""

from typing import List, Optional


class Req:
    def __init__(self, rid: str, origin_input_text: str, origin_input_ids: List[int]) -> None:
        self.rid = rid
        self.origin_input_text = origin_input_text
        self.origin_input_ids = origin_input_ids
        self.prefix_indices = []
        self.extend_range = None
        self.finished_reason = None

    def finished(self) -> bool:
        return self.finished_reason is not None


class ScheduleBatch:
    def __init__(self, reqs: List[Req]) -> None:
        self.reqs = reqs

    def filter_batch(self, keep_indices: Optional[List[int]] = None):
        return self
'''

SCHEDULE_BATCH_NEW = SCHEDULE_BATCH_OLD.replace("        self.extend_range = None\n", "").replace(
    "def filter_batch(self, keep_indices: Optional[List[int]] = None):",
    "def filter_batch(self, chunked_req, keep_indices: Optional[List[int]] = None):",
)

MODEL_RUNNER_OLD = '''\
"""The model runner (fuzz fixture)."""

from sglang.srt.server_args import ServerArgs


class ModelRunner:
    def __init__(self, server_args: ServerArgs, tp_rank: int) -> None:
        self.server_args = server_args
        self.tp_rank = tp_rank
        self.model = None
        self.tp_group = None

    def load_model(self):
        self.model = object()

    def init_cuda_graphs(self):
        return None

    def forward(self, forward_batch, skip_attn_backend_init: bool = False):
        return self.model
'''

MODEL_RUNNER_NEW = MODEL_RUNNER_OLD.replace("init_cuda_graphs", "init_device_graphs").replace(
    "skip_attn_backend_init: bool = False):", "skip_attn_backend_init: bool = False, *, pp_proxy_tensors=None):")

LAYERNORM_OLD = '''\
class RMSNorm:
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x, residual=None):
        return self.forward_cuda(x, residual)

    def forward_cuda(self, x, residual=None):
        return x

    def forward_npu(self, x, residual=None):
        return x
'''

LAYERNORM_NEW = '''\
class RMSNorm:
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x, residual=None):
        return self.forward_native(x, residual)

    def forward_native(self, x, residual=None):
        return x

    def forward_cuda(self, x, residual=None, *, post_residual_addition=None):
        if post_residual_addition is not None:
            x = x + post_residual_addition
        return x
'''

UTILS_OLD = "def get_bool_env_var(name, default='false'): ...\ndef is_cuda(): ...\ndef kept(): ...\n"
UTILS_NEW = "def get_bool_env_var(name, default='false'): ...\ndef kept(): ...\n"


def release(version: str, new: bool) -> dict[str, str]:
    pins = '"transformers==4.57.1", "torch==2.8.0"' if new else '"transformers==4.57.0", "torch==2.8.0"'
    return {
        "pyproject.toml": f'[project]\nname = "sglang"\nversion = "{version}"\ndependencies = [{pins}]\n',
        "sglang/__init__.py": "",
        "sglang/version.py": f'__version__ = "{version}"\n',
        "sglang/srt/server_args.py": SERVER_ARGS_NEW if new else SERVER_ARGS_OLD,
        "sglang/srt/utils.py": UTILS_NEW if new else UTILS_OLD,
        "sglang/srt/managers/scheduler.py": SCHEDULER_NEW if new else SCHEDULER_OLD,
        "sglang/srt/managers/schedule_batch.py": SCHEDULE_BATCH_NEW if new else SCHEDULE_BATCH_OLD,
        "sglang/srt/model_executor/model_runner.py": MODEL_RUNNER_NEW if new else MODEL_RUNNER_OLD,
        "sglang/srt/layers/layernorm.py": LAYERNORM_NEW if new else LAYERNORM_OLD,
    }


OLD_RELEASE = release("0.5.16", new=False)
NEW_RELEASE = release("0.5.17", new=True)

# -- the project: the control file, whose findings are known, and the seeds of mutation -------

# Reported identically whatever is beside it: a removed name, a renamed method of a subclass.
CONTROL = '''\
from sglang.srt.utils import is_cuda
from sglang.srt.managers.scheduler import Scheduler


class ControlScheduler(Scheduler):
    def budget(self):
        return self.get_num_allocatable_reqs(1)
'''

SEEDS = {
    "omni/scheduler.py": '''\
"""A scheduler in sglang-omni's shape: it subclasses SGLang's and overrides its steps."""

from sglang.srt.managers.schedule_batch import Req, ScheduleBatch
from sglang.srt.managers.scheduler import Scheduler
from sglang.srt.server_args import PortArgs, ServerArgs


class OmniScheduler(Scheduler):
    def __init__(self, server_args: ServerArgs, port_args: PortArgs) -> None:
        super().__init__(server_args, port_args)
        self.omni_queue: list[Req] = []

    def get_next_batch_to_run(self):
        budget = self.get_num_allocatable_reqs(len(self.waiting_queue))
        if budget <= 0:
            return None
        return super().get_next_batch_to_run()

    def process_batch_result(self, batch: ScheduleBatch, result):
        for req in batch.reqs:
            if req.extend_range is not None:
                self.omni_queue.append(req)
        return super().process_batch_result(batch, result)
''',
    "omni/runner.py": '''\
"""A wrapper that borrows ModelRunner's methods through __getattr__."""

import types

from sglang.srt.model_executor.model_runner import ModelRunner


class OmniModelRunner:
    def __init__(self, runner: ModelRunner) -> None:
        self._runner = runner

    def warmup(self):
        self.init_cuda_graphs()
        return self.forward(None, skip_attn_backend_init=True)

    def __getattr__(self, name):
        attr = getattr(ModelRunner, name)
        return types.MethodType(attr, self._runner) if callable(attr) else attr
''',
    "omni/patches.py": '''\
"""Monkeypatches of SGLang's layers."""

from sglang.srt.layers.layernorm import RMSNorm

_original_forward_cuda = RMSNorm.forward_cuda


def _forward_cuda(self, x, residual=None):
    out = _original_forward_cuda(self, x, residual)
    return out


RMSNorm.forward_cuda = _forward_cuda
setattr(RMSNorm, "forward_npu", _forward_cuda)
''',
    "omni/server.py": '''\
"""ServerArgs as the project sets it up."""

from sglang.srt.server_args import ServerArgs, prepare_server_args


def build_server_args(model_path: str, **overrides) -> ServerArgs:
    server_args = ServerArgs(model_path=model_path, tp_size=1)
    server_args.enable_ep_moe = overrides.pop("ep", False)
    server_args.chunked_prefill_size = -1
    for key, value in overrides.items():
        setattr(server_args, key, value)
    return server_args


def from_argv(argv):
    return prepare_server_args(argv)
''',
    "omni/compat.py": '''\
"""Imports that moved between releases, with a fallback."""

try:
    from sglang.srt.utils import is_cuda
except ImportError:  # older SGLang
    def is_cuda() -> bool:
        return False

try:
    from sglang.srt.managers.schedule_batch import Req
except ImportError:
    Req = None

import sglang.srt.utils as sglang_utils

USE_CUDA = sglang_utils.get_bool_env_var("OMNI_CUDA") and is_cuda()
''',
    "tests/test_omni.py": '''\
"""Tests that patch SGLang by name."""

from unittest import mock

import pytest

from sglang.srt.managers.scheduler import Scheduler


@mock.patch("sglang.srt.managers.scheduler.Scheduler.get_num_allocatable_reqs", return_value=4)
def test_budget(patched):
    with mock.patch("sglang.srt.model_executor.model_runner.ModelRunner.init_cuda_graphs"):
        assert patched.return_value == 4


def test_monkeypatch(monkeypatch):
    monkeypatch.setattr(Scheduler, "get_new_batch_prefill", lambda self: None)
    monkeypatch.setattr("sglang.srt.utils.is_cuda", lambda: False)
''',
}

PYPROJECT = '''\
[project]
name = "omni"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = [
    "sglang==0.5.16",
    "transformers==4.57.0",  # Match the pinned sglang stack
    "torch==2.8.0",
]

[project.optional-dependencies]
dev = ["pytest>=8"]
'''

# -- the stack: in slime's and miles' shape ----------------------------------------------------

STACK_SEEDS = {
    "pyproject.toml": PYPROJECT,
    "requirements.txt": '''\
# Runtime requirements
sglang[all]==0.5.16
transformers==4.57.0  # sglang pin
ray[default]>=2.47
-e .
--extra-index-url https://download.pytorch.org/whl/cu128
torch==2.8.0 ; platform_system == "Linux"
''',
    "docker/Dockerfile": '''\
ARG SGLANG_IMAGE_TAG=v0.5.16
FROM lmsysorg/sglang:${SGLANG_IMAGE_TAG}

WORKDIR /root
COPY docker/patch/ /root/patch/
RUN cd /sgl-workspace/sglang && git apply /root/patch/sglang.patch
RUN pip install "sglang[all]==0.5.16" --no-deps && pip install -e /root/omni
''',
    ".github/workflows/ci.yml": '''\
name: ci
on:
  push:
    branches: [main]
  pull_request:
env:
  SGLANG_VERSION: 0.5.16
jobs:
  test:
    runs-on: ubuntu-latest
    container:
      image: lmsysorg/sglang:v0.5.16-cu129
    steps:
      - uses: actions/checkout@v4
      - run: pip install "sglang==0.5.16" && pytest -q
''',
    "docker/patch/sglang.patch": '''\
diff --git a/python/sglang/srt/managers/scheduler.py b/python/sglang/srt/managers/scheduler.py
--- a/python/sglang/srt/managers/scheduler.py
+++ b/python/sglang/srt/managers/scheduler.py
@@ -1,4 +1,5 @@
 """The scheduler process (fuzz fixture)."""
 
+import os
 from sglang.srt.managers.schedule_batch import Req, ScheduleBatch
 from sglang.srt.server_args import PortArgs, ServerArgs
@@ -24,3 +25,3 @@ class Scheduler:
     def get_num_allocatable_reqs(self, running_bs):
-        return self.max_running_requests - running_bs
+        return max(self.max_running_requests - running_bs, 0)
 
diff --git a/python/sglang/srt/layers/layernorm.py b/python/sglang/srt/layers/layernorm.py
--- a/python/sglang/srt/layers/layernorm.py
+++ b/python/sglang/srt/layers/layernorm.py
@@ -9,5 +9,5 @@ class RMSNorm:
     def forward_cuda(self, x, residual=None):
-        return x
+        return x * 1.0
 
     def forward_npu(self, x, residual=None):
         return x
''',
}
