"""The Veri-R1 graph (specs/veri-r1.md §2): online claim verification, plan → (search → information → think)* →
answer, and its offline variant (entries given in the prompt, one reasoning-and-answer turn).

The turn loop is the shared search loop (:mod:`evigraph.graphs.kit.search_loop`): ``start`` (the prompt) →
``generate`` (one policy turn) → ``retrieve`` (run the search, add the information block) or ``note`` (a
corrective note) → back to ``generate``; a final turn goes to ``finish``. :class:`VeriR1Policy` tells the loop
Veri-R1's words: every decision is a plain function of :mod:`evigraph.agents.veri_r1` (turn routing, prompts
and notes, the verdict, rewards). Usage::

    graph = build_veri_r1_graph(generator, search)
    result = await graph.ainvoke({"claim": "Hog Island Light was first lit in 1853."})
    result["output"].label, result["output"].evidence, result["trajectory"]

Per-run settings (the generator, sampling, a whole-sequence token budget, strict token mode) come through
LangGraph's run context (:class:`~evigraph.graphs.kit.context.RunContext`), so one compiled graph serves many
concurrent runs; all per-run data lives in the state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from typing_extensions import TypedDict

from evigraph.agents.veri_r1.actions import TurnAction, classify_turn
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
from evigraph.generators.types import SamplingParams
from evigraph.graphs.kit.context import RunScope
from evigraph.graphs.kit.search_loop import LoopLimits, LoopTexts, Opening, Progress, build_search_loop, turn_steps
from evigraph.tools.search import SearchTool, render_information
from evigraph.trajectory import Evidence, Step, Trajectory

__all__ = ("AGENT_NAME", "VeriR1Policy", "VeriR1State", "build_offline_graph", "build_veri_r1_graph")

AGENT_NAME = "veri-r1"


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


class VeriR1Policy:
    """Veri-R1's side of the search loop (online, or offline: the entries given, one turn, no search)."""

    agent = AGENT_NAME
    reward = FINAL_REWARD

    texts = LoopTexts(
        render_hits=render_information,
        information=information_turn,
        duplicate_note=duplicate_query_note,
        answer_now_note=answer_now_note,
        correction=correction_note,
    )

    def __init__(self, config: VeriR1Config) -> None:
        self.config = config
        self.constrained = config.constrained
        self.searches = not config.offline
        stops = VERI_R1_PROTOCOL.stop_strings(*(("answer",) if config.offline else ("search", "answer")))
        self.limits = LoopLimits.of(config, stops=stops, turn_cap=config.turn_cap)

    def opening(self, state: Mapping[str, Any], *, guided: bool) -> Opening:
        claim = state["claim"]
        if self.config.offline:
            # JSON callers (a training label, a host agent's state) hand the entries over as dicts.
            given = [e if isinstance(e, Evidence) else Evidence.model_validate(e) for e in state.get("evidence") or []]
            return Opening(offline_prompt(claim, given), claim, tuple(dict.fromkeys(e.id for e in given)))
        demonstration = self.config.demonstration
        if demonstration is None:
            demonstration = guided
        prompt = online_prompt(
            claim,
            max_searches=self.config.max_searches,
            demonstration=demonstration,
            brief=self.config.prompt == "brief",
        )
        return Opening(prompt, claim)

    def guide(self, run: Progress, *, first: bool, may_search: bool) -> str | None:
        return turn_regex(
            first=first,
            may_search=may_search,
            seen_ids=run.seen_ids,
            claim=None if self.config.offline else run.subject,
            max_block_chars=self.config.guide_max_block_chars,
        )

    def classify(self, text: str, *, n_turns: int, n_search: int, final: bool) -> TurnAction:
        config = self.config
        return classify_turn(
            text,
            n_turns=n_turns,
            n_search=n_search,
            max_searches=config.max_searches,
            max_turns=config.turns,
            final=final,
        )

    def conclude(self, run: Progress, state: Mapping[str, Any], scope: RunScope) -> BaseModel:
        return conclude(
            run.transcript,
            self.config,
            seen_ids=run.seen_ids,
            queries=run.queries,
            duplicate_queries=sum(1 for t in run.turns if t.duplicate_of is not None),
            n_turns=run.n_turns,
            n_searches=run.n_search,
            decode=scope.decode,
        )

    def run_inputs(self, state: Mapping[str, Any], run: Progress) -> dict[str, Any]:
        return {"claim": state["claim"], **({"evidence_ids": list(run.seen_ids)} if self.config.offline else {})}

    def steps(self, run: Progress) -> list[Step]:
        return turn_steps(run)

    def metadata(self) -> dict[str, Any]:
        return {"variant": "offline" if self.config.offline else "online"}


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
            supplies one in its :class:`~evigraph.graphs.kit.context.RunContext`.
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
    return build_search_loop(
        VeriR1Policy(config),
        generator,
        search,
        state_schema=VeriR1State,
        input_schema=VeriR1Inputs,
        output_schema=VeriR1Result,
        name="veri-r1-offline" if config.offline else "veri-r1",
        sampling=sampling,
    )


def build_offline_graph(
    generator: Generator | None, config: VeriR1Config | None = None, *, sampling: SamplingParams | None = None
) -> Any:
    """The offline (OffCV) graph: pass the entries as ``evidence`` (a list of ``Evidence``) with the claim."""
    offline = (config or VeriR1Config()).model_copy(update={"offline": True})
    return build_veri_r1_graph(generator, None, offline, sampling=sampling)
