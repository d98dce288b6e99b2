"""The Veri-R1 graph (specs/veri-r1.md §2): online claim verification, plan → (search → information → think)* →
answer, and its offline variant (entries given in the prompt, one reasoning-and-answer turn).

Nodes: ``start`` (the prompt) → ``generate`` (one policy turn) → ``retrieve`` (run the search, add the
information block) or ``note`` (a corrective note) → back to ``generate``; a final turn goes to ``finish``.
Every decision is a plain function of :mod:`evigraph.agents.veri_r1` (turn routing, prompts and notes, the
verdict, rewards); the generic end of a run (exact ids, step spans, the reward) is
:func:`evigraph.graphs.assembly.assemble_trajectory`. Usage::

    graph = build_veri_r1_graph(generator, search)
    result = await graph.ainvoke({"claim": "Hog Island Light was first lit in 1853."})
    result["output"].label, result["output"].evidence, result["trajectory"]

Per-run settings (the generator, sampling, a whole-sequence token budget, strict token mode) come through
LangGraph's run context (:class:`~evigraph.graphs.context.RunContext`), so one compiled graph serves many
concurrent runs; all per-run data lives in the state.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from evigraph.agents.veri_r1.actions import TurnAction, classify_turn, normalize_query
from evigraph.agents.veri_r1.decoding import turn_regex
from evigraph.agents.veri_r1.prompts import (
    answer_now_note,
    correction_note,
    duplicate_query_note,
    information_turn,
    offline_prompt,
    online_prompt,
)
from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL
from evigraph.agents.veri_r1.schemas import VeriR1Config, VeriR1Inputs, VeriR1Output, VeriR1Result
from evigraph.agents.veri_r1.scoring import FINAL_REWARD
from evigraph.agents.veri_r1.verdict import conclude
from evigraph.errors import ConfigError
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams
from evigraph.graphs.assembly import assemble_trajectory
from evigraph.graphs.context import RunContext, RunScope
from evigraph.text_budget import truncate_to_tokens
from evigraph.tokens import plan_turn
from evigraph.tools.search import SearchTool, render_information
from evigraph.trajectory import Evidence, Segment, Step, Timing, Trajectory, TrajectoryError

__all__ = ("AGENT_NAME", "Progress", "Turn", "VeriR1State", "build_offline_graph", "build_veri_r1_graph")

AGENT_NAME = "veri-r1"

ENVIRONMENT_OVERHEAD_TOKENS = 128
"""What an environment turn adds beyond its entries (chat wrapper, tags, notes): a bound for the budget."""


@dataclass(frozen=True, slots=True)
class Turn:
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


@dataclass(frozen=True, slots=True)
class Progress:
    """One run's bookkeeping (spec §2.6 state), replaced whole by each node.

    Kept in a single state key on purpose: LangGraph's per-step cost grows with the number of state channels
    (16 channels cost ~35% more scheduling CPU than 1 in ``benchmarks/rollout_concurrency.py``'s setting).
    A frozen dataclass with typed fields, so any LangGraph checkpointer stores it and, in strict
    deserialisation mode, allows it from the graph's own schema (named tuples are not recognised there).
    """

    transcript: tuple[Segment, ...]
    claim: str = ""
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
    progress: Progress
    output: VeriR1Output
    trajectory: Trajectory


class _ProgressOnly(TypedDict):
    """What the per-turn nodes read: a narrower input is less for LangGraph to assemble on every step."""

    progress: Progress


Context = Runtime[RunContext]


class _Nodes:
    """Node functions bound to one search tool and config (the generator may come per run)."""

    def __init__(
        self,
        generator: Generator | None,
        search: SearchTool | None,
        config: VeriR1Config,
        sampling: SamplingParams | None,
    ) -> None:
        self.generator, self.search, self.config = generator, search, config
        # Temperature, top-p and seed come from the caller; the stops and the per-turn cap are the protocol's.
        self.params = (sampling or SamplingParams()).model_copy(
            update={
                "stop": VERI_R1_PROTOCOL.stop_strings(*(("answer",) if config.offline else ("search", "answer"))),
                "max_new_tokens": config.turn_cap,
                "logprobs": config.logprobs,
            }
        )
        self.max_observation = config.max_information_tokens + ENVIRONMENT_OVERHEAD_TOKENS

    def scope(self, runtime: Context) -> RunScope:
        return RunScope.resolve(runtime, self.generator)

    def _guided(self, scope: RunScope) -> bool:
        """Weak-model mode for this run: the config's choice, else the generator's."""
        constrained = self.config.constrained
        return scope.generator.constrained if constrained is None else constrained

    def _last_turn_forced(self, used: int, scope: RunScope) -> bool:
        """Whether the budget leaves room for nothing but the final turn after ``used`` tokens."""
        if scope.limit is None:
            return False
        plan = plan_turn(
            used=used,
            turn_cap=self.config.turn_cap,
            final_cap=self.config.turn_cap,
            max_observation=self.max_observation,
            limit=scope.limit,
        )
        return plan is None or plan.final

    def _environment(self, run: Progress, scope: RunScope, text_for: Any, last_turn: bool) -> tuple[Segment, int]:
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
    async def start(self, state: VeriR1State, runtime: Context) -> dict[str, Any]:
        scope = self.scope(runtime)
        claim = state["claim"]
        demonstration = self.config.demonstration
        if demonstration is None:
            demonstration = self._guided(scope)
        if self.config.offline:
            given = list(state.get("evidence") or [])
            prompt = offline_prompt(claim, given)
            seen = tuple(dict.fromkeys(e.id for e in given))
        else:
            prompt = online_prompt(claim, max_searches=self.config.max_searches, demonstration=demonstration)
            seen = ()
        transcript = (Segment(origin="prompt", role="user", text=prompt),)
        n_tokens = scope.prompt_tokens(transcript) if scope.limit is not None else 0
        started_at = time.time()
        return {
            "progress": Progress(
                transcript=transcript, claim=claim, seen_ids=seen, n_tokens=n_tokens, started_at=started_at
            )
        }

    async def generate(self, state: _ProgressOnly, runtime: Context) -> dict[str, Any]:
        run = state["progress"]
        if run.error is not None:  # a failed search: nothing to generate, the router finishes the run
            return {}
        scope = self.scope(runtime)
        config = self.config
        plan = plan_turn(
            used=run.n_tokens,
            turn_cap=config.turn_cap,
            final_cap=config.turn_cap,
            max_observation=self.max_observation,
            limit=scope.limit,
        )
        if plan is None:
            message = f"the prompt alone fills the sequence budget of {scope.limit} tokens"
            return {
                "progress": replace(run, error=TrajectoryError(type="BudgetExhausted", message=message, where="budget"))
            }
        last = plan.final or run.n_turns + 1 >= config.turns
        protocol: dict[str, Any] = {}
        if plan.max_new_tokens != config.turn_cap:
            protocol["max_new_tokens"] = plan.max_new_tokens
        if self._guided(scope):
            regex = turn_regex(
                first=run.n_turns == 0 and not config.offline,
                may_search=not config.offline and run.n_search < config.max_searches and not last,
                seen_ids=run.seen_ids,
                claim=None if config.offline else run.claim,
                max_block_chars=config.guide_max_block_chars,
            )
            protocol["guide"] = Guide.pattern(regex)
        result = await scope.generate(run.transcript, scope.params(self.params, **protocol))
        if result.error is not None:
            return {"progress": replace(run, error=result.error, generate_s=run.generate_s + result.seconds)}
        continuation = result.continuation
        assert continuation is not None
        segment = continuation.to_segment()
        n_turns = run.n_turns + 1
        action = classify_turn(
            segment.text,
            n_turns=n_turns,
            n_search=run.n_search,
            max_searches=config.max_searches,
            max_turns=config.turns,
            final=plan.final,
        )
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
        config = self.config
        query = run.action.query if run.action is not None and run.action.query else ""
        assert self.search is not None  # the builder refuses an online graph without one
        started = time.perf_counter()
        try:
            search = getattr(self.search, "asearch", None)
            if search is not None:
                hits = await search(query, config.top_k)
            else:
                hits = await asyncio.to_thread(self.search.search, query, config.top_k)
        except GraphBubbleUp:
            raise  # LangGraph's interrupts and commands pass through
        except Exception as error:  # a failed tool call ends the run as data (generate passes it to finish)
            failure = TrajectoryError(type=type(error).__name__, message=str(error), where="search")
            return {"progress": replace(run, error=failure)}
        hits = list(hits)[: config.top_k]
        tokenizer = scope.chat_format.tokenizer if scope.chat_format is not None else None
        entries, truncated = truncate_to_tokens(render_information(hits), config.max_information_tokens, tokenizer)
        key = normalize_query(query)
        earlier = [normalize_query(q) for q in run.queries]
        duplicate_of = earlier.index(key) + 1 if key in earlier else None
        notes = [duplicate_query_note(duplicate_of)] if duplicate_of is not None else []
        n_search = run.n_search + 1
        segment, n_tokens = self._environment(
            run,
            scope,
            lambda last: information_turn(entries, [*notes, answer_now_note()] if last else notes),
            n_search >= config.max_searches or run.n_turns + 1 >= config.turns,
        )
        turn = replace(run.turns[-1], hits=tuple(h.id for h in hits), duplicate_of=duplicate_of, truncated=truncated)
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
            lambda last: f"\n{correction_note(kind, last_turn=last)}\n",
            run.n_turns + 1 >= self.config.turns,
        )
        return {"progress": replace(run, transcript=(*run.transcript, segment), n_tokens=n_tokens)}

    async def finish(self, state: VeriR1State, runtime: Context) -> dict[str, Any]:
        run = state["progress"]
        scope = self.scope(runtime)
        transcript = run.transcript
        output = conclude(
            transcript,
            self.config,
            seen_ids=run.seen_ids,
            queries=run.queries,
            duplicate_queries=sum(1 for t in run.turns if t.duplicate_of is not None),
            n_turns=run.n_turns,
            n_searches=run.n_search,
            decode=scope.chat_format.decode if scope.chat_format is not None else None,
        )
        offline = self.config.offline
        trajectory = assemble_trajectory(
            agent=AGENT_NAME,
            run_id=str(state.get("id") or uuid.uuid4().hex),
            inputs={"claim": state["claim"], **({"evidence_ids": list(run.seen_ids)} if offline else {})},
            transcript=transcript,
            steps=[turn.step(i, transcript[turn.segment_index].text) for i, turn in enumerate(run.turns)],
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
            reward=FINAL_REWARD,
            gold=state.get("gold"),
            metadata={"variant": "offline" if offline else "online"},
        )
        return {"output": output, "trajectory": trajectory}

    # -- routing (async like the nodes: LangGraph runs sync callables of an async graph in a thread pool) --
    @staticmethod
    async def after_generate(state: VeriR1State) -> str:
        run = state["progress"]
        if run.error is not None or run.action is None or run.action.finishes:
            return "finish"
        return "retrieve" if run.action.kind == "search" else "note"


def build_veri_r1_graph(
    generator: Generator | None,
    search: SearchTool | None = None,
    config: VeriR1Config | None = None,
    *,
    sampling: SamplingParams | None = None,
) -> Any:
    """The Veri-R1 graph over ``generator`` and ``search`` (the offline variant when ``config.offline``).

    Args:
        generator: the policy (any :class:`~evigraph.generators.base.Generator`), or ``None`` when every run
            supplies one in its :class:`~evigraph.graphs.context.RunContext`.
        search: a search tool (``BM25Search``, ``RemoteSearch`` or anything with ``search(query, k)``); the
            online variant needs one, the offline variant takes the entries as the ``evidence`` input.
        config: limits and options; defaults follow the spec.
        sampling: temperature / top-p / seed; the stop strings and the per-turn cap (``config.max_new_tokens``)
            are the protocol's.

    Returns:
        A compiled graph: ``ainvoke`` takes :class:`VeriR1Inputs` and returns :class:`VeriR1Result`.

    Raises:
        ConfigError: an online graph without a search tool.
    """
    config = config or VeriR1Config()
    if search is None and not config.offline:
        raise ConfigError("online verification needs a search tool (--corpus or --retriever-url), or --offline")
    nodes = _Nodes(generator, search, config, sampling)
    graph = StateGraph(VeriR1State, context_schema=RunContext, input_schema=VeriR1Inputs, output_schema=VeriR1Result)
    graph.add_node("start", nodes.start)
    graph.add_node("generate", nodes.generate, input_schema=_ProgressOnly)
    graph.add_node("finish", nodes.finish)
    graph.add_edge(START, "start")
    graph.add_edge("start", "generate")
    if config.offline:
        graph.add_edge("generate", "finish")
    else:
        graph.add_node("retrieve", nodes.retrieve, input_schema=_ProgressOnly)
        graph.add_node("note", nodes.note, input_schema=_ProgressOnly)
        graph.add_conditional_edges("generate", nodes.after_generate, ["retrieve", "note", "finish"])
        graph.add_edge("retrieve", "generate")
        graph.add_edge("note", "generate")
    graph.add_edge("finish", END)
    return graph.compile(name="veri-r1-offline" if config.offline else "veri-r1")


def build_offline_graph(
    generator: Generator | None, config: VeriR1Config | None = None, *, sampling: SamplingParams | None = None
) -> Any:
    """The offline (OffCV) graph: pass the entries as ``evidence`` (a list of ``Evidence``) with the claim."""
    offline = (config or VeriR1Config()).model_copy(update={"offline": True})
    return build_veri_r1_graph(generator, None, offline, sampling=sampling)
