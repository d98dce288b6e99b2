"""SEVA's verify graph (specs/seva.md §2.3): ``render_prompt`` → ``generate`` → ``parse_and_validate`` →
``finish``.

One policy turn writes the JSON verdict (decoded under its JSON schema where the backend can and the run is not
strict); ``parse_and_validate`` reads it under §2.2 and locates every quoted source span in the source. Beyond
the paper, an unreadable reply gets one repair turn -- at inference only: never in a strict (training) run or
a run given its gold label, whose reward must score the first reply. ``finish`` builds the trajectory (one
``answer`` step over the verdict turn) and, for a run given its gold label, the reward.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from evigraph.agents.seva.prompts import repair_note, show, verifier_transcript
from evigraph.agents.seva.schemas import SevaConfig, SevaInputs, SevaOutput, SevaResult, Verdict
from evigraph.agents.seva.scoring import REWARD
from evigraph.agents.seva.verdict import read_verdict
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.assembly import answer_step, assemble_trajectory
from evigraph.graphs.context import RunContext, RunScope, TurnsState, timing_of
from evigraph.trajectory import Segment, last_policy_turn

__all__ = ("build_seva_graph",)

_VERDICT_GUIDE = Guide.json(Verdict)


class State(SevaInputs, TurnsState, total=False):
    shown_claim: str
    shown_source: str
    output: SevaOutput
    repairs: int


def build_seva_graph(
    generator: Generator | None, *, config: SevaConfig | None = None, sampling: SamplingParams | None = None
) -> Any:
    """The compiled verifier (``generator`` may be ``None`` when each run passes one in its ``RunContext``)."""
    config = config or SevaConfig()
    template = (sampling or SamplingParams()).model_copy(update={"max_new_tokens": config.max_new_tokens})

    def guided(scope: RunScope) -> bool:
        wanted = scope.generator.constrained if config.guided is None else config.guided
        return wanted and not scope.strict and "json" in getattr(scope.generator, "supported_guides", ())

    async def render_prompt(state: State) -> dict[str, Any]:
        shown = show(state["claim"], state["source"])
        return {
            "shown_claim": shown.claim,
            "shown_source": shown.source,
            "transcript": verifier_transcript(shown),
            "repairs": 0,
            "started_at": time.time(),
        }

    async def generate(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        protocol = {"guide": _VERDICT_GUIDE} if guided(scope) else {}
        result = await scope.single_turn(state["transcript"], scope.params(template, **protocol))
        return result.update(state)

    async def parse_and_validate(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        last = last_policy_turn(state["transcript"])
        output = read_verdict(
            last.text if last else "",
            source=state["shown_source"],
            truncated=last is not None and last.finish_reason == "length",
            repaired=state["repairs"] > 0,
        )
        scope = RunScope.resolve(runtime, generator)
        may_repair = config.repair and not scope.strict and "gold" not in state and state["repairs"] < 1
        if last is not None and state.get("error") is None and not output.parse_ok and may_repair:
            note = Segment(origin="environment", text=repair_note(output.parse_error or "unreadable"))
            return {"transcript": (*state["transcript"], note), "repairs": state["repairs"] + 1}
        return {"output": output}

    def after_parse(state: State) -> Literal["generate", "finish"]:
        return "finish" if "output" in state else "generate"

    async def finish(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        output = state["output"]
        trajectory = assemble_trajectory(
            agent="seva",
            run_id=state.get("id") or uuid.uuid4().hex,
            inputs={"claim": state["claim"], "source": state["source"]},
            transcript=state["transcript"],
            steps=answer_step(state["transcript"]),
            output=output,
            scope=scope,
            timing=timing_of(state),
            error=state.get("error"),
            reward=REWARD,
            gold=state.get("gold"),
        )
        return {"output": output, "trajectory": trajectory}

    graph = StateGraph(State, context_schema=RunContext, input_schema=SevaInputs, output_schema=SevaResult)
    graph.add_node("render_prompt", render_prompt)
    graph.add_node("generate", generate)
    graph.add_node("parse_and_validate", parse_and_validate)
    graph.add_node("finish", finish)
    graph.add_edge(START, "render_prompt")
    graph.add_edge("render_prompt", "generate")
    graph.add_edge("generate", "parse_and_validate")
    graph.add_conditional_edges("parse_and_validate", after_parse)
    graph.add_edge("finish", END)
    return graph.compile(name="seva")
