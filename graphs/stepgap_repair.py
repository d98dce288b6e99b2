"""StepGap's repair loop (inference time, beyond the paper): the checker reviews each step as the Search-R1
generator takes it and routes the generator by the gap it finds.

The shared search loop with a reviewer (:mod:`evigraph.graphs.kit.search_loop`): after every search and every
answer, the new step is checked (earlier steps' checks are reused, not re-judged) and a gap adds a note to the
environment turn: CC → retract ("Actually, ..."), IE → re-search with a reformulated query, MB → a bridging
search; an answer with a gap is reopened. At most ``repair_budget`` notes per run; each may cost a search and a
turn, so the loop allows ``repair_budget`` more of both than a plain run. Usage::

    graph = build_repair_graph(policy, search=search, nli=nli, judge=judge)
    result = await graph.ainvoke({"question": q})
    result["output"].answer, result["output"].labels, result["output"].repairs
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from typing_extensions import TypedDict

from evigraph.agents.search_r1.protocol import SEARCH_R1_PROTOCOL
from evigraph.agents.stepgap.prompts import repair_note
from evigraph.agents.stepgap.schemas import StepCheck, StepGapConfig, StepGapOutput, TraceCheck
from evigraph.errors import ConfigError
from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.graphs.kit.context import RunContext, RunScope
from evigraph.graphs.kit.search_loop import Progress, Review, build_search_loop
from evigraph.graphs.search_r1 import SearchR1Policy, run_steps
from evigraph.graphs.stepgap import search_r1_config, trace_of
from evigraph.graphs.stepgap_checker import build_checker_graph
from evigraph.tools.search import SearchTool
from evigraph.trajectory import Step, Trajectory

__all__ = ("AGENT_NAME", "CheckerReviewer", "RepairPolicy", "build_repair_graph")

AGENT_NAME = "stepgap-repair"


class RepairInputs(TypedDict, total=False):
    question: str
    id: str
    golds: list[str]


class RepairResult(TypedDict):
    output: StepGapOutput
    trajectory: Trajectory


class RepairState(TypedDict, total=False):
    question: str
    id: str
    golds: list[str]
    progress: Progress
    output: StepGapOutput
    trajectory: Trajectory


class CheckerReviewer:
    """Checks the steps taken since the last review with the frozen checker; the newest step's gap, while the
    repair budget lasts, becomes the note."""

    def __init__(self, checker: Any, judge: Generator | None, budget: int) -> None:
        self.checker, self.judge, self.budget = checker, judge, budget

    async def review(self, run: Progress, state: Mapping[str, Any], scope: RunScope) -> Review:
        trace = trace_of(state["question"], run_steps(run))
        assert trace is not None  # a review follows a step
        judge = self.judge or scope.generator
        result = await self.checker.ainvoke(
            {"trace": trace, "checked": list(run.reviews)}, context=RunContext(generator=judge)
        )
        new: list[StepCheck] = result["checks"].steps[len(run.reviews) :]
        newest = new[-1] if new else None
        note = None
        if newest is not None and newest.label is not None and run.repairs < self.budget:
            note = repair_note(newest.label, newest.claim, lambda text: SEARCH_R1_PROTOCOL.escape(text).text)
        return Review(records=tuple(new), note=note)


class RepairPolicy(SearchR1Policy):
    """Search-R1's policy whose output carries the reviews (labels, repair actions, paths) of the run."""

    def __init__(self, config: StepGapConfig, *, judge_name: str) -> None:
        base = search_r1_config(config)
        budget = config.repair_budget
        super().__init__(
            base.model_copy(update={"max_searches": base.max_searches + budget}),
            agent=AGENT_NAME,
        )
        # Every repair may cost a turn beyond the searches (a reopened answer).
        self.limits = replace(self.limits, turns=base.turns + 2 * budget)
        self.judge_name = judge_name

    def conclude(self, run: Progress, state: Mapping[str, Any], scope: RunScope) -> StepGapOutput:
        searched = super().conclude(run, state, scope)
        checks: list[StepCheck] = list(run.reviews)
        engines = sorted({c.nli_engine for c in checks if c.nli_engine})
        return StepGapOutput(
            question=searched.question,
            answer=searched.answer,
            em=searched.em,
            n_searches=searched.n_searches,
            format_ok=searched.format_ok,
            trace=trace_of(state["question"], run_steps(run)),
            checks=TraceCheck(
                question=searched.question, steps=checks, judge=self.judge_name, nli=", ".join(engines) or None
            ),
            repairs=run.repairs,
        )

    def steps(self, run: Progress) -> list[Step]:
        checks = {c.index: c for c in run.reviews}
        steps = []
        for step in super().steps(run):
            check = checks.get(step.index)
            if check is not None:
                step.payload.update(label=check.label, repair=check.repair, pipeline_path=check.pipeline_path)
            steps.append(step)
        return steps


def build_repair_graph(
    generator: Generator | None,
    *,
    search: SearchTool | None = None,
    nli: Any | None = None,
    judge: Generator | None = None,
    config: StepGapConfig | None = None,
    sampling: SamplingParams | None = None,
) -> Any:
    """The repair loop over ``generator`` (the policy) and ``search``, reviewed by the checker (``judge`` for
    stages A–C, default the policy's generator; ``nli`` for D–E, default the judge's logprob fallback).

    Returns:
        A compiled graph: ``ainvoke`` takes ``{"question", "id"?, "golds"?}`` and returns ``output``
        (:class:`StepGapOutput`, with ``repairs``) and ``trajectory``.
    """
    if search is None:
        raise ConfigError("the repair loop needs a search tool (--corpus or --retriever-url)")
    config = config or StepGapConfig()
    checker = build_checker_graph(None, nli=nli, config=config)
    judge_name = f"{judge.name} ({config.judge_mode})" if judge is not None else f"the policy ({config.judge_mode})"
    return build_search_loop(
        RepairPolicy(config, judge_name=judge_name),
        generator,
        search,
        state_schema=RepairState,
        input_schema=RepairInputs,
        output_schema=RepairResult,
        name=AGENT_NAME,
        sampling=sampling,
        reviewer=CheckerReviewer(checker, judge, config.repair_budget),
    )
