"""The StepGap rollout graph (specs/stepgap.md §2.8, §3.4): a Search-R1 run whose steps the frozen checker labels.

Nodes: ``rollout`` (the Search-R1 generator, :mod:`evigraph.graphs.search_r1`) → ``check`` (the checker,
:mod:`evigraph.graphs.stepgap_checker`, over the run's steps) → ``finish`` (each trajectory step gets its label,
repair action, confidence and pipeline path next to its exact token span; with a gold answer, the typed
process reward). Checking once after the run gives the same labels as checking after every step: a step's check
reads only that step and the ones before it, and the checker is frozen; it also lets the judge calls of all
steps run at once. The repair loop (:mod:`evigraph.graphs.stepgap_repair`) is the variant that must check
step by step, because its labels steer the generator.

The judge is the run's generator unless a separate ``judge`` is given (a teacher model); the NLI is ``nli`` or,
without one, the judge scoring entailment by label-token logprobs (weaker; the output names it). Usage::

    graph = build_stepgap_graph(policy, search=search, nli=make_nli(checkpoint))
    result = await graph.ainvoke({"question": q, "golds": ["Chief of Protocol"], "gold": {"golds": [...]}})
    result["output"].labels, result["trajectory"].rewards, result["trajectory"].steps[0].token_span
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from evigraph.agents.search_r1.schemas import SearchR1Config, SearchR1Output, TraceStepRecord
from evigraph.agents.stepgap.schemas import (
    StepGapConfig,
    StepGapInputs,
    StepGapOutput,
    StepGapResult,
    Trace,
    TraceCheck,
    TraceStep,
)
from evigraph.agents.stepgap.scoring import REWARD
from evigraph.config import settings_for
from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.graphs.kit.assembly import score_trajectory
from evigraph.graphs.kit.context import RunContext, RunScope
from evigraph.graphs.search_r1 import build_search_r1_graph
from evigraph.graphs.stepgap_checker import build_checker_graph
from evigraph.rewards import AgentReward
from evigraph.tools.search import SearchTool
from evigraph.trajectory import Trajectory

__all__ = ("AGENT_NAME", "StepGapState", "build_stepgap_graph", "search_r1_config", "trace_of")

AGENT_NAME = "stepgap"
Context = Runtime[RunContext]


class StepGapState(TypedDict, total=False):
    question: str
    id: str
    golds: list[str]
    gold: dict[str, Any]
    run: SearchR1Output
    rollout: Trajectory
    trace: Trace | None
    checks: TraceCheck
    output: StepGapOutput
    trajectory: Trajectory


def search_r1_config(config: StepGapConfig) -> SearchR1Config:
    """The generator's settings from StepGap's config (the fields both configs name)."""
    return settings_for(SearchR1Config, config)


def trace_of(
    question: str,
    records: Sequence[TraceStepRecord],
    *,
    token_spans: Sequence[tuple[int, int] | None] = (),
    run_id: str | None = None,
    golds: Sequence[str] = (),
) -> Trace | None:
    """The checker's view of a run's steps (with their exact token spans when given); ``None`` for a run that
    took no step (it failed before its first turn)."""
    if not records:
        return None
    spans = list(token_spans) + [None] * (len(records) - len(token_spans))
    steps = [TraceStep(**record.model_dump(), token_span=span) for record, span in zip(records, spans, strict=False)]
    return Trace(id=run_id, question=question, steps=steps, golds=list(golds))


class _Nodes:
    def __init__(
        self, rollout: Any, checker: Any, policy: Generator | None, judge: Generator | None, reward: AgentReward
    ) -> None:
        self.rollout_graph, self.checker_graph, self.reward = rollout, checker, reward
        self.policy, self.judge = policy, judge

    async def rollout(self, state: StepGapInputs, runtime: Context) -> dict[str, Any]:
        inputs = {key: state[key] for key in ("question", "id", "golds") if key in state}  # type: ignore[literal-required]
        result = await self.rollout_graph.ainvoke(inputs, context=runtime.context)
        return {"run": result["output"], "rollout": result["trajectory"]}

    async def check(self, state: StepGapState, runtime: Context) -> dict[str, Any]:
        run, rollout = state["run"], state["rollout"]
        trace = trace_of(
            run.question,
            run.steps,
            token_spans=[step.token_span for step in rollout.steps],
            run_id=state.get("id"),
            golds=state.get("golds") or (),
        )
        if trace is None:
            return {"trace": None}
        judge = self.judge or RunScope.resolve(runtime, self.policy).generator
        result = await self.checker_graph.ainvoke({"trace": trace}, context=RunContext(generator=judge))
        return {"trace": trace, "checks": result["checks"]}

    async def finish(self, state: StepGapState) -> dict[str, Any]:
        run, rollout, trace = state["run"], state["rollout"], state.get("trace")
        checks = state.get("checks") or TraceCheck(
            id=state.get("id"), question=run.question, steps=[], judge="none", nli=None
        )
        by_index = {c.index: c for c in checks.steps}
        steps = []
        for step in rollout.steps:
            check = by_index.get(step.index)
            payload = dict(step.payload)
            if check is not None:
                payload.update(
                    label=check.label,
                    repair=check.repair,
                    confidence=check.confidence,
                    pipeline_path=check.pipeline_path,
                    claim=check.claim,
                )
            steps.append(step.model_copy(update={"payload": payload}))
        output = StepGapOutput(
            question=run.question,
            answer=run.answer,
            em=run.em,
            n_searches=run.n_searches,
            format_ok=run.format_ok,
            trace=trace,
            checks=checks,
        )
        trajectory = rollout.model_copy(
            update={
                "id": str(state.get("id") or rollout.id or uuid.uuid4().hex),
                "agent": AGENT_NAME,
                "steps": steps,
                "output": output.model_dump(mode="json"),
                "metadata": {**rollout.metadata, "judge": checks.judge, "nli": checks.nli},
            }
        )
        gold = state.get("gold")
        if gold:
            score_trajectory(trajectory, self.reward, gold)
        return {"output": output, "trajectory": trajectory}


def build_stepgap_graph(
    generator: Generator | None,
    *,
    config: StepGapConfig | None = None,
    sampling: SamplingParams | None = None,
    search: SearchTool | None = None,
    nli: Any | None = None,
    judge: Generator | None = None,
    reward: AgentReward | None = None,
) -> Any:
    """The StepGap rollout graph: Search-R1 over ``search`` with ``generator`` as the policy, checked step by step.

    Args:
        generator: the policy, or ``None`` when every run passes one in its ``RunContext``.
        config: generator limits and checker options.
        sampling: the policy's temperature / top-p / seed (the judge decodes greedily).
        search: the search tool (required).
        nli: the NLI engine for stages D–E (default: the judge's logprob fallback).
        judge: the LLM for stages A–C (default: the run's generator).
        reward: the process reward for runs given ``gold`` (default: typed+shape, λ = 1).

    Returns:
        A compiled graph: ``ainvoke`` takes :class:`StepGapInputs` and returns :class:`StepGapResult`.
    """
    config = config or StepGapConfig()
    rollout = build_search_r1_graph(generator, search, search_r1_config(config), sampling=sampling, agent=AGENT_NAME)
    checker = build_checker_graph(None, nli=nli, config=config)
    nodes = _Nodes(rollout, checker, generator, judge, reward or REWARD)
    graph = StateGraph(StepGapState, context_schema=RunContext, input_schema=StepGapInputs, output_schema=StepGapResult)
    graph.add_node("rollout", nodes.rollout)
    graph.add_node("check", nodes.check)
    graph.add_node("finish", nodes.finish)
    graph.add_edge(START, "rollout")
    graph.add_edge("rollout", "check")
    graph.add_edge("check", "finish")
    graph.add_edge("finish", END)
    return graph.compile(name=AGENT_NAME)
