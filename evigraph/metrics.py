"""Classification metrics the agents share: rates, binary and per-class F1, Cohen's κ, balanced accuracy,
confusion matrices and seeded percentile-bootstrap intervals.

Pure functions of counts or of parallel gold/predicted label sequences; every rate is a fraction in [0, 1]. An
agent's metrics module keeps only what its method defines (spans, question-level views, the paper's own error
rates) and calls these for the rest. Conventions for empty denominators, which the agents' specs rely on:

- :func:`ratio` is 0 over nothing, and so is every rate built on it: precision (0 when nothing is flagged),
  recall (0 when the gold has no positive), FPR, FNR, accuracy, :func:`mean`;
- :func:`f1` is ``2TP/(2TP+FP+FN)``, 0 when TP = 0 (a checker that flags nothing scores 0, one that flags
  everything ``2p/(1+p)`` for a positive share p);
- :func:`harmonic_f1` is ``2PR/(P+R)`` of two rates, 0 when both are 0. It equals :func:`f1` in exact
  arithmetic but not always to the last bit, so a spec that defines F1 from P and R keeps it;
- :func:`balanced_accuracy` averages the recall of the classes *present in the gold* (scikit-learn's
  definition): TNR alone when the gold has no positive, TPR alone when it has only positives, 0 on no units;
- :func:`cohen_kappa` is ``(p_o − p_e)/(1 − p_e)``; when p_e = 1 (both raters used one same label) κ = 1.0 if
  p_o = 1 else 0.0; 0 on no items;
- :func:`per_class_f1` scores a fixed class list: a class absent from both gold and prediction has F1 0 and
  still counts in :func:`macro_f1`;
- a bootstrap interval over zero units is the metric of nothing, twice.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = (
    "BinaryCounts",
    "Confusion",
    "Interval",
    "accuracy",
    "balanced_accuracy",
    "binary_counts",
    "bootstrap_ci",
    "bootstrap_cis",
    "cohen_kappa",
    "confusion",
    "f1",
    "false_negative_rate",
    "false_positive_rate",
    "harmonic_f1",
    "macro_f1",
    "mean",
    "one_vs_rest",
    "per_class_f1",
    "precision",
    "ratio",
    "recall",
)

U = TypeVar("U")
Interval = tuple[float, float]
"""A bootstrap interval ``(lower, upper)``; a JSON list ``[lo, hi]``."""
Confusion = dict[str, dict[str, int]]
"""``matrix[gold][predicted]`` counts, rows and columns in first-seen order (or the order given)."""


class BinaryCounts(BaseModel):
    """A 2×2 confusion table."""

    model_config = ConfigDict(frozen=True)

    tp: int = Field(ge=0)
    fp: int = Field(ge=0)
    fn: int = Field(ge=0)
    tn: int = Field(ge=0)


def ratio(part: float, whole: float) -> float:
    """``part / whole``, 0.0 when ``whole`` is 0 (a rate over nothing).

    Example:
        >>> ratio(3, 4), ratio(0, 0)
        (0.75, 0.0)
    """
    return part / whole if whole else 0.0


def mean(values: Iterable[float | int | bool]) -> float:
    """Arithmetic mean; 0.0 for no values (a share over booleans, a mean count, ...).

    Example:
        >>> mean([True, False, True, True]), mean([])
        (0.75, 0.0)
    """
    values = list(values)
    return sum(float(v) for v in values) / len(values) if values else 0.0


def binary_counts(gold: Sequence[bool], pred: Sequence[bool]) -> BinaryCounts:
    """Count the 2×2 table of parallel gold/predicted booleans (True = positive).

    Example:
        >>> binary_counts([True, True, False, False], [True, False, True, False])
        BinaryCounts(tp=1, fp=1, fn=1, tn=1)
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(pred)} predictions for {len(gold)} gold items")
    table = Counter(zip(gold, pred, strict=True))
    return BinaryCounts(tp=table[True, True], fp=table[False, True], fn=table[True, False], tn=table[False, False])


def precision(counts: BinaryCounts) -> float:
    """TP/(TP+FP); 0 when nothing is flagged."""
    return ratio(counts.tp, counts.tp + counts.fp)


def recall(counts: BinaryCounts) -> float:
    """TP/(TP+FN); 0 when the gold has no positive."""
    return ratio(counts.tp, counts.tp + counts.fn)


def false_positive_rate(counts: BinaryCounts) -> float:
    """FP/(FP+TN); 0 when the gold has no negative."""
    return ratio(counts.fp, counts.fp + counts.tn)


def false_negative_rate(counts: BinaryCounts) -> float:
    """FN/(FN+TP) = 1 − recall; 0 when the gold has no positive."""
    return ratio(counts.fn, counts.fn + counts.tp)


def f1(counts: BinaryCounts) -> float:
    """2TP/(2TP+FP+FN), the harmonic mean of precision and recall; 0 when TP = 0.

    Example (specs/stepgap.md §4 M-1, M-2):
        >>> round(f1(BinaryCounts(tp=4, fp=1, fn=2, tn=3)), 4)
        0.7273
        >>> round(f1(BinaryCounts(tp=107, fp=74, fn=0, tn=0)), 4)
        0.7431
    """
    return 2 * counts.tp / (2 * counts.tp + counts.fp + counts.fn) if counts.tp else 0.0


def harmonic_f1(precision: float, recall: float) -> float:
    """2PR/(P+R) of two rates; 0 when both are 0 (for a spec that defines F1 from P and R, see the module doc).

    Example:
        >>> harmonic_f1(0.5, 1.0), harmonic_f1(0.0, 0.0)
        (0.6666666666666666, 0.0)
    """
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def balanced_accuracy(counts: BinaryCounts) -> float:
    """(TPR + TNR)/2 over the classes present in the gold (module doc); 0 on an empty table.

    Example (specs/stepgap.md §4 M-1, M-3):
        >>> round(balanced_accuracy(BinaryCounts(tp=4, fp=1, fn=2, tn=3)), 4)
        0.7083
        >>> balanced_accuracy(BinaryCounts(tp=0, fp=0, fn=107, tn=74))
        0.5
    """
    rates = []
    if counts.tp + counts.fn:
        rates.append(counts.tp / (counts.tp + counts.fn))
    if counts.tn + counts.fp:
        rates.append(counts.tn / (counts.tn + counts.fp))
    return sum(rates) / len(rates) if rates else 0.0


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's κ = (p_o − p_e)/(1 − p_e) of two raters over any categories (labels, or booleans).

    Example (specs/stepgap.md §4 M-7: 5 both-gap, 3 both-no-gap, one disagreement each way):
        >>> first = [True] * 5 + [False] * 3 + [True, False]
        >>> second = [True] * 5 + [False] * 3 + [False, True]
        >>> round(cohen_kappa(first, second), 4)
        0.5833
    """
    if len(a) != len(b):
        raise ValueError(f"{len(b)} labels from the second rater for {len(a)} from the first")
    if not a:
        return 0.0
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    counts_a, counts_b = Counter(a), Counter(b)
    expected = sum(counts_a[c] * counts_b[c] for c in counts_a) / (n * n)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)


def confusion(
    gold: Sequence[str],
    pred: Sequence[str | None],
    *,
    rows: Sequence[str] = (),
    columns: Sequence[str] = (),
    missing: str = "none",
) -> Confusion:
    """The confusion matrix ``matrix[gold][predicted]`` of parallel label sequences.

    Args:
        gold: the gold label of each item.
        pred: the predicted label of each item; ``None`` (no readable label) is counted in the ``missing``
            column, so it lowers the recall of its gold class without being any class's false positive.
        rows: gold labels that get a row even when no item has them (zero-filled, first, in this order).
        columns: predicted labels that every row holds (zero-filled, first, in this order).
        missing: the column name of a missing prediction.

    Raises:
        ValueError: the two sequences differ in length.

    Example:
        >>> confusion(["A", "A", "B"], ["A", None, "A"], rows=["A", "B"], columns=["A", "B"])
        {'A': {'A': 1, 'B': 0, 'none': 1}, 'B': {'A': 1, 'B': 0}}
        >>> confusion(["B", "A"], ["B", "B"])
        {'B': {'B': 1}, 'A': {'B': 1}}
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(pred)} predicted labels for {len(gold)} gold labels")
    matrix = {row: dict.fromkeys(columns, 0) for row in rows}
    for g, p in zip(gold, pred, strict=True):
        cells = matrix.setdefault(g, dict.fromkeys(columns, 0))
        key = missing if p is None else p
        cells[key] = cells.get(key, 0) + 1
    return matrix


def one_vs_rest(matrix: Mapping[str, Mapping[str, int]], label: str) -> BinaryCounts:
    """The 2×2 table of ``label`` against every other column of a confusion matrix (missing ones included).

    Example:
        >>> one_vs_rest({"A": {"A": 2, "B": 1, "none": 1}, "B": {"A": 1, "B": 3}}, "A")
        BinaryCounts(tp=2, fp=1, fn=2, tn=3)
    """
    row = matrix.get(label, {})
    tp = row.get(label, 0)
    fn = sum(row.values()) - tp
    fp = sum(cells.get(label, 0) for gold, cells in matrix.items() if gold != label)
    total = sum(sum(cells.values()) for cells in matrix.values())
    return BinaryCounts(tp=tp, fp=fp, fn=fn, tn=total - tp - fp - fn)


def per_class_f1(matrix: Mapping[str, Mapping[str, int]], classes: Sequence[str]) -> dict[str, float]:
    """One-vs-rest :func:`f1` of each of ``classes`` (a fixed list: a class nobody used scores 0).

    Example:
        >>> per_class_f1(confusion(["A", "A", "B"], ["A", "B", "B"]), ["A", "B", "C"])
        {'A': 0.6666666666666666, 'B': 0.6666666666666666, 'C': 0.0}
    """
    return {label: f1(one_vs_rest(matrix, label)) for label in classes}


def macro_f1(per_class: Mapping[str, float]) -> float:
    """The unweighted mean of per-class F1 (every class counts, whatever its support).

    Example:
        >>> macro_f1({"A": 1.0, "B": 0.5, "C": 0.0})
        0.5
    """
    return mean(per_class.values())


def accuracy(matrix: Mapping[str, Mapping[str, int]]) -> float:
    """The share of items on the diagonal; 0 for an empty matrix.

    Example:
        >>> accuracy({"A": {"A": 2, "none": 1}, "B": {"A": 1, "B": 4}})
        0.75
    """
    right = sum(cells.get(label, 0) for label, cells in matrix.items())
    return ratio(right, sum(sum(cells.values()) for cells in matrix.values()))


def bootstrap_cis(
    units: Sequence[U],
    metrics: Mapping[str, Callable[[Sequence[U]], float]],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Interval]:
    """Percentile-bootstrap intervals of several metrics over the same resamples.

    Each of ``resamples`` draws picks ``len(units)`` units with replacement (``random.Random(seed)``, so a fixed
    seed gives identical intervals); every metric is recomputed on the draw; the interval is the
    ``(1 − level)/2`` and ``(1 + level)/2`` percentiles (linear interpolation, numpy's default).

    Raises:
        ValueError: ``resamples`` below 1, or ``level`` outside (0, 1).
    """
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rng = random.Random(seed)
    draws = [rng.choices(units, k=len(units)) for _ in range(resamples)]
    return {name: _percentile_interval([metric(d) for d in draws], level) for name, metric in metrics.items()}


def bootstrap_ci(
    units: Sequence[U],
    metric: Callable[[Sequence[U]], float],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Percentile-bootstrap interval of one metric of a unit list (see :func:`bootstrap_cis`).

    Example:
        >>> bootstrap_ci([1.0, 1.0, 1.0], mean, resamples=100)
        (1.0, 1.0)
    """
    return bootstrap_cis(units, {"metric": metric}, resamples=resamples, seed=seed, level=level)["metric"]


def _percentile_interval(values: list[float], level: float) -> Interval:
    ordered = sorted(values)

    def percentile(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return percentile((1.0 - level) / 2), percentile((1.0 + level) / 2)
