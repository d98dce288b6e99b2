"""The host-agent example: the verifier as a node with shared keys, and behind a wrapping node."""

from __future__ import annotations

import asyncio

import evigraph
from evigraph.generators.scripted import ScriptedGenerator
from tests.agents.veri_r1.test_graph import ANSWER_REFUTE, PLAN, DictSearch
from tests.examples.loading import load_example


def policy(transcript: list, params: object) -> str:
    turns = sum(s.origin == "policy" for s in transcript)
    return f"{PLAN}<search>Hog Island Light first lit</search>" if turns == 0 else ANSWER_REFUTE


def test_both_host_forms_run_one_verifier_under_a_checkpointer() -> None:
    example = load_example("host_agent")
    search = DictSearch()
    verifier = evigraph.agent("veri-r1", model=ScriptedGenerator(policy), search=search)
    config = {"configurable": {"thread_id": "t"}}
    shared = example.shared_keys_host(verifier)
    result = asyncio.run(shared.ainvoke({"claim": "Hog Island Light was first lit in 1853."}, config))
    assert result["output"].label == "REFUTE" and result["trajectory"].error is None
    assert len(list(shared.get_state_history(config))) >= 2  # the checkpointer stored the run
    wrapped = example.wrapping_node_host(verifier)  # the same compiled verifier, in a second host
    assert asyncio.run(wrapped.ainvoke({"draft": "Hog Island Light was first lit in 1853."}, config)) == {
        "draft": "Hog Island Light was first lit in 1853.",
        "verdict": "REFUTE",
    }
    assert search.queries == ["Hog Island Light first lit"] * 2  # one search per run, through the given tool
