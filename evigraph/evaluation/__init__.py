"""The agent-agnostic evaluation engine behind ``evigraph eval``.

- :mod:`~evigraph.evaluation.records` -- read and validate the whole input up front.
- :mod:`~evigraph.evaluation.runner` -- resumable, concurrent runs whose output file is the checkpoint.
- :mod:`~evigraph.evaluation.plots` -- report PNGs (matplotlib is imported only when a plot is drawn).
- :mod:`~evigraph.evaluation.pipeline` -- run directories: settings pinned in ``run.json``, then a run.
"""

from __future__ import annotations

from evigraph.evaluation.pipeline import prepare_run_dir, run_in_dir
from evigraph.evaluation.plots import ReliabilityBin, confusion_plot, per_class_bars, reliability_plot
from evigraph.evaluation.records import load_records
from evigraph.evaluation.runner import RunSummary, read_results, run_records, write_report

__all__ = (
    "ReliabilityBin",
    "RunSummary",
    "confusion_plot",
    "load_records",
    "per_class_bars",
    "prepare_run_dir",
    "read_results",
    "reliability_plot",
    "run_in_dir",
    "run_records",
    "write_report",
)
