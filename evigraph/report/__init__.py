"""Static HTML reports of eval runs (``evigraph report RUN --html OUT``): one self-contained page per run.

- :mod:`~evigraph.report.view` -- the view model an agent's ``report_view`` returns for one prediction line;
- :mod:`~evigraph.report.helpers` -- pieces agents' views share, and the generic view of an agent without one;
- :mod:`~evigraph.report.data` -- views as the page's embedded JSON (safe inside a ``<script>`` element);
- :mod:`~evigraph.report.page` -- the HTML page: metrics, plots, the records' filters and pages;
- :mod:`~evigraph.report.run` -- reading a run directory into a page.

``docs/report.md`` says what a report shows; ``docs/adding-an-agent.md`` how an agent adds its view.
"""

from __future__ import annotations

from evigraph.report.page import Plot, ReportPage, render_page
from evigraph.report.run import RunReport, ViewFn, read_run, run_agent
from evigraph.report.view import (
    Block,
    Highlight,
    KeyValuesBlock,
    RecordView,
    TableBlock,
    TextBlock,
    Tone,
    TranscriptBlock,
    TranscriptPiece,
)

__all__ = (
    "Block",
    "Highlight",
    "KeyValuesBlock",
    "Plot",
    "RecordView",
    "ReportPage",
    "RunReport",
    "TableBlock",
    "TextBlock",
    "Tone",
    "TranscriptBlock",
    "TranscriptPiece",
    "ViewFn",
    "read_run",
    "render_page",
    "run_agent",
)
