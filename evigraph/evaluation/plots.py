"""Report plots from agent-agnostic inputs: a confusion matrix, per-class metric bars, a reliability diagram.

matplotlib is imported inside each function (``import evigraph.evaluation`` stays light) and figures are
built with ``matplotlib.figure.Figure`` + the Agg canvas rather than pyplot: no display is needed, no global
backend is switched under a caller (a notebook keeps its own), and no pyplot figure registry leaks memory.
Every PNG is written atomically (:func:`~evigraph.files.atomic_writer`), so a report folder never holds a half
image.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from evigraph.files import atomic_writer

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ("ReliabilityBin", "confusion_plot", "per_class_bars", "reliability_plot")


class ReliabilityBin(BaseModel):
    """One confidence bin of a reliability diagram: predictions with confidence in ``[lower, upper)``."""

    lower: float = Field(ge=0.0, le=1.0)
    upper: float = Field(ge=0.0, le=1.0)
    accuracy: float = Field(ge=0.0, le=1.0)
    """Fraction of the bin's predictions that were correct."""
    n: int = Field(ge=0)
    """Predictions in the bin; empty bins are not drawn."""


def confusion_plot(
    confusion: Mapping[str, Mapping[str, int]],
    path: Path,
    *,
    title: str,
    gold_order: Sequence[str] | None = None,
    pred_order: Sequence[str] | None = None,
) -> Path:
    """Draw ``confusion[gold][pred]`` counts: rows gold, columns predicted, colour normalised per row.

    Labels default to the gold labels in sorted order; the predicted axis defaults to the gold labels followed
    by any other predicted label (e.g. ``invalid``), so the diagonal lines up. Missing cells count 0.
    """
    golds = list(gold_order) if gold_order is not None else sorted(confusion)
    if pred_order is not None:
        preds = list(pred_order)
    else:
        seen = {label for row in confusion.values() for label in row}
        preds = golds + sorted(seen - set(golds))
    counts = [[int(confusion.get(gold, {}).get(pred, 0)) for pred in preds] for gold in golds]
    # Row-normalised colour shows recall per gold class whatever the class sizes; an empty row stays blank.
    shares = [[count / sum(row) if sum(row) else 0.0 for count in row] for row in counts]

    fig = _figure(width=max(4.0, 1.1 * len(preds) + 2.5), height=max(3.0, 0.8 * len(golds) + 2.0))
    ax = fig.add_subplot()
    ax.set_title(title)
    if not golds or not preds:
        _no_data(ax)
        return _save(fig, path)
    image = ax.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    fig.colorbar(image, ax=ax, label="share of gold row")
    ax.set_xticks(range(len(preds)), labels=preds, rotation=30, ha="right")
    ax.set_yticks(range(len(golds)), labels=golds)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    for i, row in enumerate(counts):
        for j, count in enumerate(row):
            ax.text(j, i, str(count), ha="center", va="center", color="white" if shares[i][j] > 0.6 else "black")
    return _save(fig, path)


def per_class_bars(
    per_class: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str],
    path: Path,
    *,
    title: str,
) -> Path:
    """Grouped bars: one group per class (in mapping order), one bar per metric, y in [0, 1].

    A metric missing for a class (or NaN, e.g. precision of a never-predicted class) leaves a gap.
    """
    classes = list(per_class)
    fig = _figure(width=max(5.0, 0.9 * len(classes) * max(1, len(metrics)) * 0.5 + 3.0), height=4.0)
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_ylim(0.0, 1.05)
    if not classes or not metrics:
        _no_data(ax)
        return _save(fig, path)
    width = 0.8 / len(metrics)
    for k, metric in enumerate(metrics):
        xs, heights = [], []
        for i, name in enumerate(classes):
            value = per_class[name].get(metric)
            if value is None or math.isnan(value):
                continue
            xs.append(i - 0.4 + width * (k + 0.5))
            heights.append(float(value))
        bars = ax.bar(xs, heights, width=width, label=metric)
        ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
    ax.set_xticks(range(len(classes)), labels=classes, rotation=20 if len(classes) > 4 else 0)
    ax.set_xlim(-0.5, len(classes) - 0.5)  # keep a class whose bars are all missing in view
    ax.set_ylabel("score")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def reliability_plot(
    bins: Sequence[ReliabilityBin | tuple[float, float, float, int]],
    path: Path,
    *,
    title: str,
) -> Path:
    """Accuracy per confidence bin as bars over the ``y = x`` diagonal (perfect calibration), counts on top.

    ``bins`` are :class:`ReliabilityBin` or ``(lower, upper, accuracy, n)`` tuples; bins with ``n == 0`` are
    skipped.
    """
    parsed = [
        b if isinstance(b, ReliabilityBin) else ReliabilityBin(lower=b[0], upper=b[1], accuracy=b[2], n=b[3])
        for b in bins
    ]
    drawn = [b for b in parsed if b.n > 0]

    fig = _figure(width=5.0, height=5.0)
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="grey", label="perfect calibration")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.08)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    if drawn:
        bars = ax.bar(
            [b.lower for b in drawn],
            [b.accuracy for b in drawn],
            width=[b.upper - b.lower for b in drawn],
            align="edge",
            edgecolor="black",
            alpha=0.8,
            label="accuracy",
        )
        ax.bar_label(bars, labels=[f"n={b.n}" for b in drawn], fontsize=7, padding=1)
        ax.legend(loc="best", fontsize=8)  # bars can sit anywhere: let matplotlib find the emptiest corner
    else:
        _no_data(ax)
    return _save(fig, path)


def _figure(*, width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _no_data(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")


def _save(fig: Figure, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)  # attaches the Agg canvas: PNG output without pyplot or a display
    with atomic_writer(path, "wb") as handle:
        fig.savefig(handle, format="png")
    return path
