"""The probability of the predicted label's first token (spec §5.3 / §9 #14), from per-token logprobs."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Literal

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
    text: str,
    token_ids: Sequence[int],
    logprobs: Sequence[float],
    decode: Callable[[list[int]], str],
) -> float | None:
    """``exp(logprob)`` of the token that starts the label in the last ``<answer>`` block of ``text``.

    ``text`` must be the decoding of ``token_ids`` (what every token backend returns). Token boundaries come
    from decoding growing prefixes, so multi-byte characters and merged spaces are handled by the
    tokenizer itself. Returns ``None`` when no label is found or the ids and logprobs do not line up.
    """
    if len(token_ids) != len(logprobs) or not token_ids:
        return None
    answer_at = text.rfind("<answer>")
    match = _LABEL.search(text, answer_at if answer_at >= 0 else 0)
    if match is None:
        return None
    label_at = match.start(1)
    # The first token whose decoded prefix reaches past the label's first character carries it; prefix
    # lengths only grow, so a binary search needs O(log n) decodes.
    lo, hi = 0, len(token_ids) - 1
    if len(decode(list(token_ids))) <= label_at:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if len(decode(list(token_ids[: mid + 1]))) > label_at:
            hi = mid
        else:
            lo = mid + 1
    return math.exp(logprobs[lo])
