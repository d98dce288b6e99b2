"""The search-interleaved turn loop shared by Veri-R1 and Search-R1: prompt → (generate → retrieve | note)* →
finish, with one protocol-specific :class:`LoopPolicy` deciding the words and the verdict.

Nodes: ``start`` (the prompt) → ``generate`` (one policy turn: token budget, optional grammar, the turn's
classification) → ``retrieve`` (the search, an information block) or ``note`` (a corrective note) → back to
``generate``; a finishing turn goes to ``finish`` (the policy's conclusion, then
:func:`~evigraph.graphs.kit.assembly.assemble_trajectory`). A graph without search (Veri-R1 offline) is
``start → generate → finish``.

The loop owns what every such agent shares -- the whole-sequence budget (:func:`~evigraph.tokens.plan_turn`),
the forced final turn, duplicate-query notes, truncated observations, tool failures as data, interrupts passing
through, timing. The policy owns the prompt, the tags, the rendering of hits and notes and what a run concluded.

Length: the loop's nodes share one budget bookkeeping and one state schema; the policy protocol and the
per-turn budget plan are its only separable parts and are short.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel
from typing_extensions import TypedDict

from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.kit.assembly import assemble_trajectory
from evigraph.graphs.kit.context import RunContext, RunScope
from evigraph.protocol.actions import TurnAction, normalize_query
from evigraph.rewards import AgentReward
from evigraph.text_budget import truncate_to_tokens
from evigraph.tokens import plan_turn
from evigraph.tools.search import SearchTool
from evigraph.trajectory import Evidence, Segment, Step, Timing, TrajectoryError

__all__ = (
    "ENVIRONMENT_OVERHEAD_TOKENS",
    "LoopLimits",
    "LoopPolicy",
    "LoopTexts",
    "Opening",
    "Progress",
    "Review",
    "Reviewer",
    "Turn",
    "build_search_loop",
)

ENVIRONMENT_OVERHEAD_TOKENS = 128
"""What an environment turn adds beyond its entries (chat wrapper, tags, notes): a bound for the budget."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One policy turn as the run goes (turned into a :class:`Step` when the run finishes)."""

    kind: str
    segment_index: int
    query: str | None = None
    hits: tuple[Evidence, ...] | None = None
    """What the turn's search returned (``None``: the turn ran no search)."""
    duplicate_of: int | None = None
    truncated: bool = False

    def step(self, index: int, text: str) -> Step:
        payload: dict[str, Any] = {}
        if self.query is not None:
            payload["query"] = self.query
        if self.hits is not None:
            payload.update(hits=[h.id for h in self.hits], duplicate_of=self.duplicate_of, truncated=self.truncated)
        return Step(index=index, kind=self.kind, text=text, segment_index=self.segment_index, payload=payload)


@dataclass(frozen=True, slots=True)
class Progress:
    """One run's bookkeeping, replaced whole by each node.

    Kept in a single state key on purpose: LangGraph's per-step cost grows with the number of state channels
    (16 channels cost ~35% more scheduling CPU than 1 in ``benchmarks/rollout_concurrency.py``'s setting).
    A frozen dataclass with typed fields, so any LangGraph checkpointer stores it and, in strict
    deserialisation mode, allows it from the graph's own schema (named tuples are not recognised there).
    """

    transcript: tuple[Segment, ...]
    subject: str = ""
    """What the run is about (Veri-R1's claim, Search-R1's question): guides may be built from it."""
    n_turns: int = 0
    n_search: int = 0
    queries: tuple[str, ...] = ()
    seen_ids: tuple[str, ...] = ()
    """Every id shown to the model, in first-seen order."""
    turns: tuple[Turn, ...] = ()
    action: TurnAction | None = None
    """The routing decision for the newest policy turn."""
    n_tokens: int = 0
    """Tokens in the sequence so far; counted only while a whole-sequence budget applies."""
    reviews: tuple[Any, ...] = ()
    """What a reviewer recorded per reviewed step (StepGap's repair loop: its checks), in step order."""
    repairs: int = 0
    """How many review notes steered the run."""
    error: TrajectoryError | None = None
    started_at: float = 0.0
    generate_s: float = 0.0
    tools_s: float = 0.0
    generated_tokens: int = 0


@dataclass(frozen=True, slots=True)
class LoopLimits:
    """The loop's numbers (from the agent's config)."""

    turn_cap: int
    """Per-turn token cap (also the final turn's)."""
    turns: int
    """Generation turns of one run, the answer turn included."""
    max_searches: int
    top_k: int
    max_information_tokens: int
    logprobs: bool
    stops: tuple[str, ...]
    """Stop strings: the closing tags of the policy's actions."""

    @classmethod
    def of(cls, config: Any, *, stops: tuple[str, ...], turn_cap: int | None = None) -> LoopLimits:
        """The limits an agent config holds under the loop's own names (``turns``, ``max_searches``, ``top_k``,
        ``max_information_tokens``, ``logprobs``), with the protocol's ``stops``; the turn cap is ``turn_cap`` or,
        by default, the config's ``max_new_tokens`` (its one source per run)."""
        named = {name: getattr(config, name) for name in _CONFIG_LIMITS}
        return cls(turn_cap=config.max_new_tokens if turn_cap is None else turn_cap, stops=stops, **named)


_CONFIG_LIMITS = ("turns", "max_searches", "top_k", "max_information_tokens", "logprobs")


@dataclass(frozen=True, slots=True)
class Opening:
    """The start of a run: the prompt and the ids it already shows."""

    prompt: str
    subject: str
    seen_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LoopTexts:
    """The words of the environment turns: the agent's own prompt functions."""

    render_hits: Callable[[Sequence[Evidence]], str]
    """Hits → the text of an information block (escaped)."""
    information: Callable[[str, Sequence[str]], str]
    """(rendered hits, notes) → the environment turn after a search."""
    duplicate_note: Callable[[int], str]
    """The note for a query that repeats search ``n``."""
    answer_now_note: Callable[[], str]
    """The note that the next turn must answer."""
    correction: Callable[..., str]
    """``correction(kind, last_turn=...)``: the reply to a turn that ran no search."""


class LoopPolicy(Protocol):
    """What an agent tells the loop (see the module docstring). Implementations live next to the agent's graph;
    every method is a thin call of the agent's own prompt and parsing functions."""

    agent: str
    limits: LoopLimits
    constrained: bool | None
    """Weak-model mode for this agent: ``None`` follows the generator."""
    reward: AgentReward | None
    searches: bool
    """Whether the loop has a search tool (``False``: one answer turn over given entries)."""
    texts: LoopTexts

    def opening(self, state: Mapping[str, Any], *, guided: bool) -> Opening: ...

    def guide(self, run: Progress, *, first: bool, may_search: bool) -> str | None:
        """The turn's regex in weak-model mode (``None``: unguided)."""
        ...

    def classify(self, text: str, *, n_turns: int, n_search: int, final: bool) -> TurnAction: ...

    def conclude(self, run: Progress, state: Mapping[str, Any], scope: RunScope) -> BaseModel: ...

    def run_inputs(self, state: Mapping[str, Any], run: Progress) -> dict[str, Any]: ...

    def steps(self, run: Progress) -> list[Step]:
        """The trajectory's steps (``Turn.step`` per turn, or the agent's own segmentation)."""
        ...

    def metadata(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Review:
    """A reviewer's verdict on the newest step: what to record, and the note that steers the next turn."""

    records: tuple[Any, ...]
    """What to keep for the steps just reviewed (appended to ``Progress.reviews``)."""
    note: str | None = None
    """An environment note for the policy (``None``: carry on)."""


class Reviewer(Protocol):
    """Checks each completed step while the run goes (after its search, or its answer) and may steer the next
    turn with a note; an answer that gets a note is reopened while turns remain."""

    async def review(self, run: Progress, state: Mapping[str, Any], scope: RunScope) -> Review: ...


class _ProgressOnly(TypedDict):
    """What the per-turn nodes read: a narrower input is less for LangGraph to assemble on every step."""

    progress: Progress


Context = Runtime[RunContext]


class _Nodes:
    """Node functions bound to one policy and search tool (the generator may come per run)."""

    def __init__(
        self,
        policy: LoopPolicy,
        generator: Generator | None,
        search: SearchTool | None,
        sampling: SamplingParams | None,
        reviewer: Reviewer | None = None,
    ) -> None:
        self.policy, self.generator, self.search, self.reviewer = policy, generator, search, reviewer
        limits = policy.limits
        self.limits = limits
        # Temperature, top-p and seed come from the caller; the stops and the per-turn cap are the protocol's.
        self.params = (sampling or SamplingParams()).model_copy(
            update={"stop": limits.stops, "max_new_tokens": limits.turn_cap, "logprobs": limits.logprobs}
        )
        self.max_observation = limits.max_information_tokens + ENVIRONMENT_OVERHEAD_TOKENS

    def scope(self, runtime: Context) -> RunScope:
        return RunScope.resolve(runtime, self.generator)

    def _last_turn_forced(self, used: int, scope: RunScope) -> bool:
        """Whether the budget leaves room for nothing but the final turn after ``used`` tokens."""
        if scope.limit is None:
            return False
        cap = self.limits.turn_cap
        plan = plan_turn(
            used=used, turn_cap=cap, final_cap=cap, max_observation=self.max_observation, limit=scope.limit
        )
        return plan is None or plan.final

    def _environment(
        self, run: Progress, scope: RunScope, text_for: Callable[[bool], str], last_turn: bool
    ) -> tuple[Segment, int]:
        """The environment segment ``text_for(last_turn)`` and the sequence length after it; when the budget
        makes the next turn the last, the segment is rebuilt to say so."""
        segment = Segment(origin="environment", text=text_for(last_turn))
        if scope.limit is None:
            return segment, run.n_tokens
        used = run.n_tokens + scope.count(segment, run.transcript[-1])
        if not last_turn and self._last_turn_forced(used, scope):
            segment = Segment(origin="environment", text=text_for(True))
            used = run.n_tokens + scope.count(segment, run.transcript[-1])
        return segment, used

    # -- nodes (all async: no thread-pool hop per step) ---------------------------------------------
    async def start(self, state: Mapping[str, Any], runtime: Context) -> dict[str, Any]:
        scope = self.scope(runtime)
        opening = self.policy.opening(state, guided=scope.guided(self.policy.constrained))
        transcript = (Segment(origin="prompt", role="user", text=opening.prompt),)
        n_tokens = scope.prompt_tokens(transcript) if scope.limit is not None else 0
        progress = Progress(
            transcript=transcript,
            subject=opening.subject,
            seen_ids=opening.seen_ids,
            n_tokens=n_tokens,
            started_at=time.time(),
        )
        return {"progress": progress}

    async def generate(self, state: _ProgressOnly, runtime: Context) -> dict[str, Any]:
        run = state["progress"]
        if run.error is not None:  # a failed search: nothing to generate, the router finishes the run
            return {}
        scope = self.scope(runtime)
        limits = self.limits
        plan = plan_turn(
            used=run.n_tokens,
            turn_cap=limits.turn_cap,
            final_cap=limits.turn_cap,
            max_observation=self.max_observation,
            limit=scope.limit,
        )
        if plan is None:
            message = f"the prompt alone fills the sequence budget of {scope.limit} tokens"
            return {
                "progress": replace(run, error=TrajectoryError(type="BudgetExhausted", message=message, where="budget"))
            }
        last = plan.final or run.n_turns + 1 >= limits.turns
        protocol: dict[str, Any] = {}
        if plan.max_new_tokens != limits.turn_cap:
            protocol["max_new_tokens"] = plan.max_new_tokens
        if scope.guided(self.policy.constrained):
            regex = self.policy.guide(
                run,
                first=run.n_turns == 0 and self.policy.searches,
                may_search=self.policy.searches and run.n_search < limits.max_searches and not last,
            )
            if regex is not None:
                protocol["guide"] = Guide.pattern(regex)
        result = await scope.generate(run.transcript, scope.params(self.params, **protocol))
        if result.error is not None:
            return {"progress": replace(run, error=result.error, generate_s=run.generate_s + result.seconds)}
        continuation = result.continuation
        assert continuation is not None
        segment = continuation.to_segment()
        n_turns = run.n_turns + 1
        action = self.policy.classify(segment.text, n_turns=n_turns, n_search=run.n_search, final=plan.final)
        progress = replace(
            run,
            transcript=(*run.transcript, segment),
            n_turns=n_turns,
            action=action,
            turns=(*run.turns, Turn(kind=action.kind, segment_index=len(run.transcript), query=action.query)),
            n_tokens=run.n_tokens + scope.count(segment, run.transcript[-1]) if scope.limit is not None else 0,
            generate_s=run.generate_s + result.seconds,
            generated_tokens=run.generated_tokens + continuation.generated_tokens,
        )
        return {"progress": progress}

    async def retrieve(self, state: _ProgressOnly, runtime: Context) -> dict[str, Any]:
        run = state["progress"]
        scope = self.scope(runtime)
        limits = self.limits
        query = run.action.query if run.action is not None and run.action.query else ""
        assert self.search is not None  # the builder refuses a searching loop without one
        started = time.perf_counter()
        try:
            search = getattr(self.search, "asearch", None)
            if search is not None:
                hits = await search(query, limits.top_k)
            else:
                hits = await asyncio.to_thread(self.search.search, query, limits.top_k)
        except GraphBubbleUp:
            raise  # LangGraph's interrupts and commands pass through
        except Exception as error:  # a failed tool call ends the run as data (generate passes it to finish)
            failure = TrajectoryError(type=type(error).__name__, message=str(error), where="search")
            return {"progress": replace(run, error=failure)}
        hits = list(hits)[: limits.top_k]
        tokenizer = scope.chat_format.tokenizer if scope.chat_format is not None else None
        entries, truncated = truncate_to_tokens(
            self.policy.texts.render_hits(hits), limits.max_information_tokens, tokenizer
        )
        key = normalize_query(query)
        earlier = [normalize_query(q) for q in run.queries]
        duplicate_of = earlier.index(key) + 1 if key in earlier else None
        notes = [self.policy.texts.duplicate_note(duplicate_of)] if duplicate_of is not None else []
        n_search = run.n_search + 1
        segment, n_tokens = self._environment(
            run,
            scope,
            lambda last: self.policy.texts.information(
                entries, [*notes, self.policy.texts.answer_now_note()] if last else notes
            ),
            n_search >= limits.max_searches or run.n_turns + 1 >= limits.turns,
        )
        turn = replace(run.turns[-1], hits=tuple(hits), duplicate_of=duplicate_of, truncated=truncated)
        progress = replace(
            run,
            transcript=(*run.transcript, segment),
            n_search=n_search,
            queries=(*run.queries, query),
            seen_ids=tuple(dict.fromkeys((*run.seen_ids, *(h.id for h in hits)))),
            turns=(*run.turns[:-1], turn),
            n_tokens=n_tokens,
            tools_s=run.tools_s + time.perf_counter() - started,
        )
        return {"progress": progress}

    async def note(self, state: _ProgressOnly, runtime: Context) -> dict[str, Any]:
        run = state["progress"]
        kind = run.action.kind if run.action is not None else "invalid"
        segment, n_tokens = self._environment(
            run,
            self.scope(runtime),
            lambda last: f"\n{self.policy.texts.correction(kind, last_turn=last)}\n",
            run.n_turns + 1 >= self.limits.turns,
        )
        return {"progress": replace(run, transcript=(*run.transcript, segment), n_tokens=n_tokens)}

    async def review(self, state: Mapping[str, Any], runtime: Context) -> dict[str, Any]:
        run: Progress = state["progress"]
        if run.error is not None or self.reviewer is None:
            return {}
        scope = self.scope(runtime)
        verdict = await self.reviewer.review(run, state, scope)
        run = replace(run, reviews=(*run.reviews, *verdict.records))
        answered = run.action is not None and run.action.finishes
        turns_left = run.n_turns < self.limits.turns
        if verdict.note is None or not turns_left:
            return {"progress": run}
        last = run.n_turns + 1 >= self.limits.turns
        suffix = f" {self.policy.texts.answer_now_note()}" if last else ""
        note = f"{verdict.note}{suffix}\n"
        previous = run.transcript[-1]
        if previous.origin == "environment":  # after a search: the note joins its information turn
            merged = Segment(origin="environment", text=f"{previous.text}{note}")
            # What the note adds: the merged turn's tokens less the information's, both after the policy turn.
            before = run.transcript[-2]
            extra = scope.count(merged, before) - scope.count(previous, before) if scope.limit is not None else 0
            transcript, n_tokens = (*run.transcript[:-1], merged), run.n_tokens + extra
        else:  # after an answer: a new environment turn
            segment, n_tokens = self._environment(run, scope, lambda _last: f"\n{note}", last)
            transcript = (*run.transcript, segment)
        update = {"transcript": transcript, "n_tokens": n_tokens, "repairs": run.repairs + 1}
        if answered:  # the answer is reopened: the next turn may search again or answer anew
            update["action"] = None
        return {"progress": replace(run, **update)}

    async def finish(self, state: Mapping[str, Any], runtime: Context) -> dict[str, Any]:
        run = state["progress"]
        scope = self.scope(runtime)
        output = self.policy.conclude(run, state, scope)
        trajectory = assemble_trajectory(
            agent=self.policy.agent,
            run_id=str(state.get("id") or uuid.uuid4().hex),
            inputs=self.policy.run_inputs(state, run),
            transcript=run.transcript,
            steps=self.policy.steps(run),
            output=output,
            scope=scope,
            timing=Timing(
                started_at=run.started_at,
                wall_s=time.time() - run.started_at,
                generate_s=run.generate_s,
                tools_s=run.tools_s,
                generated_tokens=run.generated_tokens,
            ),
            error=run.error,
            reward=self.policy.reward,
            gold=state.get("gold"),
            metadata=self.policy.metadata(),
        )
        return {"output": output, "trajectory": trajectory}

    # -- routing (async like the nodes: LangGraph runs sync callables of an async graph in a thread pool) --
    async def after_generate(self, state: _ProgressOnly) -> str:
        run = state["progress"]
        if run.error is not None or run.action is None:
            return "finish"
        if run.action.finishes:
            return "review" if self.reviewer is not None and run.action.kind == "answer" else "finish"
        return "retrieve" if run.action.kind == "search" else "note"

    @staticmethod
    async def after_review(state: _ProgressOnly) -> str:
        run = state["progress"]
        if run.error is not None or (run.action is not None and run.action.finishes):
            return "finish"
        return "generate"


def turn_steps(run: Progress) -> list[Step]:
    """One step per policy turn (the default segmentation)."""
    return [turn.step(i, run.transcript[turn.segment_index].text) for i, turn in enumerate(run.turns)]


def build_search_loop(
    policy: LoopPolicy,
    generator: Generator | None,
    search: SearchTool | None,
    *,
    state_schema: type,
    input_schema: type,
    output_schema: type,
    name: str,
    sampling: SamplingParams | None = None,
    reviewer: Reviewer | None = None,
) -> Any:
    """Compile the loop for ``policy``: ``start → generate → (retrieve | note → generate)* → finish``, or
    ``start → generate → finish`` when the policy does not search. With a ``reviewer``, every search and every
    answer passes through ``review`` (``retrieve → review → generate``, ``generate → review → finish`` or back to
    ``generate`` when the answer is reopened). The state schema must hold the input keys, ``progress``,
    ``output`` and ``trajectory`` (and ``id`` / ``gold`` when runs pass them)."""
    nodes = _Nodes(policy, generator, search, sampling, reviewer)
    graph = StateGraph(state_schema, context_schema=RunContext, input_schema=input_schema, output_schema=output_schema)
    graph.add_node("start", nodes.start)
    graph.add_node("generate", nodes.generate, input_schema=_ProgressOnly)
    graph.add_node("finish", nodes.finish)
    graph.add_edge(START, "start")
    graph.add_edge("start", "generate")
    if not policy.searches:
        graph.add_edge("generate", "finish")
    else:
        graph.add_node("retrieve", nodes.retrieve, input_schema=_ProgressOnly)
        graph.add_node("note", nodes.note, input_schema=_ProgressOnly)
        graph.add_edge("note", "generate")
        if reviewer is None:
            graph.add_conditional_edges("generate", nodes.after_generate, ["retrieve", "note", "finish"])
            graph.add_edge("retrieve", "generate")
        else:
            graph.add_node("review", nodes.review)
            graph.add_conditional_edges("generate", nodes.after_generate, ["retrieve", "note", "review", "finish"])
            graph.add_edge("retrieve", "review")
            graph.add_conditional_edges("review", nodes.after_review, ["generate", "finish"])
    graph.add_edge("finish", END)
    return graph.compile(name=name)
