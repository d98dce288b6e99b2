"""SEVA's verify graph (specs/seva.md §2.3) on the one-turn kit: ``render_prompt`` → ``generate`` → ``parse`` →
``finish`` (:mod:`evigraph.graphs.kit.one_turn`).

One policy turn writes the JSON verdict (decoded under its JSON schema where the backend can and the run is not
strict); ``parse`` reads it under §2.2 and locates every quoted source span in the source. Beyond the paper, an
unreadable reply gets one repair turn -- at inference only: never in a strict (training) run or a run given its
gold label, whose reward must score the first reply. ``finish`` builds the trajectory (one ``answer`` step over
the verdict turn) and, for a run given its gold label, the reward.
"""

from __future__ import annotations

from typing import Any

from evigraph.agents.seva.decoding import verdict_schema
from evigraph.agents.seva.prompts import Shown, repair_note, show, verifier_transcript
from evigraph.agents.seva.schemas import SevaConfig, SevaInputs, SevaOutput, SevaResult
from evigraph.agents.seva.scoring import REWARD
from evigraph.agents.seva.verdict import read_verdict
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.kit.context import RunScope
from evigraph.graphs.kit.one_turn import OneTurnAgent, OneTurnState, build_one_turn_graph
from evigraph.trajectory import Segment

__all__ = ("build_seva_graph",)


class State(SevaInputs, OneTurnState, total=False):
    shown_claim: str
    shown_source: str
    output: SevaOutput


def build_seva_graph(
    generator: Generator | None, *, config: SevaConfig | None = None, sampling: SamplingParams | None = None
) -> Any:
    """The compiled verifier (``generator`` may be ``None`` when each run passes one in its ``RunContext``)."""
    config = config or SevaConfig()

    def prompt(state: State, _scope: RunScope) -> dict[str, Any]:
        shown = show(state["claim"], state["source"])
        return {"shown_claim": shown.claim, "shown_source": shown.source, "transcript": verifier_transcript(shown)}

    def protocol(state: State, scope: RunScope) -> dict[str, Any]:
        if not scope.guided(config.guided, guide_kind="json"):
            return {}
        return {"guide": Guide.json(verdict_schema(Shown(state["shown_claim"], state["shown_source"])))}

    def read(state: State, last: Segment | None, _scope: RunScope) -> SevaOutput:
        return read_verdict(
            last.text if last else "",
            source=state["shown_source"],
            truncated=last is not None and last.finish_reason == "length",
            repaired=state["repairs"] > 0,
        )

    def repair(state: State, output: SevaOutput, _scope: RunScope) -> str | None:
        if output.parse_ok or "gold" in state:  # a scored run keeps its first reply
            return None
        return repair_note(output.parse_error or "unreadable")

    agent = OneTurnAgent(
        name="seva",
        state_schema=State,
        input_schema=SevaInputs,
        output_schema=SevaResult,
        max_new_tokens=config.max_new_tokens,
        prompt=prompt,
        protocol=protocol,
        read=read,
        repair=repair,
        max_repairs=1 if config.repair else 0,
        inputs=lambda state: {"claim": state["claim"], "source": state["source"]},
        reward=REWARD,
    )
    return build_one_turn_graph(agent, generator, sampling=sampling)
