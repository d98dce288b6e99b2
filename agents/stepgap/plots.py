"""StepGap report plots (specs/stepgap.md §7.3): the gap-type distribution, predicted next to gold when known.

Drawn with :func:`evigraph.evaluation.plots.per_class_bars`, so the conventions are the evaluation engine's: Agg
canvas without pyplot, matplotlib imported only when drawing, the PNG written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evigraph.agents.stepgap.labels import GAP_LABELS, GapLabel
from evigraph.agents.stepgap.metrics import is_degenerate
from evigraph.evaluation.plots import per_class_bars

__all__ = ("gap_distribution_plot",)


def gap_distribution_plot(
    distribution: Mapping[GapLabel, float],
    path: Path,
    *,
    gold: Mapping[GapLabel, float] | None = None,
    title: str = "Share of steps per label",
) -> Path:
    """Write a PNG of bars, one group per label (no-gap, CC, IE, MB): the predicted share, and the gold share
    next to it when ``gold`` is given. A degenerate distribution (§4: IE collapse) is named in the title."""
    series = ["predicted", "gold"] if gold is not None else ["predicted"]
    shares = {
        label: {"predicted": distribution.get(label, 0.0), **({"gold": gold.get(label, 0.0)} if gold else {})}
        for label in GAP_LABELS
    }
    if is_degenerate(distribution):
        title = f"{title} (degenerate: IE collapse)"
    return per_class_bars(shares, series, Path(path), title=title)
