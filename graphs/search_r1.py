"""The Search-R1 generator graph (specs/stepgap.md §2.1, §2.8): ``<think>/<search>/<information>/<answer>`` turns
against a search tool, producing the steps ``s_i = (c_i, q_i, e_i, a_i)`` StepGap checks.

It is the shared search loop (:mod:`evigraph.graphs.kit.search_loop`) with Search-R1's policy: every turn stops at
``</search>`` or ``</answer>``, so each policy turn is one step; its hits are the step's evidence and its token
span (policy tokens only) comes from the kit's assembly. After ``max_searches`` searches the next turn must
answer. Usage::

    graph = build_search_r1_graph(generator, search)
    result = await graph.ainvoke({"question": "Who directed Jaws?", "golds": ["Steven Spielberg"]})
    result["output"].answer, result["output"].steps, result["trajectory"].steps[0].token_span
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict

from evigraph.agents.search_r1.answers import exact_match
from evigraph.agents.search_r1.decoding import turn_regex
from evigraph.agents.search_r1.prompts import (
    answer_now_note,
    correction_note,
    duplicate_query_note,
    information_turn,
    question_prompt,
    render_passages,
)
from evigraph.agents.search_r1.protocol import SEARCH_R1_PROTOCOL
from evigraph.agents.search_r1.schemas import (
    SearchR1Config,
    SearchR1Inputs,
    SearchR1Output,
    SearchR1Result,
    TraceStepRecord,
)
from evigraph.agents.search_r1.steps import step_record
from evigraph.errors import ConfigError
from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.graphs.kit.context import RunScope
from evigraph.graphs.kit.search_loop import LoopLimits, LoopTexts, Opening, Progress, build_search_loop
from evigraph.protocol.actions import TurnAction, classify_search_turn
from evigraph.rewards import AgentReward
from evigraph.tools.search import SearchTool
from evigraph.trajectory import Step, Trajectory

__all__ = ("AGENT_NAME", "SearchR1Policy", "SearchR1State", "build_search_r1_graph", "run_steps")

AGENT_NAME = "search-r1"


class SearchR1State(TypedDict, total=False):
    question: str
    id: str
    golds: list[str]
    gold: dict[str, Any]
    progress: Progress
    output: SearchR1Output
    trajectory: Trajectory


def run_steps(run: Progress) -> list[TraceStepRecord]:
    """One step per policy turn; a searching turn's evidence is what its search returned."""
    return [
        step_record(run.transcript[t.segment_index].text, segment_index=t.segment_index, evidence=t.hits or ())
        for t in run.turns
    ]


class SearchR1Policy:
    """Search-R1's side of the search loop. ``agent`` and ``reward`` are what the trajectory is filed under (the
    StepGap rollout graph files its runs under ``stepgap``)."""

    searches = True

    texts = LoopTexts(
        render_hits=render_passages,
        information=information_turn,
        duplicate_note=duplicate_query_note,
        answer_now_note=answer_now_note,
        correction=correction_note,
    )

    def __init__(self, config: SearchR1Config, *, agent: str = AGENT_NAME, reward: AgentReward | None = None) -> None:
        self.config, self.agent, self.reward = config, agent, reward
        self.constrained = config.constrained
        self.limits = LoopLimits.of(config, stops=SEARCH_R1_PROTOCOL.stop_strings("search", "answer"))

    def opening(self, state: Mapping[str, Any], *, guided: bool) -> Opening:
        question = state["question"]
        prompt = question_prompt(question, max_searches=self.config.max_searches, demonstration=guided)
        return Opening(prompt, question)

    def guide(self, run: Progress, *, first: bool, may_search: bool) -> str | None:
        return turn_regex(question=run.subject, may_search=may_search)

    def classify(self, text: str, *, n_turns: int, n_search: int, final: bool) -> TurnAction:
        config = self.config
        return classify_search_turn(
            SEARCH_R1_PROTOCOL,
            text,
            n_turns=n_turns,
            n_search=n_search,
            max_searches=config.max_searches,
            max_turns=config.turns,
            final=final,
        )

    def conclude(self, run: Progress, state: Mapping[str, Any], scope: RunScope) -> SearchR1Output:
        steps = run_steps(run)
        answer = next((s.answer for s in reversed(steps) if s.answer is not None), None)
        golds = state.get("golds") or (state.get("gold") or {}).get("golds")
        parsed = SEARCH_R1_PROTOCOL.parse_transcript(run.transcript)
        return SearchR1Output(
            question=state["question"],
            answer=answer,
            steps=steps,
            queries=list(run.queries),
            n_searches=run.n_search,
            n_turns=run.n_turns,
            format_ok=answer is not None and SEARCH_R1_PROTOCOL.format_ok(parsed),
            em=exact_match(answer or "", golds) if golds else None,
        )

    def run_inputs(self, state: Mapping[str, Any], run: Progress) -> dict[str, Any]:
        return {"question": state["question"], **({"golds": list(state["golds"])} if state.get("golds") else {})}

    def steps(self, run: Progress) -> list[Step]:
        return [
            Step(
                index=i,
                kind="answer" if record.answer is not None else "search",
                text=record.text,
                segment_index=record.segment_index,
                char_span=record.char_span,
                payload=record.model_dump(mode="json", exclude={"text", "segment_index", "char_span"}),
            )
            for i, record in enumerate(run_steps(run))
        ]

    def metadata(self) -> dict[str, Any]:
        return {"protocol": SEARCH_R1_PROTOCOL.name}


def build_search_r1_graph(
    generator: Generator | None,
    search: SearchTool | None = None,
    config: SearchR1Config | None = None,
    *,
    sampling: SamplingParams | None = None,
    agent: str = AGENT_NAME,
    reward: AgentReward | None = None,
) -> Any:
    """The Search-R1 generator over ``generator`` and ``search``.

    Args:
        generator: the policy, or ``None`` when every run supplies one in its ``RunContext``.
        search: any search tool (``BM25Search``, ``RemoteSearch``, ...).
        config: search budget, top-k, per-turn cap.
        sampling: temperature / top-p / seed (the stops and the cap are the protocol's).
        agent, reward: what trajectories are filed under and scored with (runs given ``gold``).

    Returns:
        A compiled graph: ``ainvoke`` takes :class:`SearchR1Inputs` and returns :class:`SearchR1Result`.
    """
    if search is None:
        raise ConfigError("the Search-R1 generator needs a search tool (--corpus or --retriever-url)")
    return build_search_loop(
        SearchR1Policy(config or SearchR1Config(), agent=agent, reward=reward),
        generator,
        search,
        state_schema=SearchR1State,
        input_schema=SearchR1Inputs,
        output_schema=SearchR1Result,
        name=agent,
        sampling=sampling,
    )
