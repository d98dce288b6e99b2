"""Character sets given as half-open spans (pure): union, size, intersection, without materialising sets.

Overlapping and duplicate spans count each character once everywhere (gold unions of several annotators,
a model listing a span twice).
"""

from __future__ import annotations

from collections.abc import Iterable

from evigraph.agents.rlseek.schemas import Span

__all__ = ("covered", "intersection", "merge_spans")


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """The union of ``spans`` as sorted, disjoint, non-empty spans (touching spans merge).

    Example:
        >>> merge_spans([(20, 35), (17, 30), (57, 61), (40, 40)])
        [(17, 35), (57, 61)]
    """
    merged: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def covered(spans: Iterable[Span]) -> int:
    """How many characters the spans cover together."""
    return sum(end - start for start, end in merge_spans(spans))


def intersection(first: Iterable[Span], second: Iterable[Span]) -> int:
    """How many characters both span sets cover.

    Example:
        >>> intersection([(20, 35), (57, 61)], [(11, 61)])
        19
    """
    a, b = merge_spans(first), merge_spans(second)
    i = j = total = 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, high - low)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total
