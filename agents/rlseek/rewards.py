"""RLSeek's reward components (specs/rlseek.md §3), as pure functions of parsed quantities.

- :func:`span_reward` (§3.1): 1 when both the list and the gold are empty, else character span-F1 with
  unmatched strings counted as false-positive ("phantom") characters; 0 on a parse failure.
- :func:`quotation_penalty` (§3.2): 0.5 for an invalid quotation set, else the mean over quotes of
  ``1 - LCS(Q_i, D) / |Q_i|``; :func:`step_penalties` splits it over the steps (they sum to the penalty).
- :func:`final_reward` (§3.3): ``r_span - r_penalty`` in ``[-1, 1]``.

CAPO (halving advantages of non-hallucinated samples) acts on advantages, not rewards: it is the trainer's.
"""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.agents.rlseek.schemas import Span
from evigraph.agents.rlseek.spans import covered, intersection

__all__ = ("INVALID_PENALTY", "final_reward", "quotation_penalty", "span_reward", "step_penalties")

INVALID_PENALTY = 0.5
"""The fixed penalty of an invalid quotation set (a step without quote, an empty quote, a broken tag)."""

QuoteOverlap = tuple[int, int]
"""``(LCS(Q_i, D), |Q_i|)`` of one quote, in characters after whitespace collapsing."""


def span_reward(
    predicted: Sequence[Span], gold: Sequence[Span], *, phantom_chars: int = 0, listed: bool, parse_ok: bool
) -> float:
    """``r_span`` (§3.1), in ``[0, 1]``.

    Args:
        predicted: the matched spans (P5); overlaps count once.
        gold: the gold spans; overlaps count once.
        phantom_chars: total length of listed strings found nowhere in the response.
        listed: the final list held at least one non-blank string.
        parse_ok: a final list was parsed (P2: otherwise 0).

    Example (S7):
        >>> round(span_reward([(20, 35)], [(20, 35), (57, 61)], phantom_chars=23, listed=True, parse_ok=True), 6)
        0.526316
    """
    if not parse_ok:
        return 0.0
    gold_size = covered(gold)
    if not listed and gold_size == 0:
        return 1.0
    hits = intersection(predicted, gold)
    if hits == 0:
        return 0.0
    return 2 * hits / (covered(predicted) + phantom_chars + gold_size)


def quotation_penalty(overlaps: Sequence[QuoteOverlap], *, valid: bool) -> float:
    """``r_penalty`` (§3.2), in ``[0, 1]``: :data:`INVALID_PENALTY` when the set is invalid (or holds no quote),
    else the mean over quotes of ``1 - LCS / |Q|``.

    Example (Q5):
        >>> round(quotation_penalty([(10, 30), (11, 15)], valid=True), 6)
        0.466667
    """
    if not valid or not overlaps:
        return INVALID_PENALTY
    return sum(_miss(lcs, length) for lcs, length in overlaps) / len(overlaps)


def step_penalties(steps: Sequence[Sequence[QuoteOverlap]], *, broken: Sequence[bool]) -> list[float]:
    """Each step's share of :func:`quotation_penalty`, for dense credit: a valid set splits the mean over the
    steps holding the quotes (``sum_i∈step (1 - LCS/|Q|) / |Q|``); an invalid one charges
    :data:`INVALID_PENALTY` to the steps that broke it (``broken``), equally. The shares sum to the penalty.

    Example:
        >>> [round(p, 6) for p in step_penalties([[(17, 17), (12, 28)], [(22, 22)]], broken=[False, False])]
        [0.190476, 0.0]
        >>> step_penalties([[(17, 17)], []], broken=[False, True])
        [0.0, 0.5]
    """
    culprits = [i for i, bad in enumerate(broken) if bad]
    n_quotes = sum(len(s) for s in steps)
    if culprits or n_quotes == 0:
        charged = culprits or list(range(len(steps)))
        share = INVALID_PENALTY / len(charged) if charged else 0.0
        return [share if i in charged else 0.0 for i in range(len(steps))]
    return [sum(_miss(lcs, length) for lcs, length in quotes) / n_quotes for quotes in steps]


def final_reward(span: float, penalty: float) -> float:
    """``r_final = r_span - r_penalty`` (§3.3)."""
    return span - penalty


def _miss(lcs: int, length: int) -> float:
    return 1.0 - lcs / length if length else 1.0
