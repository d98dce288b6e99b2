"""Correlation of evaluator scores with human labels (specs/rag-zeval.md §4.2, O10): Pearson r, Spearman rho and
Kendall tau-b by :mod:`scipy.stats` (imported on first use), the min-max normalisation ``f`` and the pairing of
one score per instance with each annotator's label. All coefficients are fractions in [-1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evigraph.errors import MissingDependencyError

__all__ = ("Correlation", "correlation", "maybe_correlation", "minmax_normalise", "pair_with_annotators")

_FROZEN = ConfigDict(frozen=True)


class Correlation(BaseModel):
    """Pearson r, Spearman ρ and Kendall τ-b between two score lists, as fractions (not ×100)."""

    model_config = _FROZEN

    pearson: float
    spearman: float
    kendall: float
    """τ-b: ties in either list are corrected for (human labels take only five values)."""
    n: int = Field(ge=2)


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError:
        raise MissingDependencyError("scipy", "pip install scipy (RAG-Zeval's meta-evaluation correlations)") from None
    return stats


def _finite(values: Sequence[float], name: str) -> list[float]:
    out = [float(v) for v in values]
    bad = next((i for i, v in enumerate(out) if not math.isfinite(v)), None)
    if bad is not None:
        raise ValueError(f"{name}[{bad}] is {out[bad]}: correlations need finite numbers")
    return out


def correlation(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Pearson, Spearman and Kendall τ-b between ``x`` and ``y`` (scipy.stats).

    Raises:
        ValueError: lengths differ, fewer than 2 points, a non-finite value, or ``x`` / ``y`` constant (the
            coefficients are undefined; scipy would only warn and return NaN).
    """
    xs, ys = _finite(x, "x"), _finite(y, "y")
    if len(xs) != len(ys):
        raise ValueError(f"x has {len(xs)} values but y has {len(ys)}: correlations need pairs")
    if len(xs) < 2:
        raise ValueError(f"a correlation needs at least 2 points, got {len(xs)}")
    for name, values in (("x", xs), ("y", ys)):
        if min(values) == max(values):
            raise ValueError(f"{name} is constant ({values[0]} everywhere): its correlation is undefined")
    stats = _scipy_stats()
    return Correlation(
        pearson=float(stats.pearsonr(xs, ys).statistic),
        spearman=float(stats.spearmanr(xs, ys).statistic),
        kendall=float(stats.kendalltau(xs, ys, variant="b").statistic),
        n=len(xs),
    )


def maybe_correlation(x: Sequence[float], y: Sequence[float]) -> Correlation | None:
    """A breakdown's correlation, or ``None`` where it is undefined (a small subset can be constant)."""
    try:
        return correlation(x, y)
    except ValueError:
        return None


def minmax_normalise(values: Sequence[float], low: float = -2.0, high: float = 2.0) -> list[float]:
    """Map ``values`` linearly onto [low, high] (O10's ``f``: min–max to the human scale [−2, 2]).

    Any increasing linear map leaves all three coefficients unchanged; this one only puts system scores on
    the human labels' scale for reporting.

    Raises:
        ValueError: no values, all values equal (no range to stretch), or ``low >= high``.
    """
    if not low < high:
        raise ValueError(f"low must be below high, got [{low}, {high}]")
    if not values:
        raise ValueError("min-max normalisation needs at least one value")
    lo, hi = min(values), max(values)
    if lo == hi:
        raise ValueError(f"every value is {lo}: min-max normalisation is undefined")
    scale = (high - low) / (hi - lo)
    return [low + (v - lo) * scale for v in values]


def pair_with_annotators(scores: Sequence[float], labels: Sequence[Sequence[int]]) -> tuple[list[float], list[int]]:
    """The §4.2 pairing (O10): instance ``i``'s system score once per annotator label of that instance.

    Args:
        scores: ``e_i`` per instance.
        labels: per instance, its annotators' labels (RAGChecker's release: 2 each, so n = 2 × instances).

    Returns:
        ``(system, human)`` of equal length, instance by instance.
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} system scores but labels for {len(labels)} instances")
    system = [score for score, own in zip(scores, labels, strict=True) for _ in own]
    human = [label for own in labels for label in own]
    return system, human
