"""RAG-Zeval's evaluator graph (specs/rag-zeval.md §2.3) on the one-turn kit: ``render_prompt`` → ``generate`` →
``parse`` → ``finish`` (:mod:`evigraph.graphs.kit.one_turn`).

One policy turn writes a JSON list: per candidate its atomic claims, each supported or not, with verbatim
evidence (decoded under the reply's JSON schema in weak-model mode, never in strict runs).
``parse`` reads it strictly; at inference only (not in strict, training runs) the §2.2 regex
fallback scores a reply that is not JSON, and says so in ``parse_mode``. The reward never uses that fallback:
it re-reads the reply strictly (:mod:`evigraph.agents.rag_zeval.scoring`). The reading turns claim counts into
``S(y)`` and a ranking; ``finish`` builds the trajectory (one ``answer`` step) and, for a run given its gold
order, the reward.

Candidate letters are shuffled per run with ``config.shuffle_seed`` and the run's id (or, without one, its
question and candidates, so a rerun shows the same order); the letters are stored in the trajectory's inputs,
so the reward and any audit read the reply against the same assignment.
"""

from __future__ import annotations

from typing import Any

from evigraph.agents.rag_zeval.parsing import read_evaluation
from evigraph.agents.rag_zeval.prompts import assign_letters, content_key, evaluator_transcript, reply_schema, show
from evigraph.agents.rag_zeval.schemas import RagZevalConfig, RagZevalInputs, RagZevalOutput, RagZevalResult
from evigraph.agents.rag_zeval.scoring import REWARD
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.kit.context import RunScope
from evigraph.graphs.kit.one_turn import OneTurnAgent, OneTurnState, build_one_turn_graph
from evigraph.trajectory import Segment

__all__ = ("build_rag_zeval_graph",)


class State(RagZevalInputs, OneTurnState, total=False):
    letters: tuple[str, ...]
    output: RagZevalOutput


def build_rag_zeval_graph(
    generator: Generator | None, *, config: RagZevalConfig | None = None, sampling: SamplingParams | None = None
) -> Any:
    """The compiled evaluator (``generator`` may be ``None`` when each run passes one in its ``RunContext``)."""
    config = config or RagZevalConfig()

    def prompt(state: State, _scope: RunScope) -> dict[str, Any]:
        candidates = state["candidates"]
        key = state.get("id") or content_key(state["question"], candidates)
        # One candidate is a host checking its one answer (evigraph.embed): nothing to shuffle or rank.
        letters = (
            ("A",)
            if len(candidates) == 1
            else assign_letters(len(candidates), seed=config.shuffle_seed, key=key, shuffle=config.shuffle)
        )
        shown = show(state["question"], state["reference"], candidates)
        kind = state.get("kind", "faithfulness")
        return {"letters": letters, "transcript": evaluator_transcript(shown, letters, kind=kind)}

    def protocol(state: State, scope: RunScope) -> dict[str, Any]:
        if not scope.guided(config.guided, guide_kind="json"):
            return {}
        shown = show(state["question"], state["reference"], state["candidates"])
        return {"guide": Guide.json(reply_schema(shown, state["letters"]))}

    def read(state: State, last: Segment | None, scope: RunScope) -> RagZevalOutput:
        return read_evaluation(
            last.reply if last else "",
            state["letters"],
            kind=state.get("kind", "faithfulness"),
            lenient=config.lenient and not scope.strict,
            truncated=last is not None and last.finish_reason == "length",
        )

    def inputs(state: State) -> dict[str, Any]:
        return {
            "question": state["question"],
            "reference": state["reference"],
            "candidates": list(state["candidates"]),
            "kind": state.get("kind", "faithfulness"),
            "letters": list(state["letters"]),
        }

    agent = OneTurnAgent(
        name="rag-zeval",
        state_schema=State,
        input_schema=RagZevalInputs,
        output_schema=RagZevalResult,
        max_new_tokens=config.max_new_tokens,
        prompt=prompt,
        protocol=protocol,
        read=read,
        inputs=inputs,
        reward=REWARD,
    )
    return build_one_turn_graph(agent, generator, sampling=sampling)
