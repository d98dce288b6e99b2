"""One self-contained HTML page for a run: its facts, metrics and plots drawn here, its records as embedded JSON
that the inlined script pages through (:mod:`evigraph.report.assets`).

The page loads nothing: styles and script are inline, plots are ``data:`` URIs, and a Content-Security-Policy
forbids every fetch and allows only the page's own script (by its hash), so even text that escaped escaping
could not run. Everything drawn here goes through :func:`html.escape`; record text reaches the page only as JSON
(:func:`~evigraph.report.data.script_json`) and is drawn as text by the script.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.report.assets import SCRIPT, STYLE
from evigraph.report.data import FACET_CORRECT, FACET_RUN, record_data, script_json
from evigraph.report.tables import metric_cards, metric_tables
from evigraph.report.view import RecordView

__all__ = ("Plot", "ReportPage", "render_page")


class Plot(BaseModel):
    """One figure of the run (a PNG's bytes and its caption)."""

    model_config = ConfigDict(frozen=True)

    name: str
    png: bytes


class ReportPage(BaseModel):
    """What one page shows."""

    model_config = ConfigDict(frozen=True)

    title: str
    facts: tuple[tuple[str, str], ...] = ()
    """The run's settings in a line each (agent, model, data file ...)."""
    metrics: dict[str, Any] = {}
    """The run's ``report.json``."""
    plots: tuple[Plot, ...] = ()
    records: tuple[RecordView, ...] = ()
    page_size: int = 25


def render_page(page: ReportPage) -> str:
    """The page as one HTML document."""
    records = [record_data(view) for view in page.records]
    facets = _facet_names(records)
    payload = script_json({"facets": facets, "page_size": page.page_size, "records": records})
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    policy = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
    esc = html.escape
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
            f'<meta http-equiv="Content-Security-Policy" content="{esc(policy)}">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            f"<title>{esc(page.title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
            f"<h1>{esc(page.title)}</h1>\n",
            _facts(page.facts),
            _metrics(page.metrics),
            _plots(page.plots),
            "<h2>Records</h2>\n",
            '<div class="legend muted">highlights: <mark class="hl-good">cited / supported</mark>'
            '<mark class="hl-bad">hallucinated / gap</mark><mark class="hl-warn">doubtful</mark>'
            '<mark class="hl-info">quote found in the source</mark><mark class="hl-gold">gold</mark>'
            " (hover a highlight for its note)</div>\n",
            '<div class="controls" id="controls"><span id="filters"></span>',
            '<label>search <input type="search" id="search" placeholder="id, verdict, input text"></label>',
            '<span class="pager"><button id="prev" type="button">&larr; prev</button> ',
            '<button id="next" type="button">next &rarr;</button></span>',
            '<span id="status" class="muted"></span></div>\n',
            "<noscript><p>The records need JavaScript to be shown; the metrics above do not.</p></noscript>\n",
            '<main id="records"></main>\n',
            f'<script type="application/json" id="report-data">{payload}</script>\n',
            f"<script>{SCRIPT}</script>\n</body>\n</html>\n",
        ]
    )


def _facet_names(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Filter names in first-seen order, the page's own ``correct`` first and ``run`` last."""
    names = dict.fromkeys(name for record in records for name in record["facets"])
    middle = [n for n in names if n not in (FACET_CORRECT, FACET_RUN)]
    return [FACET_CORRECT, *middle, FACET_RUN]


def _facts(facts: Sequence[tuple[str, str]]) -> str:
    if not facts:
        return ""
    items = "".join(f"<span>{html.escape(k)}: <b>{html.escape(v)}</b></span>" for k, v in facts)
    return f'<div class="run-info">{items}</div>\n'


def _metrics(report: Mapping[str, Any]) -> str:
    """The report's numbers as cards and tables (:mod:`evigraph.report.tables`), and the whole report as JSON
    under a fold."""
    if not report:
        return '<h2>Metrics</h2>\n<p class="muted">The run has no report.json.</p>\n'
    raw = html.escape(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    tables = "".join(metric_tables(report))
    return (
        f'<h2>Metrics</h2>\n<div class="cards">{metric_cards(report)}</div>\n<div>{tables}</div>\n'
        f"<details><summary>report.json</summary><pre>{raw}</pre></details>\n"
    )


def _plots(plots: Sequence[Plot]) -> str:
    if not plots:
        return ""
    figures = "".join(
        f'<figure><img alt="{html.escape(p.name)}" src="data:image/png;base64,{base64.b64encode(p.png).decode()}">'
        f"<figcaption>{html.escape(p.name)}</figcaption></figure>"
        for p in plots
    )
    return f'<h2>Plots</h2>\n<div class="plots">{figures}</div>\n'
