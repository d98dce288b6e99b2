"""What a Veri-R1 policy turn asks for (spec §2.6 ``route``): the shared search-loop classification
(:mod:`evigraph.protocol.actions`) over Veri-R1's tag protocol."""

from __future__ import annotations

from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL
from evigraph.protocol.actions import ActionKind, TurnAction, classify_search_turn, normalize_query

__all__ = ("ActionKind", "TurnAction", "classify_turn", "normalize_query")


def classify_turn(
    text: str, *, n_turns: int, n_search: int, max_searches: int, max_turns: int, final: bool = False
) -> TurnAction:
    """:func:`~evigraph.protocol.actions.classify_search_turn` with Veri-R1's protocol."""
    return classify_search_turn(
        VERI_R1_PROTOCOL,
        text,
        n_turns=n_turns,
        n_search=n_search,
        max_searches=max_searches,
        max_turns=max_turns,
        final=final,
    )
