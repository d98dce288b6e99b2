"""The metrics part of a run's page: ``report.json`` drawn as cards and tables, never as raw JSON.

``report.json`` is the agent's own shape, so the drawing is generic: a top-level number is a card; a mapping of
mappings is a grid (rows: its keys); any other mapping is a two-column table whose lists of records become
tables of their own; a list of records is a table with a column per field. A value that was not computed
(``null`` or NaN) says why where the reason follows from the metric or its row: a precision with no predicted
positives, a row over no records. A key named ``confusion`` holds ``gold → predicted → count`` (as
:func:`evigraph.metrics.confusion` builds it), and its grid names the two axes.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ("metric_cards", "metric_tables", "not_computed")

_COUNT_KEYS = ("n", "count", "support")
_UNDEFINED_WHEN = {
    # A rate is undefined exactly when its denominator is empty; these are the denominators of the usual ones.
    "precision": "no predicted positives",
    "recall": "no gold positives",
    "fnr": "no gold positives",
    "fpr": "no gold negatives",
    # A confidence, or an analysis of them, exists only where the model's logprobs gave one.
    "confidence": "no record has a confidence",
}
_NOTHING = "nothing to compute it from"
CONFUSION_CORNER = "gold ↓ · predicted →"


def not_computed(key: str, row: Mapping[str, Any] | None = None) -> str:
    """What a missing value of metric ``key`` shows: ``n/a`` and why (``row``: the table row it sits in)."""
    if row is not None and any(row.get(k) == 0 for k in _COUNT_KEYS):
        return "n/a (no records)"  # the plainest reason, true whatever the metric
    name = key.lower()
    reason = next((why for metric, why in _UNDEFINED_WHEN.items() if metric in name), _NOTHING)
    return f"n/a ({reason})"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def _records(value: Any) -> bool:
    """A non-empty list of mappings (one table row each)."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, Mapping) for item in value)


def _grid(value: Any) -> bool:
    """A non-empty mapping of mappings (rows × columns)."""
    return isinstance(value, Mapping) and bool(value) and all(isinstance(v, Mapping) for v in value.values())


def _text(key: str, value: Any, row: Mapping[str, Any] | None = None) -> str:
    """One cell's text: numbers rounded, a missing value with its reason, a compound value as ``k: v`` text."""
    if _missing(value):
        return not_computed(key, row)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) >= 1000 else f"{value:.3f}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_text(str(k), v, value)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_text(key, v) for v in value)
    return str(value)


def _cell(key: str, value: Any, row: Mapping[str, Any] | None = None) -> str:
    css = "num" if isinstance(value, int | float) or _missing(value) else "mono" if not _scalar(value) else ""
    return f'<td class="{css}">{html.escape(_text(key, value, row))}</td>'


def _table(title: str, rows: str) -> str:
    heading = f'<div class="section-title">{html.escape(title)}</div>'
    return f'<div class="metric-table">{heading}<table>{rows}</table></div>'


def _grid_table(name: str, value: Mapping[str, Mapping[str, Any]]) -> str:
    """Rows are ``value``'s keys, columns the keys of its rows; a confusion matrix names its axes."""
    esc = html.escape
    confusion = "confusion" in name.lower()
    columns = list(dict.fromkeys(c for row in value.values() for c in row))
    corner = esc(CONFUSION_CORNER) if confusion else ""
    head = f"<tr><th>{corner}</th>" + "".join(f"<th>{esc(str(c))}</th>" for c in columns) + "</tr>"
    body = "".join(
        f"<tr><th>{esc(str(key))}</th>"
        + "".join(_cell(str(c), cells.get(c, 0 if confusion else ""), cells) for c in columns)
        + "</tr>"
        for key, cells in value.items()
    )
    title = f"{name} (rows: gold, columns: predicted)" if confusion else name
    return _table(title, head + body)


def _records_table(title: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """One row per record, one column per field (in first-seen order)."""
    esc = html.escape
    columns = list(dict.fromkeys(c for row in rows for c in row))
    head = "<tr>" + "".join(f"<th>{esc(str(c))}</th>" for c in columns) + "</tr>"
    body = "".join("<tr>" + "".join(_cell(str(c), row.get(c), row) for c in columns) + "</tr>" for row in rows)
    return _table(title, head + body)


def _mapping_tables(name: str, value: Mapping[str, Any]) -> list[str]:
    """A two-column table of ``value``'s plain entries, then a table of each nested table-shaped entry."""
    esc = html.escape
    nested = {k: v for k, v in value.items() if _records(v) or _grid(v)}
    plain = "".join(
        f"<tr><th>{esc(str(k))}</th>{_cell(str(k), v, value)}</tr>" for k, v in value.items() if k not in nested
    )
    tables = [_table(name, plain)] if plain else []
    for key, inner in nested.items():
        title = f"{name} · {key}"
        tables.append(_records_table(title, inner) if _records(inner) else _grid_table(title, inner))
    return tables


def metric_cards(report: Mapping[str, Any]) -> str:
    """A card per top-level number of ``report`` (a missing one says why)."""
    esc = html.escape
    return "".join(
        f'<div class="card"><div class="k">{esc(str(k))}</div><div class="v">{esc(_text(str(k), v))}</div></div>'
        for k, v in report.items()
        if _scalar(v)
    )


def metric_tables(report: Mapping[str, Any]) -> list[str]:
    """A table (or several) per top-level entry of ``report`` that is not a number."""
    tables: list[str] = []
    for name, value in report.items():
        if _grid(value):
            tables.append(_grid_table(str(name), value))
        elif isinstance(value, Mapping) and value:
            tables.extend(_mapping_tables(str(name), value))
        elif _records(value):
            tables.append(_records_table(str(name), value))
        elif isinstance(value, list) and value:
            tables.append(_table(str(name), f"<tr>{_cell(str(name), value)}</tr>"))
    return tables
