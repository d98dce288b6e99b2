"""RLSeek's graph (specs/rlseek.md §2.4): ``render_prompt`` → ``generate`` → ``parse_completion`` → ``finish``.

One policy turn writes ``## Step N`` blocks that quote the source, then the final list; the deterministic
``parse_completion`` node reads it (P1-P5), checks every quote against the source and locates every listed
span in the response. ``finish`` builds the trajectory: each step is a ``verify`` step with its character span
inside the turn (exact token spans on token backends, which the trainer rewards), and -- for a run given its
gold spans -- the reward.

Beyond the paper, ``requote`` sends the model back once (``max_requotes``) when some quote is not in the source:
inference only, never in a strict (training) run, and a re-quoted run carries no reward.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from evigraph.agents.rlseek.detection import detect
from evigraph.agents.rlseek.prompts import detection_guide, detection_prompt, render, requote_note
from evigraph.agents.rlseek.schemas import RLSeekConfig, RLSeekInputs, RLSeekOutput, RLSeekResult
from evigraph.agents.rlseek.scoring import REWARD
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.assembly import assemble_trajectory
from evigraph.graphs.context import RunContext, RunScope, TurnsState, timing_of
from evigraph.trajectory import Segment, Step, last_policy_turn

__all__ = ("build_rlseek_graph",)


class State(RLSeekInputs, TurnsState, total=False):
    shown_source: str
    shown_response: str
    output: RLSeekOutput
    requotes: int


def build_rlseek_graph(
    generator: Generator | None, *, config: RLSeekConfig | None = None, sampling: SamplingParams | None = None
) -> Any:
    """The compiled detector (``generator`` may be ``None`` when each run passes one in its ``RunContext``)."""
    config = config or RLSeekConfig()
    template = (sampling or SamplingParams()).model_copy(update={"max_new_tokens": config.max_new_tokens})

    def guided(scope: RunScope) -> bool:
        return scope.generator.constrained if config.constrained is None else config.constrained

    async def render_prompt(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        texts = render(state["task"], state["source"], state["response"], state.get("question"))
        show_example = config.demonstration if config.demonstration is not None else guided(scope)
        text = detection_prompt(state["task"], texts, variant=config.variant, demonstration=show_example)
        return {
            "shown_source": texts.source,
            "shown_response": texts.response,
            "transcript": (Segment(origin="prompt", role="user", text=text),),
            "requotes": 0,
            "started_at": time.time(),
        }

    async def generate(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        # The claim variant ends at its closing answer tag; a ```json block has no unique closing string.
        protocol: dict[str, Any] = {"stop": ("</answer>",) if state["task"] == "claim" else ()}
        if guided(scope):
            guide = detection_guide(state["task"], source=state["shown_source"], response=state["shown_response"])
            protocol["guide"] = Guide.pattern(guide)
        result = await scope.single_turn(state["transcript"], scope.params(template, **protocol))
        return result.update(state)

    async def parse_completion(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        last = last_policy_turn(state["transcript"])
        output = detect(
            last.text if last else "",
            task=state["task"],
            source=state["shown_source"],
            response=state["shown_response"],
            truncated=last is not None and last.finish_reason == "length",
        )
        missing = [q.text for q in output.quotes if not q.found]
        scope = RunScope.resolve(runtime, generator)
        if state.get("error") is None and missing and _may_requote(state, config, scope):
            note = Segment(origin="environment", text=requote_note(missing))
            return {"transcript": (*state["transcript"], note), "requotes": state["requotes"] + 1}
        return {"output": output.model_copy(update={"requotes": state["requotes"]})}

    def after_parse(state: State) -> Literal["generate", "finish"]:
        return "finish" if "output" in state else "generate"

    async def finish(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        output = state["output"]
        transcript = state["transcript"]
        trajectory = assemble_trajectory(
            agent="rlseek",
            run_id=state.get("id") or uuid.uuid4().hex,
            inputs={k: state.get(k) for k in ("task", "source", "question", "response")},
            transcript=transcript,
            steps=_steps(transcript, output),
            output=output,
            scope=scope,
            timing=timing_of(state),
            error=state.get("error"),
            reward=REWARD,
            gold=state.get("gold") if output.requotes == 0 else None,  # a re-quoted run is not the paper's policy
        )
        return {"output": output, "trajectory": trajectory}

    graph = StateGraph(State, context_schema=RunContext, input_schema=RLSeekInputs, output_schema=RLSeekResult)
    graph.add_node("render_prompt", render_prompt)
    graph.add_node("generate", generate)
    graph.add_node("parse_completion", parse_completion)
    graph.add_node("finish", finish)
    graph.add_edge(START, "render_prompt")
    graph.add_edge("render_prompt", "generate")
    graph.add_edge("generate", "parse_completion")
    graph.add_conditional_edges("parse_completion", after_parse)
    graph.add_edge("finish", END)
    return graph.compile(name="rlseek")


def _may_requote(state: State, config: RLSeekConfig, scope: RunScope) -> bool:
    """Re-quote only at inference, within the budget of re-quote turns."""
    return config.requote and not scope.strict and state["requotes"] < config.max_requotes


def _steps(transcript: tuple[Segment, ...], output: RLSeekOutput) -> list[Step]:
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
