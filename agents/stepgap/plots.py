"""StepGap report plots (specs/stepgap.md §7.3): the predicted vs gold gap-type distribution.

Drawn with :func:`evigraph.evaluation.plots.per_class_bars`, so the conventions are the evaluation engine's: Agg
canvas without pyplot, matplotlib imported only when drawing, the PNG written atomically.
"""

from __future__ import annotations

from pathlib import Path

from evigraph.agents.stepgap.labels import GAP_LABELS
from evigraph.agents.stepgap.metrics import StepGapReport
from evigraph.evaluation.plots import per_class_bars

__all__ = ("gap_distribution_plot",)


def gap_distribution_plot(
    report: StepGapReport, path: Path, *, title: str = "Share of steps per label: predicted vs gold"
) -> Path:
    """Write a PNG of grouped bars, one group per label (no-gap, CC, IE, MB), predicted next to gold.

    A degenerate distribution (§4: IE collapse) is named in the title. Returns ``path``.
    """
    shares = {
        label: {"predicted": report.distribution[label], "gold": report.gold_distribution[label]}
        for label in GAP_LABELS
    }
    if report.degenerate:
        title = f"{title} (degenerate: IE collapse)"
    return per_class_bars(shares, ["predicted", "gold"], Path(path), title=title)
