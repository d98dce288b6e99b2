"""The probability of the predicted label's first token (spec §5.3 / §9 #14), from per-token logprobs."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

from evigraph.tokens import TokenOffsets, token_probability_at

__all__ = ("HIGH_CONFIDENCE", "LOW_CONFIDENCE", "Tier", "confidence_tier", "label_token_probability")

LOW_CONFIDENCE = 0.85
HIGH_CONFIDENCE = 0.95
"""Tiers (spec §4): low below ``LOW_CONFIDENCE``, high above ``HIGH_CONFIDENCE``, mid in between."""

Tier = Literal["low", "mid", "high"]

_LABEL = re.compile(r"Label:\s*(SUPPORT|REFUTE|NOT ENOUGH INFO)", re.IGNORECASE)


def confidence_tier(probability: float) -> Tier:
    if probability < LOW_CONFIDENCE:
        return "low"
    return "high" if probability > HIGH_CONFIDENCE else "mid"


def label_token_probability(
    token_ids: Sequence[int],
    logprobs: Sequence[float],
    decode: Callable[[list[int]], str],
) -> float | None:
    """``exp(logprob)`` of the token that starts the label in the last ``<answer>`` block of the decoded ids.

    The token is found with :class:`~evigraph.tokens.TokenOffsets` (exact even where tokens split characters).
    Returns ``None`` when no label is found or the ids and logprobs do not line up.
    """
    if len(token_ids) != len(logprobs) or not token_ids:
        return None
    offsets = TokenOffsets(token_ids, decode)
    text = offsets.text
    answer_at = text.rfind("<answer>")
    match = _LABEL.search(text, answer_at if answer_at >= 0 else 0)
    if match is None:
        return None
    return token_probability_at(offsets, logprobs, match.start(1))
