"""RAG-Zeval's evaluator graph (specs/rag-zeval.md §2.3): ``render_prompt`` → ``generate`` → ``parse_trajectory``
→ ``score_candidates``.

One policy turn writes a JSON list: per candidate its atomic claims, each supported or not, with verbatim
evidence (decoded under the reply's JSON schema in weak-model mode, never in strict runs).
``parse_trajectory`` reads it strictly; at inference only (not in strict, training runs) the §2.2 regex
fallback scores a reply that is not JSON, and says so in ``parse_mode``. The reward never uses that fallback:
it re-reads the reply strictly (:mod:`evigraph.agents.rag_zeval.scoring`). ``score_candidates`` turns claim
counts into ``S(y)`` and a ranking and builds the trajectory (one ``answer`` step) and, for a run given its gold
order, the reward.

Candidate letters are shuffled per run with ``config.shuffle_seed`` and the run's id (or, without one, its
question and candidates, so a rerun shows the same order); the letters are stored in the trajectory's inputs,
so the reward and any audit read the reply against the same assignment.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from evigraph.agents.rag_zeval.parsing import read_evaluation
from evigraph.agents.rag_zeval.prompts import assign_letters, content_key, evaluator_transcript, reply_schema, show
from evigraph.agents.rag_zeval.schemas import RagZevalConfig, RagZevalInputs, RagZevalOutput, RagZevalResult
from evigraph.agents.rag_zeval.scoring import REWARD
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.assembly import answer_step, assemble_trajectory
from evigraph.graphs.context import RunContext, RunScope, TurnsState, timing_of
from evigraph.trajectory import last_policy_turn

__all__ = ("build_rag_zeval_graph",)


class State(RagZevalInputs, TurnsState, total=False):
    run_id: str
    letters: tuple[str, ...]
    output: RagZevalOutput


def build_rag_zeval_graph(
    generator: Generator | None, *, config: RagZevalConfig | None = None, sampling: SamplingParams | None = None
) -> Any:
    """The compiled evaluator (``generator`` may be ``None`` when each run passes one in its ``RunContext``)."""
    config = config or RagZevalConfig()
    template = (sampling or SamplingParams()).model_copy(update={"max_new_tokens": config.max_new_tokens})

    def guided(scope: RunScope) -> bool:
        wanted = scope.generator.constrained if config.guided is None else config.guided
        return wanted and not scope.strict and "json" in getattr(scope.generator, "supported_guides", ())

    async def render_prompt(state: State) -> dict[str, Any]:
        run_id = state.get("id") or uuid.uuid4().hex
        candidates = state["candidates"]
        key = state.get("id") or content_key(state["question"], candidates)
        letters = assign_letters(len(candidates), seed=config.shuffle_seed, key=key, shuffle=config.shuffle)
        shown = show(state["question"], state["reference"], candidates)
        return {
            "run_id": run_id,
            "letters": letters,
            "transcript": evaluator_transcript(shown, letters, kind=state.get("kind", "faithfulness")),
            "started_at": time.time(),
        }

    async def generate(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        if guided(scope):
            shown = show(state["question"], state["reference"], state["candidates"])
            protocol = {"guide": Guide.json(reply_schema(shown, state["letters"]))}
        else:
            protocol = {}
        result = await scope.single_turn(state["transcript"], scope.params(template, **protocol))
        return result.update(state)

    async def parse_trajectory(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        last = last_policy_turn(state["transcript"])
        lenient = config.lenient and not scope.strict
        output = read_evaluation(
            last.reply if last else "",
            state["letters"],
            kind=state.get("kind", "faithfulness"),
            lenient=lenient,
            truncated=last is not None and last.finish_reason == "length",
        )
        return {"output": output}

    async def score_candidates(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        trajectory = assemble_trajectory(
            agent="rag-zeval",
            run_id=state["run_id"],
            inputs={
                "question": state["question"],
                "reference": state["reference"],
                "candidates": list(state["candidates"]),
                "kind": state.get("kind", "faithfulness"),
                "letters": list(state["letters"]),
            },
            transcript=state["transcript"],
            steps=answer_step(state["transcript"]),
            output=state["output"],
            scope=scope,
            timing=timing_of(state),
            error=state.get("error"),
            reward=REWARD,
            gold=state.get("gold"),
        )
        return {"output": state["output"], "trajectory": trajectory}

    graph = StateGraph(State, context_schema=RunContext, input_schema=RagZevalInputs, output_schema=RagZevalResult)
    graph.add_node("render_prompt", render_prompt)
    graph.add_node("generate", generate)
    graph.add_node("parse_trajectory", parse_trajectory)
    graph.add_node("score_candidates", score_candidates)
    graph.add_edge(START, "render_prompt")
    graph.add_edge("render_prompt", "generate")
    graph.add_edge("generate", "parse_trajectory")
    graph.add_edge("parse_trajectory", "score_candidates")
    graph.add_edge("score_candidates", END)
    return graph.compile(name="rag-zeval")
