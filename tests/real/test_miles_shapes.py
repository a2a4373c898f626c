"""Shapes of miles' code on real releases.

SGC315: a test helper builds `OpenAIServingChat` with `object.__new__` and calls
`_process_messages` on it. sglang 0.5.16's `_process_messages` reads
`self.default_chat_template_kwargs`, which only `__init__` sets (miles' bump to 0.5.16 had to
set it by hand); 0.5.13's encode path reads `self._tokenizer_auto_adds_specials`.

`ServerArgs(**engine_kwargs)`: the keywords of a dict the function built are checked as if
written at the call (0.5.23 dropped `speculative_skip_dp_mlp_sync`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_contracts.check.runner import CheckOptions, run_check

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache

HELPER = '''from unittest.mock import MagicMock

from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat


def _make_serving(tokenizer) -> OpenAIServingChat:
    serving = object.__new__(OpenAIServingChat)
    serving.tokenizer_manager = MagicMock()
    serving.tokenizer_manager.tokenizer = tokenizer
    serving.template_manager = MagicMock()
    serving.use_dpsk_v32_encoding = False
    serving.chat_encoding_spec = None
    serving.is_gpt_oss = False
    serving.tool_call_parser = None
    serving.reasoning_parser = None
{extra}    return serving


def prompt_ids(tokenizer, request):
    serving = _make_serving(tokenizer)
    serving.reasoning_parser = "deepseek-v3"
    return serving._process_messages(request, is_multimodal=False)
'''


def _check(tmp_path: Path, real_cache: Path, old: str, new: str, extra: str) -> list:
    root = tmp_path / "rollout"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'rollout'\n")
    (root / "tests" / "test_template.py").write_text(HELPER.format(extra=extra))
    result = run_check([root], CheckOptions(old=old, new=new, select=["SGC315"], cache_dir=real_cache))
    return [d for d in result.diagnostics if d.code == "SGC315"]


@pytest.mark.parametrize(("old", "new", "attr"), [
    ("0.5.15", "0.5.16", "default_chat_template_kwargs"),
    ("0.5.12", "0.5.13", "_tokenizer_auto_adds_specials"),
])
def test_a_bare_serving_object_lacks_what_the_new_init_sets(tmp_path: Path, real_cache: Path,
                                                            old: str, new: str, attr: str) -> None:
    (found,) = _check(tmp_path, real_cache, old, new, extra="")
    assert found.severity == "error" and (found.path, found.line) == ("tests/test_template.py", 22)
    assert f"never gets self.{attr}," in found.message
    assert "prompt_ids -> OpenAIServingChat._process_messages" in found.message
    assert f"upstream OpenAIServingChat.__init__ sets {attr} = " in found.message


@pytest.mark.parametrize(("old", "new", "attr"), [
    ("0.5.15", "0.5.16", "default_chat_template_kwargs"),
    ("0.5.12", "0.5.13", "_tokenizer_auto_adds_specials"),
])
def test_silent_when_the_helper_sets_it(tmp_path: Path, real_cache: Path, old: str, new: str, attr: str) -> None:
    # the fix miles made: the attribute set by hand; `chat_encoding_spec = None` keeps the
    # 0.5.16 inkling branch (which reads `_inkling_default_reasoning_effort`) closed
    assert _check(tmp_path, real_cache, old, new, extra=f"    serving.{attr} = {{}}\n") == []


ENGINE = '''from sglang.srt.server_args import ServerArgs


def launch(model_path, tp):
    engine_kwargs = {"model_path": model_path, "tp_size": tp}
    engine_kwargs[KEY] = True
    return ServerArgs(**engine_kwargs)
'''


@pytest.mark.parametrize(("key", "expected"), [("speculative_skip_dp_mlp_sync", 1), ("enable_metrics", 0)])
def test_server_args_keywords_of_a_dict_built_in_the_function(tmp_path: Path, real_cache: Path,
                                                              key: str, expected: int) -> None:
    root = tmp_path / "rollout"
    (root / "app").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'rollout'\n")
    (root / "app" / "engine.py").write_text(ENGINE.replace("KEY", repr(key)))
    result = run_check([root], CheckOptions(old="0.5.22", new="0.5.23", select=["SGC5", "SGC2"], cache_dir=real_cache))
    found = [(d.code, d.line, d.col) for d in result.diagnostics if d.path == "app/engine.py"]
    assert found == [("SGC501", 6, 19)] * expected
