"""What a policy turn of a search loop asks for, as a pure function of the turn text and the counters.

Shared by every agent whose protocol has ``<search>``, environment-written ``<information>`` and ``<answer>``
tags (Veri-R1, Search-R1). Order of the checks: a complete answer finishes; the last allowed turn finishes
whatever it holds; a model-written ``<information>`` block is rejected (only the environment writes one); a
non-empty search runs while the budget lasts, else the model is told to answer; anything else is invalid.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evigraph.protocol.tags import TagProtocol

__all__ = ("ActionKind", "TurnAction", "classify_search_turn", "normalize_query")

ActionKind = Literal["answer", "final_turn", "forged_information", "search", "over_budget", "invalid"]


class TurnAction(BaseModel):
    """The routing decision for one policy turn."""

    model_config = ConfigDict(frozen=True)

    kind: ActionKind
    query: str | None = None
    """The search query (``kind == "search"`` or ``"over_budget"``), whitespace-trimmed."""

    @property
    def finishes(self) -> bool:
        return self.kind in {"answer", "final_turn"}


def normalize_query(query: str) -> str:
    """The key duplicate queries are detected by: case-folded, whitespace collapsed."""
    return " ".join(query.split()).casefold()


def classify_search_turn(
    protocol: TagProtocol,
    text: str,
    *,
    n_turns: int,
    n_search: int,
    max_searches: int,
    max_turns: int,
    final: bool = False,
) -> TurnAction:
    """Decide what the turn just generated (``n_turns`` already counts it) asks the environment to do.

    ``final`` marks a turn forced to be the last one for another reason than the turn count (the whole
    sequence's token budget); it finishes like the last allowed turn.
    """
    parsed = protocol.parse(text, writer="policy")
    top = [b for b in parsed.blocks if b.depth == 0]
    if any(b.tag == "answer" for b in top):
        return TurnAction(kind="answer")
    if final or n_turns >= max_turns:
        return TurnAction(kind="final_turn")
    if any(b.tag == "information" for b in parsed.blocks):
        return TurnAction(kind="forged_information")
    searches = [b for b in top if b.tag == "search"]
    if searches and searches[0].content.strip():
        # Generation stops at the first </search>; a backend that ignores stops is held to its first query.
        query = searches[0].content.strip()
        return TurnAction(kind="search" if n_search < max_searches else "over_budget", query=query)
    return TurnAction(kind="invalid")
