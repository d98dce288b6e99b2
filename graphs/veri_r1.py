"""The Veri-R1 graphs: online claim verification (plan → (search → information → think)* → answer) and the
offline variant (evidence given in the prompt, one reasoning-and-answer turn).

The graph is a handful of named nodes over :class:`VeriR1State`; every decision is a plain function in
:mod:`evigraph.agents.veri_r1` (turn routing, answer parsing, format rules, rewards), so it is unit-tested
without LangGraph. Usage::

    graph = build_veri_r1_graph(generator, search)
    state = await graph.ainvoke({"claim": "Hog Island Light was first lit in 1853."})
    state["output"].label, state["output"].evidence, state["trajectory"]

The compiled graph is safe to invoke concurrently: all per-run data lives in the state.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple, TypedDict

from langgraph.graph import END, START, StateGraph

from evigraph.agents.veri_r1.actions import TurnAction, classify_turn, normalize_query
from evigraph.agents.veri_r1.answer import parse_answer
from evigraph.agents.veri_r1.confidence import label_token_probability
from evigraph.agents.veri_r1.decoding import turn_regex
from evigraph.agents.veri_r1.format_rules import check_format
from evigraph.agents.veri_r1.labels import normalize_gold_label, normalize_id
from evigraph.agents.veri_r1.prompts import (
    BUDGET_SPENT_NOTE,
    INVALID_ACTION_NOTE,
    NO_ENTRIES,
    answer_now_note,
    duplicate_query_note,
    forged_information_note,
    offline_prompt,
    online_prompt,
)
from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL
from evigraph.agents.veri_r1.rewards import final_reward
from evigraph.agents.veri_r1.schemas import VeriR1Config, VeriR1Output
from evigraph.errors import ConfigError
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.text_budget import truncate_to_tokens
from evigraph.tools.search import SearchTool, render_information
from evigraph.trajectory import Evidence, Segment, Step, Timing, Trajectory, TrajectoryError

__all__ = (
    "AGENT_NAME",
    "Progress",
    "Turn",
    "VeriR1State",
    "build_offline_graph",
    "build_veri_r1_graph",
    "flat_response",
)

AGENT_NAME = "veri-r1"


class Turn(NamedTuple):
    """One policy turn as the run goes (turned into a :class:`Step` when the run finishes)."""

    kind: str
    segment_index: int
    query: str | None = None
    hits: tuple[str, ...] | None = None
    duplicate_of: int | None = None
    truncated: bool = False

    def step(self, index: int, text: str) -> Step:
        payload: dict[str, Any] = {}
        if self.query is not None:
            payload["query"] = self.query
        if self.hits is not None:
            payload.update(hits=list(self.hits), duplicate_of=self.duplicate_of, truncated=self.truncated)
        return Step(index=index, kind=self.kind, text=text, segment_index=self.segment_index, payload=payload)


class Progress(NamedTuple):
    """One run's bookkeeping (spec §2.6 state), replaced whole by each node.

    Kept in a single state key on purpose: LangGraph's per-step cost grows with the number of state channels
    (16 channels cost ~35% more scheduling CPU than 1 in ``benchmarks/rollout_concurrency.py``'s setting).
    A named tuple because ``_replace`` is several times cheaper than ``dataclasses.replace`` on this path.
    """

    transcript: tuple[Segment, ...]
    n_turns: int = 0
    n_search: int = 0
    queries: tuple[str, ...] = ()
    seen_ids: tuple[str, ...] = ()
    """Every id shown to the model, in first-seen order."""
    turns: tuple[Turn, ...] = ()
    action: TurnAction | None = None
    """The routing decision for the newest policy turn."""
    error: TrajectoryError | None = None
    started_at: float = 0.0
    generate_s: float = 0.0
    tools_s: float = 0.0
    generated_tokens: int = 0


class VeriR1State(TypedDict, total=False):
    """Graph state: the inputs (:class:`VeriR1Inputs`), the run's bookkeeping (``progress``) and the results
    (:class:`VeriR1Result`). ``ainvoke`` takes the inputs and returns only the results."""

    claim: str
    id: str
    evidence: list[Evidence]
    gold: dict[str, Any]
    """``{"label": ..., "evidence": [...]}``: when given, the trajectory carries the reward components."""
    progress: Progress
    output: VeriR1Output
    trajectory: Trajectory


class VeriR1Inputs(TypedDict, total=False):
    """What ``ainvoke`` takes: ``claim`` (required), ``id``, ``evidence`` (offline runs), ``gold`` (rewards)."""

    claim: str
    id: str
    evidence: list[Evidence]
    gold: dict[str, Any]


class VeriR1Result(TypedDict):
    """What ``ainvoke`` returns."""

    output: VeriR1Output
    trajectory: Trajectory


class _ProgressOnly(TypedDict):
    """What the per-turn nodes read: a narrower input is less for LangGraph to assemble on every step."""

    progress: Progress


def flat_response(segments: Sequence[Segment]) -> str:
    """Policy and environment text in order: the ``response`` string other systems' records store."""
    return "".join(s.text for s in segments if s.origin != "prompt")


def _tokenizer(generator: Generator) -> Any | None:
    return getattr(generator, "tokenizer", None)


class _Nodes:
    """Node functions bound to one generator, search tool and config."""

    def __init__(
        self,
        generator: Generator,
        search: SearchTool | None,
        config: VeriR1Config,
        *,
        offline: bool,
        sampling: SamplingParams | None,
    ) -> None:
        self.generator, self.search, self.config, self.offline = generator, search, config, offline
        # Temperature, top-p and seed come from the caller; the stops and the per-turn cap are the protocol's.
        self.params = (sampling or SamplingParams()).model_copy(
            update={
                "stop": ("</answer>",) if offline else VERI_R1_PROTOCOL.stop_strings("search", "answer"),
                "max_new_tokens": config.offline_max_new_tokens if offline else config.max_new_tokens,
                "logprobs": config.logprobs,
            }
        )
        self.max_turns = 1 if offline else config.turns

    # -- nodes (all async: no thread-pool hop per step) ---------------------------------------------
    async def start(self, state: VeriR1State) -> dict[str, Any]:
        claim = state["claim"]
        if self.offline:
            given = list(state.get("evidence") or [])
            prompt = offline_prompt(claim, given)
            seen = tuple(dict.fromkeys(e.id for e in given))
        else:
            prompt, seen = online_prompt(claim, max_searches=self.config.max_searches), ()
        transcript = (Segment(origin="prompt", role="user", text=prompt),)
        return {"progress": Progress(transcript=transcript, seen_ids=seen, started_at=time.time())}

    async def generate(self, state: _ProgressOnly) -> dict[str, Any]:
        run = state["progress"]
        if run.error is not None:  # a failed search: nothing to generate, the router finishes the run
            return {}
        started = time.perf_counter()
        params = self.params
        if self.config.constrained:
            may_search = (
                not self.offline and run.n_search < self.config.max_searches and run.n_turns + 1 < self.max_turns
            )
            regex = turn_regex(
                first=run.n_turns == 0 and not self.offline,
                may_search=may_search,
                seen_ids=run.seen_ids,
                max_block_chars=self.config.guide_max_block_chars,
            )
            params = params.model_copy(update={"guide": Guide.pattern(regex)})
        try:
            result = await self.generator.continue_transcript(run.transcript, params)
        except Exception as error:  # a failed rollout is data: record it and finish
            failure = TrajectoryError(type=type(error).__name__, message=str(error), where="generate")
            return {"progress": run._replace(error=failure)}
        n_turns = run.n_turns + 1
        segment = result.to_segment()
        if self.offline:
            action = TurnAction(kind="answer" if "<answer>" in segment.text else "final_turn")
        else:
            action = classify_turn(
                segment.text,
                n_turns=n_turns,
                n_search=run.n_search,
                max_searches=self.config.max_searches,
                max_turns=self.max_turns,
            )
        turn = Turn(kind=action.kind, segment_index=len(run.transcript), query=action.query)
        progress = run._replace(
            transcript=(*run.transcript, segment),
            n_turns=n_turns,
            action=action,
            turns=(*run.turns, turn),
            generate_s=run.generate_s + time.perf_counter() - started,
            generated_tokens=run.generated_tokens + len(result.token_ids or ()),
        )
        return {"progress": progress}

    async def retrieve(self, state: _ProgressOnly) -> dict[str, Any]:
        run = state["progress"]
        query = run.action.query if run.action is not None and run.action.query else ""
        assert self.search is not None  # online graphs always have a search tool
        started = time.perf_counter()
        try:
            search = getattr(self.search, "asearch", None)
            if search is not None:
                hits = await search(query, self.config.top_k)
            else:
                hits = await asyncio.to_thread(self.search.search, query, self.config.top_k)
        except Exception as error:  # a failed tool call ends the run as data (generate passes it to finish)
            failure = TrajectoryError(type=type(error).__name__, message=str(error), where="search")
            return {"progress": run._replace(error=failure)}
        hits = list(hits)[: self.config.top_k]
        lines, truncated = truncate_to_tokens(
            render_information(hits) or NO_ENTRIES, self.config.max_information_tokens, _tokenizer(self.generator)
        )
        notes = []
        key = normalize_query(query)
        earlier = [normalize_query(q) for q in run.queries]
        duplicate_of = earlier.index(key) + 1 if key in earlier else None
        if duplicate_of is not None:
            notes.append(duplicate_query_note(duplicate_of))
        n_search = run.n_search + 1
        if n_search >= self.config.max_searches or run.n_turns + 1 >= self.max_turns:
            notes.append(answer_now_note())
        text = f"\n<information>\n{lines}\n</information>\n" + "".join(f"{note}\n" for note in notes)
        turn = run.turns[-1]._replace(hits=tuple(h.id for h in hits), duplicate_of=duplicate_of, truncated=truncated)
        progress = run._replace(
            transcript=(*run.transcript, Segment(origin="environment", text=text)),
            n_search=n_search,
            queries=(*run.queries, query),
            seen_ids=tuple(dict.fromkeys((*run.seen_ids, *(h.id for h in hits)))),
            turns=(*run.turns[:-1], turn),
            tools_s=run.tools_s + time.perf_counter() - started,
        )
        return {"progress": progress}

    async def note(self, state: _ProgressOnly) -> dict[str, Any]:
        run = state["progress"]
        kind = run.action.kind if run.action is not None else "invalid"
        note = {
            "over_budget": BUDGET_SPENT_NOTE,
            "forged_information": forged_information_note(),
        }.get(kind, INVALID_ACTION_NOTE)
        if kind != "over_budget" and run.n_turns + 1 >= self.max_turns:
            note += " " + answer_now_note(after_search=False)
        return {
            "progress": run._replace(transcript=(*run.transcript, Segment(origin="environment", text=f"\n{note}\n")))
        }

    async def finish(self, state: VeriR1State) -> dict[str, Any]:
        run = state["progress"]
        transcript = list(run.transcript)
        if (tokenizer_format := getattr(self.generator, "chat_format", None)) is not None:
            # Exact ids serve training export; a transcript the template cannot render stays text-only.
            with contextlib.suppress(ConfigError):
                transcript = tokenizer_format.segment_token_ids(transcript)
        policy = [s for s in transcript if s.origin == "policy"]
        answer = parse_answer("".join(s.text for s in policy))
        report = check_format(transcript, self.config.format.model_copy(update={"offline": self.offline}))
        seen = {normalize_id(i) for i in run.seen_ids}
        cited = list(answer.evidence)
        unseen = [i for i in cited if i not in seen]
        if self.config.restrict_to_retrieved:
            cited = [i for i in cited if i in seen]
        confidence = _confidence(policy[-1], self.generator) if policy and answer.label else None
        output = VeriR1Output(
            label=answer.label,
            evidence=cited,
            answered=answer.n_blocks > 0,
            format_ok=report.ok,
            format_failed=list(report.failed),
            queries=list(run.queries),
            duplicate_queries=sum(1 for t in run.turns if t.duplicate_of is not None),
            retrieved_ids=list(run.seen_ids),
            cited_unretrieved=unseen,
            confidence=confidence,
            n_turns=run.n_turns,
            n_searches=run.n_search,
        )
        rewards = []
        gold = state.get("gold")
        if gold:
            rewards = final_reward(
                pred_label=output.label,
                pred_evidence=output.evidence,
                gold_label=normalize_gold_label(str(gold["label"])),
                gold_evidence=[normalize_id(str(i)) for i in gold.get("evidence", [])],
                format_ok=output.format_ok,
            ).components()
        steps = [turn.step(i, transcript[turn.segment_index].text) for i, turn in enumerate(run.turns)]
        timing = Timing(
            started_at=run.started_at,
            wall_s=time.time() - run.started_at,
            generate_s=run.generate_s,
            tools_s=run.tools_s,
            generated_tokens=run.generated_tokens,
        )
        trajectory = Trajectory(
            id=str(state.get("id") or uuid.uuid4().hex),
            agent=AGENT_NAME,
            input={"claim": state["claim"], **({"evidence_ids": list(run.seen_ids)} if self.offline else {})},
            segments=transcript,
            steps=_with_token_spans(steps, transcript),
            output=output.model_dump(),
            rewards=rewards,
            metadata={"variant": "offline" if self.offline else "online", "generator": self.generator.name},
            timing=timing,
            error=run.error,
        )
        return {"output": output, "trajectory": trajectory}

    # -- routing (async like the nodes: LangGraph runs sync callables of an async graph in a thread pool) --
    @staticmethod
    async def after_generate(state: VeriR1State) -> str:
        run = state["progress"]
        if run.error is not None or run.action is None or run.action.finishes:
            return "finish"
        return "retrieve" if run.action.kind == "search" else "note"


def _confidence(segment: Segment, generator: Generator) -> float | None:
    tokenizer = _tokenizer(generator)
    if segment.token_ids is None or segment.logprobs is None or tokenizer is None:
        return None

    def decode(ids: list[int]) -> str:
        return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    return label_token_probability(segment.text, segment.token_ids, segment.logprobs, decode)


def _with_token_spans(steps: Sequence[Step], transcript: Sequence[Segment]) -> list[Step]:
    """Fill each step's ``token_span`` (its policy segment's ids in sequence coordinates), when ids are known."""
    if any(s.token_ids is None for s in transcript if s.origin != "prompt") or transcript[-1].token_ids is None:
        return list(steps)
    starts, position = [], 0
    for segment in transcript:
        starts.append(position)
        position += len(segment.token_ids or ())
    spans = []
    for step in steps:
        index = step.segment_index
        if index is None or index >= len(transcript):
            spans.append(step)
            continue
        start = starts[index]
        spans.append(step.model_copy(update={"token_span": (start, start + len(transcript[index].token_ids or ()))}))
    return spans


def _compile(nodes: _Nodes) -> Any:
    graph = StateGraph(VeriR1State, input_schema=VeriR1Inputs, output_schema=VeriR1Result)
    graph.add_node("start", nodes.start)
    graph.add_node("generate", nodes.generate, input_schema=_ProgressOnly)
    graph.add_node("finish", nodes.finish)
    graph.add_edge(START, "start")
    graph.add_edge("start", "generate")
    if nodes.offline:
        graph.add_edge("generate", "finish")
    else:
        graph.add_node("retrieve", nodes.retrieve, input_schema=_ProgressOnly)
        graph.add_node("note", nodes.note, input_schema=_ProgressOnly)
        graph.add_conditional_edges("generate", nodes.after_generate, ["retrieve", "note", "finish"])
        graph.add_edge("retrieve", "generate")
        graph.add_edge("note", "generate")
    graph.add_edge("finish", END)
    return graph.compile(name="veri-r1-offline" if nodes.offline else "veri-r1")


def build_veri_r1_graph(
    generator: Generator,
    search: SearchTool,
    config: VeriR1Config | None = None,
    *,
    sampling: SamplingParams | None = None,
) -> Any:
    """The online Veri-R1 graph over ``generator`` and ``search``.

    Args:
        generator: the policy (any :class:`~evigraph.generators.base.Generator`).
        search: a search tool (``BM25Search``, ``RemoteSearch`` or anything with ``search(query, k)``).
        config: limits and options; defaults follow the spec.
        sampling: temperature / top-p / seed; the stop strings and the per-turn cap (``config.max_new_tokens``)
            are the protocol's.
    """
    return _compile(_Nodes(generator, search, config or VeriR1Config(), offline=False, sampling=sampling))


def build_offline_graph(
    generator: Generator, config: VeriR1Config | None = None, *, sampling: SamplingParams | None = None
) -> Any:
    """The offline (OffCV) graph: pass the entries as ``evidence`` (a list of ``Evidence``) with the claim."""
    return _compile(_Nodes(generator, None, config or VeriR1Config(), offline=True, sampling=sampling))
