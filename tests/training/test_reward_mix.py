"""Mixing a checker's typed process reward into another agent's training reward: the Veri-R1 → StepGap step
adapter (claim, think text, query, evidence, conclusion hypothesis), the frozen checker service (content cache,
shared in-flight runs, provenance), and a Veri-R1 episode whose sample carries StepGap's per-step values as
their own reward type, from a YAML training config."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from evigraph.agents.stepgap.checker_job import StepGapChecker, annotated
from evigraph.agents.veri_r1.stepgap_trace import negated, veri_r1_trace
from evigraph.errors import ConfigError
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.training.checker_cache import CachedChecker
from evigraph.training.executor import GraphExecutor, RolloutConfig
from evigraph.training.reward_mix import RewardMix, adapter
from evigraph.training.samples import STEP_INDEX_KEY, STEP_TYPE_PREFIX, typed_values
from evigraph.training.scripted_engine import ScriptedEngine, ScriptedSamplingParams
from tests.agents.stepgap.doubles import judgement
from tests.agents.veri_r1.test_graph import ANSWER_REFUTE, CLAIM, PLAN, DictSearch
from tests.training.test_sft import _veri_r1_run

REPLIES = [
    f"{PLAN}\n<search>Hog Island Light</search>",
    "<think>When was it first lit?</think>\n<search>Hog Island Light first lit</search>",
    ANSWER_REFUTE,
]
GOLD = {"label": "REFUTES", "evidence": ["Hog Island Light_sentence_0", "Hog Island Light_sentence_3"]}


def test_veri_r1_steps_read_as_stepgap_steps() -> None:
    trajectory = _veri_r1_run()
    trace = veri_r1_trace(trajectory)
    assert trace is not None and trace.question == CLAIM
    first, second, last = trace.steps
    assert first.reasoning == "Find the tower, then the year it was first lit." and first.query == "Hog Island Light"
    assert [e.id for e in second.evidence] == ["Hog Island Light_sentence_3"] and second.kind == "inference"
    assert last.kind == "conclusion" and last.answer == negated(CLAIM)  # REFUTE concludes the negation
    assert [s.token_span for s in trace.steps] == [s.token_span for s in trajectory.steps]
    supported = trajectory.model_copy(update={"output": {**trajectory.output, "label": "SUPPORT"}})
    assert veri_r1_trace(supported).steps[-1].answer == CLAIM
    unsure = trajectory.model_copy(update={"output": {**trajectory.output, "label": "NOT ENOUGH INFO"}})
    assert veri_r1_trace(unsure).steps[-1].answer is None  # an abstention: no hypothesis
    assert adapter("veri-r1->stepgap") is veri_r1_trace
    with pytest.raises(ConfigError, match="known: veri-r1->stepgap"):
        adapter("rlseek->stepgap")


def test_checker_cache_caches_by_content_and_shares_runs() -> None:
    judge = ScriptedGenerator(lambda _t, _p: judgement(match=False), delay_s=0.01)
    service = CachedChecker(StepGapChecker(judge))
    trace = veri_r1_trace(_veri_r1_run())

    async def twice() -> list[Any]:
        return await asyncio.gather(service.check(trace), service.check(trace))

    first, second = asyncio.run(twice())
    assert first is second and (service.misses, service.hits) == (1, 1)
    calls = len(judge.calls)
    again = asyncio.run(service.check(trace.model_copy(update={"id": "other-run"})))  # same content, other id
    assert again is first and len(judge.calls) == calls
    assert service.provenance["checker"] == "stepgap" and service.provenance["judge"] == judge.name
    assert service.provenance["nli"] == f"generator:{judge.name}"
    labelled = annotated(_veri_r1_run(), trace, first)
    assert [s.payload.get("label") for s in labelled.steps] == [c.label for c in first.steps]


def test_a_veri_r1_episode_carries_stepgap_step_values_as_their_own_type(
    qwen2_style_tokenizer: Any, tmp_path: Path
) -> None:
    judge_file = tmp_path / "judge.json"
    judge_file.write_text(json.dumps({"replies": [judgement(match=False)] * 3}), encoding="utf-8")
    mix = RewardMix.model_validate(
        {
            "outcome_weight": 1.0,
            "process": [
                {
                    "name": "gap",
                    "adapter": "veri-r1->stepgap",
                    "reward": "typed",
                    "value": "bracket",
                    "em_from": "label",
                    "weight": 0.5,
                    "judge": f"scripted:{judge_file}",
                }
            ],
        }
    )
    config = RolloutConfig(agent="veri-r1", mix=mix, run_dir=str(tmp_path / "run"))
    executor = GraphExecutor(config, resources={"search": DictSearch()})
    (recorded,) = (tmp_path / "run" / "provenance").glob("*.json")
    checker = json.loads(recorded.read_text())["checkers"][0]
    assert checker["checker"] == "stepgap" and checker["judge"].startswith("scripted:") and checker["evigraph"]
    engine = ScriptedEngine(qwen2_style_tokenizer, REPLIES)
    label = json.dumps({"input": {"claim": CLAIM}, "gold": GOLD})
    sample = asyncio.run(executor.execute("p", label, ScriptedSamplingParams(), 4096, qwen2_style_tokenizer, engine))
    assert sample["reward"] == sample["extra_logs"]["veri-r1/total"]  # the process terms stay out of the scalar
    logs = sample["extra_logs"]
    per_step = typed_values(logs[STEP_INDEX_KEY], {"gap": logs[STEP_TYPE_PREFIX + "gap"]})
    # Every step judged off-evidence (IE, base -0.10). Step 2 re-searches after an IE with a near-duplicate query
    # (token F1 0.75 >= 0.7: shape -0.05); the answer after an IE: shape -0.15. Weight 0.5 on each bracket.
    assert [round(v["gap"], 3) for v in per_step] == [-0.05, -0.075, -0.125]
    assert logs["gap/return"] == pytest.approx(1 - 0.10 - 0.15 - 0.25)  # EM 1 (the label is right) + Σ brackets


def test_concurrently_checked_traces_share_nli_batches() -> None:
    from tests.agents.stepgap.doubles import FakeNLI

    class CountingNLI(FakeNLI):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def batch_classify(self, pairs: list[tuple[str, str]]) -> list[Any]:
            self.calls += 1
            return super().batch_classify(pairs)

    trace = veri_r1_trace(_veri_r1_run())
    other = trace.model_copy(update={"question": "Hog Island Light was first lit in 1854."})  # another claim
    judge = ScriptedGenerator(lambda _t, _p: judgement(found=True, quote="The first tower was lit in 1854."))
    nli = CountingNLI()
    service = CachedChecker(StepGapChecker(judge, nli=nli))

    async def both() -> list[Any]:
        return await asyncio.gather(service.check(trace), service.check(other))

    checks = asyncio.run(both())
    assert all("stageD" in c.steps[1].pipeline_path for c in checks)  # both traces reach the NLI
    assert service.misses == 2 and nli.calls == 1 and len(nli.pairs) == 4  # one engine call for both traces
    assert service.provenance["nli"] == "fake-nli"


def test_judge_settings_reach_the_judge_and_bad_ones_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from evigraph.training import reward_mix

    term = {"name": "gap", "adapter": "veri-r1->stepgap", "reward": "typed", "em_from": "label", "judge": "smollm2"}
    seen: list[Any] = []
    monkeypatch.setattr(
        "evigraph.generators.factory.make_generator", lambda config: seen.append(config) or ScriptedGenerator([])
    )
    reward_mix.build_mix(
        RewardMix.model_validate({"process": [{**term, "judge_settings": {"max_new_tokens": 48, "temperature": 0}}]})
    )
    assert (seen[0].model, seen[0].max_new_tokens, seen[0].temperature) == ("smollm2", 48, 0)
    with pytest.raises(ValidationError, match="max_new_token"):
        RewardMix.model_validate({"process": [{**term, "judge_settings": {"max_new_token": 48}}]})
    with pytest.raises(ValidationError, match="the judge's model is `judge`"):
        RewardMix.model_validate({"process": [{**term, "judge_settings": {"model": "other"}}]})
