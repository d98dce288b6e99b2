"""``training/agent_func.py`` as OpenRLHF 0.11.2's rollout actor uses it: loaded by file path with OpenRLHF's own
``_load_agent_executor`` (it must define ``AgentExecutor``, a subclass of ``AgentExecutorBase``, built with no
arguments, its rollout config from the environment), then driven by the actor's own ``generate_responses`` (the
samples of one prompt concurrently, keyword arguments, the actor as ``llm_engine``) on the scripted engine.
Both OpenRLHF functions are taken from its source as shipped; only the vLLM/Ray actor around them is absent."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evigraph.errors import ConfigError
from evigraph.training import executor as executor_module
from evigraph.training.executor import CONFIG_ENV, GraphExecutor, RolloutConfig
from evigraph.training.samples import STEP_INDEX_KEY, STEP_VALUE_KEY, steps_from_lists
from evigraph.training.scripted_engine import ScriptedEngine, ScriptedSamplingParams
from tests.training.openrlhf_real import openrlhf_root, stub_modules
from tests.training.test_executor import RLSEEK_REPLY, D, T

AGENT_FILE = Path(executor_module.__file__).with_name("agent_func.py")
"""The file `evigraph train` passes as ``--train.agent_func_path``."""
LABEL = json.dumps({"input": {"task": "summary", "source": D, "response": T}, "gold": {"spans": [[57, 61]]}})


def _openrlhf_functions(monkeypatch: pytest.MonkeyPatch) -> tuple[Callable[[str], Any], Callable[..., Any]]:
    """OpenRLHF's ``_load_agent_executor`` and ``RolloutRayActor.generate_responses``, compiled from
    ``openrlhf/trainer/ray/vllm_engine.py`` (whose module imports Ray and vLLM), against the real
    ``openrlhf.utils.agent``."""
    root = openrlhf_root()
    stubs: dict[str, dict[str, Any]] = {"openrlhf.utils": {}}  # its __init__ pulls in optional math deps
    if importlib.util.find_spec("aiohttp") is None:  # imported by agent.py for remote rewards, unused here
        stubs["aiohttp"] = {}
    stub_modules(monkeypatch, stubs, {"openrlhf.utils": str(root / "utils")})
    for name in [m for m in sys.modules if m.startswith("openrlhf.utils.")]:
        monkeypatch.delitem(sys.modules, name)
    from openrlhf.utils.agent import AgentExecutorBase

    path = root / "trainer" / "ray" / "vllm_engine.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    loader = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_load_agent_executor")
    actor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RolloutRayActor")
    generate = next(n for n in actor.body if isinstance(n, ast.AsyncFunctionDef) and n.name == "generate_responses")
    generate.decorator_list = []
    namespace: dict[str, Any] = {"AgentExecutorBase": AgentExecutorBase, "asyncio": asyncio}
    exec(compile(ast.Module(body=[loader, generate], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["_load_agent_executor"], namespace["generate_responses"]


def _rollout_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: RolloutConfig) -> None:
    path = tmp_path / "rollout.json"
    path.write_text(config.model_dump_json(), encoding="utf-8")
    monkeypatch.setenv(CONFIG_ENV, str(path))


def test_openrlhf_loads_the_agent_file_and_its_actor_runs_a_prompts_samples(
    qwen2_style_tokenizer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load, generate_responses = _openrlhf_functions(monkeypatch)
    config = RolloutConfig(agent="rlseek", step_value="quote")
    _rollout_config(tmp_path, monkeypatch, config)
    agent = load(str(AGENT_FILE))
    assert type(agent).__name__ == "AgentExecutor" and type(agent).__module__ == "agent_module"
    assert agent._executor.config == config  # read from the file the environment names
    engine = ScriptedEngine(qwen2_style_tokenizer, lambda _ids: RLSEEK_REPLY)
    actor = SimpleNamespace(executor=agent, generate=engine.generate)  # the actor is the llm_engine
    params = ScriptedSamplingParams(temperature=0.9, max_tokens=512)
    samples = asyncio.run(
        generate_responses(actor, "<prompt>", LABEL, params, 4096, qwen2_style_tokenizer, num_samples=3)
    )
    assert len(samples) == 3 and len(engine.calls) == 3
    # Each sample is exactly what the executor gives for one run of the graph.
    direct = asyncio.run(
        GraphExecutor(config).execute(
            "<prompt>", LABEL, params, 4096, qwen2_style_tokenizer,
            ScriptedEngine(qwen2_style_tokenizer, [RLSEEK_REPLY]),
        )
    )  # fmt: skip
    assert all(sample == direct for sample in samples)
    sample = samples[0]
    assert sample["reward"] == pytest.approx(1 - (0 + 20 / 30) / 2) and sample["truncated"] is False
    (start, end) = sample["action_ranges"][0]
    assert qwen2_style_tokenizer.decode(sample["observation_tokens"][start:end]).startswith("## Step 1")
    steps = steps_from_lists(sample["extra_logs"][STEP_INDEX_KEY], sample["extra_logs"][STEP_VALUE_KEY])
    assert [v for _, _, v in steps] == pytest.approx([0.0, -1 / 3])
    assert engine.calls[0][1].temperature == 0.9  # the trainer's sampling params reach the engine


def test_later_keyword_arguments_are_accepted_and_ignored(
    qwen2_style_tokenizer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load, _ = _openrlhf_functions(monkeypatch)
    _rollout_config(tmp_path, monkeypatch, RolloutConfig(agent="rlseek"))
    agent = load(str(AGENT_FILE))
    engine = ScriptedEngine(qwen2_style_tokenizer, [RLSEEK_REPLY])
    sample = asyncio.run(
        agent.execute(
            prompt="p", label=LABEL, sampling_params=ScriptedSamplingParams(), max_length=4096,
            hf_tokenizer=qwen2_style_tokenizer, llm_engine=engine, images=None, request_id="r-7",
        )
    )  # fmt: skip
    assert sample["reward"] == pytest.approx(1 - (0 + 20 / 30) / 2) and len(engine.calls) == 1


def test_an_actor_without_its_rollout_config_fails_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load, _ = _openrlhf_functions(monkeypatch)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    with pytest.raises(ConfigError, match=CONFIG_ENV):
        load(str(AGENT_FILE))
    (tmp_path / "rollout.json").write_text(json.dumps({"agent": "rlseek", "unknown": 1}), encoding="utf-8")
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "rollout.json"))
    with pytest.raises(ConfigError, match=r"(?s)rollout\.json: .*unknown"):
        load(str(AGENT_FILE))
