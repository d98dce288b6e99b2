"""Group-relative normalisation: the one implementation of ``(x - mean) / (std + eps)`` that GRPO-style
advantages use, whoever computes them (the trainer's advantage modes, :mod:`evigraph.training.advantages`; an
agent's own worked examples, StepGap's §3.4).

Standard deviations are unbiased (N - 1), as torch's default that OpenRLHF uses; one value has std 0. Sums are
exact (``math.fsum``), so the result does not depend on the order values arrive in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ("mean_std", "pooled_standardise", "standardise")


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and unbiased std (``(0.0, 0.0)`` for no values; std 0 for one).

    Example:
        >>> mean_std([1.0, 0.0, 1.0, 0.0])
        (0.5, 0.5773502691896257)
    """
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    mean = math.fsum(values) / n
    if n < 2:
        return mean, 0.0
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def standardise(values: Sequence[float], *, eps: float) -> list[float]:
    """``(v - mean) / (std + eps)`` for every value (see :func:`mean_std`).

    Example (OpenRLHF's ``group_norm`` on outcomes 1, 0, 1, 0):
        >>> [round(a, 3) for a in standardise([1.0, 0.0, 1.0, 0.0], eps=1e-9)]
        [0.866, -0.866, 0.866, -0.866]
    """
    mean, std = mean_std(values)
    return [(v - mean) / (std + eps) for v in values]


def pooled_standardise(rows: Sequence[Sequence[float]], *, eps: float) -> list[list[float]]:
    """:func:`standardise` with mean and std pooled over every value of every row; the result keeps the rows'
    ragged shape (token-level advantages of a group: one row per rollout, one value per action token).

    Example:
        >>> pooled_standardise([[1.0, 1.0], [0.0]], eps=0.0)
        [[0.5773502691896257, 0.5773502691896257], [-1.1547005383792512]]
    """
    flat = standardise([v for row in rows for v in row], eps=eps)
    out: list[list[float]] = []
    start = 0
    for row in rows:
        out.append(flat[start : start + len(row)])
        start += len(row)
    return out
