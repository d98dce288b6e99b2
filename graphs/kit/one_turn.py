"""The graph of every agent whose answer is one policy turn: ``render_prompt`` → ``generate`` → ``parse`` →
``finish``, with an optional repair turn (``parse`` → ``generate`` again).

An agent describes itself as a :class:`OneTurnAgent` -- its prompt, the turn's protocol fields (stop strings, a
guide), how it reads the reply, when a reply earns a repair note, its steps, the inputs its trajectory records
and its reward -- and :func:`build_one_turn_graph` supplies the rest the same way for all of them: the run's
generator, sampling and token budget (:class:`~evigraph.graphs.kit.context.RunScope`), the budget-capped turn, backend
failures as data, timing, and the assembly (exact token ids, step spans, the reward when a gold answer is given).
RLSeek, SEVA and RAG-Zeval are three such agents; so is the plug-in example.

Repair turns happen at inference only: never in a strict (training) run, never after a failed turn, and at most
``max_repairs`` times per run. Everything per run lives in the graph state, so one compiled graph serves
concurrent runs and survives a checkpointer.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel

from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.graphs.kit.assembly import answer_step, assemble_trajectory
from evigraph.graphs.kit.context import RunContext, RunScope, TurnsState, timing_of
from evigraph.rewards import AgentReward
from evigraph.trajectory import Segment, Step, last_policy_turn

__all__ = ("OneTurnAgent", "OneTurnState", "build_one_turn_graph")

Output = TypeVar("Output", bound=BaseModel)
State = Any  # the agent's own state schema: its inputs and extra keys mixed with OneTurnState


class OneTurnState(TurnsState, total=False):
    """The keys the builder keeps (mix into the agent's state schema with its inputs, which hold ``id`` and
    ``gold``)."""

    run_id: str
    repairs: int
    output: Any


@dataclass(frozen=True)
class OneTurnAgent(Generic[Output]):
    """What a one-turn agent supplies to :func:`build_one_turn_graph` (plain functions of the state; the state is
    the agent's schema, so its hooks read their own keys).

    Attributes:
        name: the trajectory's ``agent`` and the compiled graph's name.
        state_schema, input_schema, output_schema: the graph's schemas (the state mixes
            :class:`OneTurnState` into the inputs and adds the keys ``prompt`` returns).
        max_new_tokens: the turn's cap (the agent config's one source of it).
        prompt: ``(state, scope) → update`` with at least ``transcript``; may add keys the other hooks read
            (what the prompt showed).
        read: ``(state, last policy turn or None, scope) → output``: the agent's reading of the reply.
        inputs: ``state → dict``: what the trajectory records as the run's inputs.
        reward: the agent's reward, applied when the run has a gold answer.
        protocol: ``(state, scope) → SamplingParams fields`` of the turn (``stop``, ``guide``).
        repair: ``(state, output, scope) → note or None``: an environment note that sends the model back once
            more (inference only, see the module docstring).
        max_repairs: repair turns allowed per run.
        steps: ``(transcript, output) → steps`` (default: the last turn as one ``answer`` step).
        gold: ``(state, output) → gold or None``: the gold answer to score against (default: the state's).
    """

    name: str
    state_schema: type
    input_schema: type
    output_schema: type
    max_new_tokens: int
    prompt: Callable[[State, RunScope], dict[str, Any]]
    read: Callable[[State, Segment | None, RunScope], Output]
    inputs: Callable[[State], dict[str, Any]]
    reward: AgentReward
    protocol: Callable[[State, RunScope], Mapping[str, Any]] = lambda _state, _scope: {}
    repair: Callable[[State, Output, RunScope], str | None] | None = None
    max_repairs: int = 0
    steps: Callable[[Sequence[Segment], Output], list[Step]] = lambda transcript, _output: answer_step(transcript)
    gold: Callable[[State, Output], Mapping[str, Any] | None] = lambda state, _output: state.get("gold")


def build_one_turn_graph(
    agent: OneTurnAgent[Any], generator: Generator | None, *, sampling: SamplingParams | None = None
) -> Any:
    """The compiled graph of ``agent`` (``generator`` may be ``None`` when each run passes one in its
    ``RunContext``)."""
    template = (sampling or SamplingParams()).model_copy(update={"max_new_tokens": agent.max_new_tokens})

    async def render_prompt(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        update = agent.prompt(state, scope)
        return {"run_id": state.get("id") or uuid.uuid4().hex, "repairs": 0, "started_at": time.time(), **update}

    async def generate(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        result = await scope.single_turn(state["transcript"], scope.params(template, **agent.protocol(state, scope)))
        return result.update(state)

    async def parse(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        last = last_policy_turn(state["transcript"])
        output = agent.read(state, last, scope)
        may_repair = (
            agent.repair is not None
            and last is not None
            and state.get("error") is None
            and not scope.strict
            and state["repairs"] < agent.max_repairs
        )
        note = agent.repair(state, output, scope) if may_repair and agent.repair is not None else None
        if note is not None:
            turn = Segment(origin="environment", text=note)
            return {"transcript": (*state["transcript"], turn), "repairs": state["repairs"] + 1}
        return {"output": output}

    def after_parse(state: State) -> Literal["generate", "finish"]:
        return "finish" if "output" in state else "generate"

    async def finish(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        scope = RunScope.resolve(runtime, generator)
        output = state["output"]
        trajectory = assemble_trajectory(
            agent=agent.name,
            run_id=state["run_id"],
            inputs=agent.inputs(state),
            transcript=state["transcript"],
            steps=agent.steps(state["transcript"], output),
            output=output,
            scope=scope,
            timing=timing_of(state),
            error=state.get("error"),
            reward=agent.reward,
            gold=agent.gold(state, output),
        )
        return {"output": output, "trajectory": trajectory}

    graph = StateGraph(
        agent.state_schema,
        context_schema=RunContext,
        input_schema=agent.input_schema,
        output_schema=agent.output_schema,
    )
    graph.add_node("render_prompt", render_prompt)
    graph.add_node("generate", generate)
    graph.add_node("parse", parse)
    graph.add_node("finish", finish)
    graph.add_edge(START, "render_prompt")
    graph.add_edge("render_prompt", "generate")
    graph.add_edge("generate", "parse")
    graph.add_conditional_edges("parse", after_parse)
    graph.add_edge("finish", END)
    return graph.compile(name=agent.name)
