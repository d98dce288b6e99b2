"""RLSeek's graph (specs/rlseek.md §2.4) on the one-turn kit: ``render_prompt`` → ``generate`` → ``parse`` →
``finish`` (:mod:`evigraph.graphs.kit.one_turn`).

One policy turn writes ``## Step N`` blocks that quote the source, then the final list; the deterministic
``parse`` node reads it (P1-P5), checks every quote against the source and locates every listed
span in the response. ``finish`` builds the trajectory: each step is a ``verify`` step with its character span
inside the turn (exact token spans on token backends, which the trainer rewards), and -- for a run given its
gold spans -- the reward.

Beyond the paper, ``requote`` sends the model back once (``max_requotes``) when some quote is not in the source:
inference only, never in a strict (training) run, and a re-quoted run carries no reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.agents.rlseek.decoding import detection_guide
from evigraph.agents.rlseek.prompts import detection_prompt, render, requote_note
from evigraph.agents.rlseek.schemas import RLSeekConfig, RLSeekInputs, RLSeekOutput, RLSeekResult
from evigraph.agents.rlseek.scoring import REWARD
from evigraph.agents.rlseek.verdict import detect
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.kit.context import RunScope
from evigraph.graphs.kit.one_turn import OneTurnAgent, OneTurnState, build_one_turn_graph
from evigraph.trajectory import Segment, Step

__all__ = ("build_rlseek_graph",)


class State(RLSeekInputs, OneTurnState, total=False):
    shown_source: str
    shown_response: str
    output: RLSeekOutput


def build_rlseek_graph(
    generator: Generator | None, *, config: RLSeekConfig | None = None, sampling: SamplingParams | None = None
) -> Any:
    """The compiled detector (``generator`` may be ``None`` when each run passes one in its ``RunContext``)."""
    config = config or RLSeekConfig()

    def prompt(state: State, scope: RunScope) -> dict[str, Any]:
        texts = render(state["task"], state["source"], state["response"], state.get("question"))
        show_example = config.demonstration if config.demonstration is not None else scope.guided(config.constrained)
        text = detection_prompt(state["task"], texts, variant=config.variant, demonstration=show_example)
        return {
            "shown_source": texts.source,
            "shown_response": texts.response,
            "transcript": (Segment(origin="prompt", role="user", text=text),),
        }

    def protocol(state: State, scope: RunScope) -> dict[str, Any]:
        # The claim variant ends at its closing answer tag; a ```json block has no unique closing string.
        fields: dict[str, Any] = {"stop": ("</answer>",) if state["task"] == "claim" else ()}
        if scope.guided(config.constrained):
            guide = detection_guide(state["task"], source=state["shown_source"], response=state["shown_response"])
            fields["guide"] = Guide.pattern(guide)
        return fields

    def read(state: State, last: Segment | None, _scope: RunScope) -> RLSeekOutput:
        output = detect(
            last.text if last else "",
            task=state["task"],
            source=state["shown_source"],
            response=state["shown_response"],
            truncated=last is not None and last.finish_reason == "length",
        )
        return output.model_copy(update={"requotes": state["repairs"]})

    def requote(_state: State, output: RLSeekOutput, _scope: RunScope) -> str | None:
        missing = [q.text for q in output.quotes if not q.found]
        return requote_note(missing) if missing else None

    agent = OneTurnAgent(
        name="rlseek",
        state_schema=State,
        input_schema=RLSeekInputs,
        output_schema=RLSeekResult,
        max_new_tokens=config.max_new_tokens,
        prompt=prompt,
        protocol=protocol,
        read=read,
        repair=requote,
        max_repairs=config.max_requotes if config.requote else 0,
        steps=_steps,
        inputs=lambda state: {k: state.get(k) for k in ("task", "source", "question", "response")},
        reward=REWARD,
        # A re-quoted run is not the paper's policy: it carries no reward.
        gold=lambda state, output: state.get("gold") if output.requotes == 0 else None,
    )
    return build_one_turn_graph(agent, generator, sampling=sampling)


def _steps(transcript: Sequence[Segment], output: RLSeekOutput) -> list[Step]:
    """The last turn's ``## Step N`` blocks as ``verify`` steps (character spans inside the turn), then the
    final answer as an ``answer`` step."""
    policy = [i for i, s in enumerate(transcript) if s.origin == "policy"]
    if not policy:
        return []
    index = policy[-1]
    text = transcript[index].text
    steps = [
        Step(
            index=step.index,
            kind="verify",
            text=text[step.start : step.end],
            segment_index=index,
            char_span=(step.start, step.end),
            payload={"quotes": [output.quotes[q].model_dump() for q in step.quotes], "problems": list(step.problems)},
        )
        for step in output.steps
    ]
    answer_start = max((s.end for s in output.steps), default=0)
    if answer_start < len(text):
        steps.append(
            Step(
                index=len(steps),
                kind="answer",
                text=text[answer_start:],
                segment_index=index,
                char_span=(answer_start, len(text)),
            )
        )
    return steps
