"""The metrics part of a run's page, from hand-built ``report.json`` contents: nested lists of records drawn as
tables (not JSON), values that were not computed saying why, and the confusion matrix naming its axes."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from evigraph.report import ReportPage, render_page
from evigraph.report.tables import CONFUSION_CORNER, not_computed

REPORT: dict[str, Any] = {
    "n": 3,
    "label_accuracy": 0.5,
    "unretrieved_citation_rate": None,
    "per_class": {
        "SUPPORT": {"n": 2, "precision": 0.5, "recall": 1.0},
        "REFUTE": {"n": 1, "precision": None, "recall": 0.0},
    },
    "confusion": {"SUPPORT": {"SUPPORT": 2}, "REFUTE": {"SUPPORT": 1, "NONE": 0}},
    "confidence": {
        "n": 3,
        "tiers": [
            {"tier": "low", "label": "SUPPORT", "n": 2, "accuracy": 0.5},
            {"tier": "high", "label": "SUPPORT", "n": 0, "accuracy": None},
        ],
        "bins": [
            {"lower": 0.0, "upper": 0.5, "n": 0, "mean_confidence": None, "accuracy": None},
            {"lower": 0.5, "upper": 1.0, "n": 3, "mean_confidence": 0.75, "accuracy": 0.667},
        ],
    },
}


def _metrics_html(report: dict[str, Any]) -> str:
    """The page's metrics section, without the raw report.json under its fold."""
    page = render_page(ReportPage(title="t", metrics=report))
    return page[page.index("<h2>Metrics</h2>") : page.index("<details><summary>report.json")]


def _table(section: str, title: str) -> list[list[str]]:
    """The rows of the table titled ``title``, as lists of cell texts."""
    start = section.index(f'<div class="section-title">{html.escape(title)}</div>')
    table = section[start : section.index("</table>", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    return [[html.unescape(cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)] for row in rows]


def test_the_confidence_block_is_drawn_as_tables_not_json() -> None:
    section = _metrics_html(REPORT)
    assert "&quot;" not in section and "[{" not in section  # no JSON left in the tables
    assert _table(section, "confidence") == [["n", "3"]]
    assert _table(section, "confidence · tiers") == [
        ["tier", "label", "n", "accuracy"],
        ["low", "SUPPORT", "2", "0.500"],
        ["high", "SUPPORT", "0", "n/a (no records)"],
    ]
    bins = _table(section, "confidence · bins")
    assert bins[0] == ["lower", "upper", "n", "mean_confidence", "accuracy"]
    assert bins[1] == ["0.000", "0.500", "0", "n/a (no records)", "n/a (no records)"]
    assert bins[2] == ["0.500", "1.000", "3", "0.750", "0.667"]


def test_a_precision_that_was_not_computed_says_why() -> None:
    section = _metrics_html(REPORT)
    per_class = _table(section, "per_class")
    assert per_class[0] == ["", "n", "precision", "recall"]
    assert per_class[2] == ["REFUTE", "1", "n/a (no predicted positives)", "0.000"]
    assert "null" not in section
    # a top-level number that was not computed says so on its card, never "null"
    assert "n/a (nothing to compute it from)" in section


def test_the_confusion_matrix_names_its_axes() -> None:
    section = _metrics_html(REPORT)
    rows = _table(section, "confusion (rows: gold, columns: predicted)")
    assert rows[0] == [CONFUSION_CORNER, "SUPPORT", "NONE"]
    assert "gold" in CONFUSION_CORNER and "predicted" in CONFUSION_CORNER
    assert rows[1] == ["SUPPORT", "2", "0"]  # a pair never seen is a count of 0
    assert rows[2] == ["REFUTE", "1", "0"]


@pytest.mark.parametrize(
    ("key", "row", "shown"),
    [
        ("precision", None, "n/a (no predicted positives)"),
        ("span_precision", {"n": 4}, "n/a (no predicted positives)"),
        ("recall", None, "n/a (no gold positives)"),
        ("fpr", None, "n/a (no gold negatives)"),
        ("fnr", None, "n/a (no gold positives)"),
        ("accuracy", {"n": 0}, "n/a (no records)"),
        ("confidence", None, "n/a (no record has a confidence)"),
        ("answer_f1", {"n": 5}, "n/a (nothing to compute it from)"),
    ],
)
def test_not_computed_gives_the_reason_that_applies(key: str, row: dict[str, int] | None, shown: str) -> None:
    assert not_computed(key, row) == shown


def test_a_nan_reads_like_a_missing_value() -> None:
    assert "n/a (no gold positives)" in _metrics_html({"recall": float("nan")})
