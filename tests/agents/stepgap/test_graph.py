"""The StepGap rollout graph: a scripted Search-R1 policy, a scripted judge and a rule NLI; labels land on the
trajectory's steps next to exact token spans, and runs given gold carry the typed process reward (§3)."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest

from evigraph.agents.stepgap.scoring import REWARD, StepGapRewardOptions
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.graphs.kit.context import RunContext
from evigraph.graphs.stepgap import build_stepgap_graph
from tests.agents.stepgap.doubles import ENTAIL, FakeNLI, judge_by_step, judgement
from tests.graphs.test_search_r1 import QUESTION, TURNS, DictSearch

QUOTE_2 = "Chazelle was born in Providence, Rhode Island."
JUDGE = {
    "director of Whiplash": judgement(match=False),  # step 1: IE
    "Whiplash was directed": judgement(found=True, quote=QUOTE_2),  # step 2: quote → D (NEUTRAL → MB)
    "born in Providence": judgement(),  # conclusion without quote → E
}


def run(policy: Any, nli: FakeNLI, **inputs: Any) -> dict[str, Any]:
    graph = build_stepgap_graph(policy, search=DictSearch(), nli=nli, judge=judge_by_step(JUDGE))
    return asyncio.run(graph.ainvoke({"question": QUESTION, **inputs}))


def test_every_step_gets_its_label_path_and_repair_action() -> None:
    result = run(ScriptedGenerator(TURNS), FakeNLI())
    output = result["output"]
    assert output.labels == ["IE", "MB", "IE"]  # step 3: no entailing premise among step 2's quote and passage
    payloads = [s.payload for s in result["trajectory"].steps]
    assert [p["repair"] for p in payloads] == ["re-search", "bridging-search", "re-search"]
    assert payloads[1]["pipeline_path"].endswith("stageC:quote_found, stageD:neutral")
    assert output.checks.nli == "fake-nli" and "scripted" in output.checks.judge


def test_stage_e_reads_the_earlier_entity_matched_evidence() -> None:
    nli = FakeNLI({"Rhode Island": ENTAIL})
    result = run(ScriptedGenerator(TURNS), nli)
    assert result["output"].labels == ["IE", "no-gap", "no-gap"]
    conclusion = "Chazelle was born in Providence."
    assert ("Chazelle was born in Providence, Rhode Island.", conclusion) in nli.pairs


def test_runs_given_gold_carry_the_typed_return_and_dense_step_values() -> None:
    result = run(ScriptedGenerator(TURNS), FakeNLI(), golds=["Providence"], gold={"golds": ["Providence"]})
    trajectory = result["trajectory"]
    # IE, MB (new query after IE: +0.10), IE answer after MB (−0.15): 1 + (−0.10) + (−0.05 + 0.10) + (−0.10 − 0.15)
    assert trajectory.reward_scalar == "return"
    assert {c.type: c.value for c in trajectory.rewards}["return"] == pytest.approx(0.70)
    dense = [{c.type: c.value for c in s.rewards}["dense"] for s in trajectory.steps]
    assert dense == pytest.approx([0.90, 1.05, 0.75])


def test_strict_token_run_keeps_exact_spans_for_the_trainer(qwen2_style_tokenizer: Any) -> None:
    policy = ScriptedGenerator(TURNS, tokenizer=qwen2_style_tokenizer)
    graph = build_stepgap_graph(None, search=DictSearch(), nli=FakeNLI(), judge=judge_by_step(JUDGE))
    result = asyncio.run(
        graph.ainvoke(
            {"question": QUESTION, "gold": {"em": 1}}, context=RunContext(generator=policy, strict_tokens=True)
        )
    )
    trajectory = result["trajectory"]
    ids = [t for s in trajectory.segments for t in (s.token_ids or [])]
    for step, check in zip(trajectory.steps, result["output"].checks.steps, strict=True):
        start, end = step.token_span
        assert ids[start:end] == trajectory.segments[step.segment_index].token_ids
        assert check.token_span == step.token_span
    assert trajectory.rewards and trajectory.reward_scalar == "return"


def test_reward_options_and_pickling() -> None:
    reward = REWARD.configure(StepGapRewardOptions(preset="binary_gap", lam=2.0))
    clone = pickle.loads(pickle.dumps(reward))
    assert clone.settings == reward.settings and clone.scalar == "return"


def test_without_a_separate_judge_the_policy_judges() -> None:
    turns = iter(TURNS)

    def reply(transcript: list[Any], params: Any) -> str:
        return judgement() if "CONTEXT" in transcript[0].text else next(turns)

    graph = build_stepgap_graph(ScriptedGenerator(reply), search=DictSearch(), nli=FakeNLI())
    output = asyncio.run(graph.ainvoke({"question": QUESTION}))["output"]
    assert output.labels == ["no-gap", "no-gap", "IE"] and output.checks.judge.startswith("scripted")


def test_a_binary_checker_cannot_drive_a_typed_reward() -> None:
    from evigraph.agents.stepgap.schemas import StepGapConfig

    graph = build_stepgap_graph(
        ScriptedGenerator(TURNS), search=DictSearch(), nli=FakeNLI(), config=StepGapConfig(pipeline="nli-only")
    )
    result = asyncio.run(graph.ainvoke({"question": QUESTION}))
    trajectory = result["trajectory"]
    with pytest.raises(ValueError, match="typed labels"):
        REWARD(trajectory, {"em": 1})
    binary = REWARD.configure(StepGapRewardOptions(preset="binary_gap"))
    assert binary(trajectory, {"em": 1}).scalar == "return"


def test_a_run_that_fails_before_its_first_step_is_data() -> None:
    result = run(ScriptedGenerator([]), FakeNLI(), gold={"golds": ["Providence"]})
    output, trajectory = result["output"], result["trajectory"]
    assert output.trace is None and output.labels == [] and output.answer is None
    assert trajectory.error is not None and trajectory.error.where == "generate"
    assert {c.type: c.value for c in trajectory.rewards}["return"] == 0.0
