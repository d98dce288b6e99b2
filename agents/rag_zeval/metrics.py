"""Ranking metrics of RAG-Zeval runs against a known candidate order (pure functions).

An evaluation of synthesised sets asks how often the evaluator's scores reproduce the CAD order: the full
ranking (§3.3's accuracy, the training signal), the best candidate alone (§3.4), and the share of candidate
pairs in the right strict order (a graded view of the same). Scores are exact fractions, so ties are ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations

from pydantic import BaseModel, ConfigDict

from evigraph.agents.rag_zeval.rewards import ranking_accuracy, top1_accuracy
from evigraph.metrics import mean, ratio

__all__ = ("RankingMetrics", "pairwise_order", "ranking_metrics")


class RankingMetrics(BaseModel):
    """Means over instances; ``n`` instances, ``pairs`` ordered candidate pairs."""

    model_config = ConfigDict(frozen=True)

    n: int
    ranking_accuracy: float
    """Share of instances whose whole order is right (ties fail)."""
    top1_accuracy: float
    """Share of instances whose best candidate scores strictly highest."""
    pairwise_accuracy: float
    """Share of candidate pairs in the right strict order."""
    pair_ties: float
    """Share of candidate pairs scored equal."""
    pairs: int


def pairwise_order(scores: Sequence[Fraction], alphas: Sequence[float]) -> tuple[int, int, int]:
    """``(right, tied, total)`` over every candidate pair of one instance."""
    right = tied = total = 0
    for i, j in combinations(range(len(scores)), 2):
        better, worse = (i, j) if alphas[i] > alphas[j] else (j, i)
        total += 1
        right += scores[better] > scores[worse]
        tied += scores[better] == scores[worse]
    return right, tied, total


def ranking_metrics(instances: Sequence[tuple[Sequence[Fraction], Sequence[float]]]) -> RankingMetrics:
    """Metrics over ``(scores, alphas)`` per instance (both in the same candidate order); all 0 for none."""
    orders = [pairwise_order(s, a) for s, a in instances]
    pairs = sum(o[2] for o in orders)
    return RankingMetrics(
        n=len(instances),
        ranking_accuracy=mean(ranking_accuracy(s, a) for s, a in instances),
        top1_accuracy=mean(top1_accuracy(s, a) for s, a in instances),
        pairwise_accuracy=ratio(sum(o[0] for o in orders), pairs),
        pair_ties=ratio(sum(o[1] for o in orders), pairs),
        pairs=pairs,
    )
