"""The host-agent example: the verifier as a node with shared keys, and behind a wrapping node."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

from evigraph.generators.scripted import ScriptedGenerator
from tests.agents.veri_r1.test_graph import ANSWER_REFUTE, PLAN, DictSearch

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "host_agent.py"


def _example():
    spec = importlib.util.spec_from_file_location("host_agent_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # LangGraph resolves the state's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def policy(transcript: list, params: object) -> str:
    turns = sum(s.origin == "policy" for s in transcript)
    return f"{PLAN}<search>Hog Island Light first lit</search>" if turns == 0 else ANSWER_REFUTE


def test_both_host_forms_run_the_verifier_under_a_checkpointer() -> None:
    example = _example()
    config = {"configurable": {"thread_id": "t"}}
    shared = example.shared_keys_host(ScriptedGenerator(policy), DictSearch())
    result = asyncio.run(shared.ainvoke({"claim": "Hog Island Light was first lit in 1853."}, config))
    assert result["output"].label == "REFUTE" and result["trajectory"].error is None
    assert len(list(shared.get_state_history(config))) >= 2  # the checkpointer stored the run
    wrapped = example.wrapping_node_host(ScriptedGenerator(policy), DictSearch())
    assert asyncio.run(wrapped.ainvoke({"draft": "Hog Island Light was first lit in 1853."}, config)) == {
        "draft": "Hog Island Light was first lit in 1853.",
        "verdict": "REFUTE",
    }
