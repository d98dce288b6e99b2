"""The graph, on evigraph's one-turn kit (:mod:`evigraph.graphs.kit.one_turn`): ``render_prompt`` → ``generate`` (one
policy turn) → ``parse`` (the verdict) → ``finish`` (trajectory, reward).

The kit supplies the run's generator, sampling and token budget (LangGraph's run context, a
:class:`~evigraph.graphs.kit.context.RunContext`), backend failures as data, timing and the assembly; the agent says
only what is its own: the prompt, the stop string, how the reply is read and what the trajectory records.
"""

from __future__ import annotations

from typing import Any

from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.kit.context import RunScope
from evigraph.graphs.kit.one_turn import OneTurnAgent, OneTurnState, build_one_turn_graph
from evigraph.trajectory import Segment
from passage_check.prompts import prompt
from passage_check.protocol import PROTOCOL
from passage_check.schemas import PassageCheckConfig, PassageCheckInputs, PassageCheckResult
from passage_check.scoring import REWARD
from passage_check.verdict import read_verdict

__all__ = ("ANSWER_GUIDE", "build_passage_check_graph")

ANSWER_GUIDE = Guide.pattern("<answer>(yes|no)</answer>")
"""Weak-model mode: the turn can only be the one answer block, so what the model decides is yes or no."""


class State(PassageCheckInputs, OneTurnState, total=False):
    """The run's inputs and its turn."""


def build_passage_check_graph(
    generator: Generator | None, *, config: PassageCheckConfig | None = None, sampling: SamplingParams | None = None
) -> Any:
    """The compiled graph (``generator`` may be ``None`` when each run passes one in its ``RunContext``)."""
    config = config or PassageCheckConfig()

    def protocol(_state: State, scope: RunScope) -> dict[str, Any]:
        fields: dict[str, Any] = {"stop": PROTOCOL.stop_strings("answer")}
        # Only where the backend enforces regex guides, and never in a strict (training) run.
        if scope.guided(config.constrained, guide_kind="regex"):
            fields["guide"] = ANSWER_GUIDE
        return fields

    agent = OneTurnAgent(
        name="passage-check",
        state_schema=State,
        input_schema=PassageCheckInputs,
        output_schema=PassageCheckResult,
        max_new_tokens=config.max_new_tokens,
        prompt=lambda state, _scope: {
            "transcript": (Segment(origin="prompt", role="user", text=prompt(state["claim"], state["passage"])),)
        },
        protocol=protocol,
        read=lambda _state, last, _scope: read_verdict(last.text if last else "", lenient=config.lenient),
        inputs=lambda state: {"claim": state["claim"], "passage": state["passage"]},
        reward=REWARD,
    )
    return build_one_turn_graph(agent, generator, sampling=sampling)
