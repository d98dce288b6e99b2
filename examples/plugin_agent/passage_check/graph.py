"""The graph: ``ask`` (the prompt) → ``answer`` (one policy turn) → ``finish`` (verdict, trajectory, reward).

Per-run settings (a generator supplied per run, sampling, a token budget, strict token mode for training)
arrive through LangGraph's run context as :class:`~evigraph.graphs.context.RunContext`; the generic end of
the run is :func:`~evigraph.graphs.assembly.assemble_trajectory`.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.graphs.assembly import assemble_trajectory
from evigraph.graphs.context import RunContext, RunScope, TurnsState, timing_of
from evigraph.trajectory import Segment, Step
from passage_check.prompts import prompt
from passage_check.protocol import PROTOCOL
from passage_check.rewards import REWARD
from passage_check.schemas import PassageCheckConfig, PassageCheckInputs, PassageCheckResult
from passage_check.verdict import read_verdict

__all__ = ("build_passage_check_graph",)


class State(PassageCheckInputs, TurnsState, total=False):
    """The run's inputs and its turns."""


def build_passage_check_graph(
    generator: Generator | None, *, config: PassageCheckConfig | None = None, sampling: SamplingParams | None = None
) -> Any:
    """The compiled graph (``generator`` may be ``None`` when each run passes one in its ``RunContext``)."""
    config = config or PassageCheckConfig()
    template = (sampling or SamplingParams()).model_copy(
        update={"stop": PROTOCOL.stop_strings("answer"), "max_new_tokens": config.max_new_tokens}
    )

    async def ask(state: State) -> dict[str, Any]:
        question = Segment(origin="prompt", role="user", text=prompt(state["claim"], state["passage"]))
        return {"transcript": (question,), "started_at": time.time()}

    async def answer(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        transcript = state["transcript"]
        result = await scope.single_turn(transcript, scope.params(template))  # capped by the run's budget
        return result.update(state)

    async def finish(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        transcript = state["transcript"]
        turns = [i for i, s in enumerate(transcript) if s.origin == "policy"]
        output = read_verdict("".join(transcript[i].text for i in turns), lenient=config.lenient)
        trajectory = assemble_trajectory(
            agent="passage-check",
            run_id=state.get("id") or uuid.uuid4().hex,
            inputs={"claim": state["claim"], "passage": state["passage"]},
            transcript=transcript,
            steps=[Step(index=k, kind="answer", text=transcript[i].text, segment_index=i) for k, i in enumerate(turns)],
            output=output,
            scope=scope,
            timing=timing_of(state),
            error=state.get("error"),
            reward=REWARD,
            gold=state.get("gold"),
        )
        return {"output": output, "trajectory": trajectory}

    graph = StateGraph(
        State, context_schema=RunContext, input_schema=PassageCheckInputs, output_schema=PassageCheckResult
    )
    graph.add_node("ask", ask)
    graph.add_node("answer", answer)
    graph.add_node("finish", finish)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "answer")
    graph.add_edge("answer", "finish")
    graph.add_edge("finish", END)
    return graph.compile(name="passage-check")
