"""Every agent's report in headless Chromium: the page draws (screenshots checked for content and for the
highlight colours of the first record), no record text runs as script, and the filters, the search and the pages
keep exactly the records they should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.report.browser import Browser
from tests.report.conftest import Report
from tests.report.runs import AGENTS, FILTERS, PAYLOAD, predictions

Image = pytest.importorskip("PIL.Image", reason="the screenshot checks read PNGs with Pillow")

BACKGROUND = (0xF4, 0xF6, 0xF8)
TONES = {"good": (0xBF, 0xEA, 0xC6), "bad": (0xFF, 0xC0, 0xC0), "info": (0xCF, 0xE2, 0xFF)}
"""The highlight colours of the stylesheet (``mark.hl-*``)."""
FIRST_RECORD_TONES = {
    "veri-r1": ("good",),  # the cited entry in the retrieved block
    "stepgap": ("info",),  # the stage-C quote in the passages
    "rlseek": ("bad", "info"),  # the hallucinated span, its quote in the source
    "seva": ("good", "info"),  # the matched claim span, its source span
    "rag-zeval": ("good",),  # the grounding evidence in the reference
}
RENDERED = "[...document.querySelectorAll('#records article.record')].map(a => a.dataset.id)"


def _pixels_near(path: Path, colour: tuple[int, int, int], tolerance: int = 4) -> int:
    image = Image.open(path).convert("RGB")
    return sum(
        count
        for count, pixel in image.getcolors(maxcolors=1 << 24)
        if all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True))
    )


def _drawn_share(path: Path) -> float:
    """Share of pixels that are neither the page background nor white."""
    image = Image.open(path).convert("RGB")
    blank = _pixels_near(path, BACKGROUND, 2) + _pixels_near(path, (255, 255, 255), 2)
    return 1 - blank / (image.width * image.height)


@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_page_draws_its_records_and_runs_no_record_text(
    browser: Browser, reports: dict[str, Report], agent: str, tmp_path: Path
) -> None:
    report = reports[agent]
    browser.open(report.html.as_uri())
    assert browser.evaluate("document.documentElement.dataset.readyMs") is not None  # the script ran under the CSP
    assert browser.evaluate("window.__xss === undefined && document.scripts.length === 2")
    assert browser.evaluate("document.images.length") == len(list(report.run.rglob("*.png")))
    assert PAYLOAD in browser.evaluate("document.getElementById('records').textContent")
    assert browser.evaluate(RENDERED) == [str(line["id"]) for line in predictions(report.run)][:2]  # page size 2
    page = browser.screenshot(tmp_path / f"{agent}.png")
    assert _drawn_share(page) > 0.05, f"{page} looks blank"
    record = browser.screenshot(tmp_path / f"{agent}-record.png", selector="#records article.record")
    for tone in FIRST_RECORD_TONES[agent]:
        assert _pixels_near(record, TONES[tone]) > 50, f"{record}: no {tone} highlight drawn"


@pytest.mark.parametrize("agent", list(AGENTS))
def test_each_filter_keeps_exactly_the_records_it_names(
    browser: Browser, reports: dict[str, Report], agent: str
) -> None:
    lines = predictions(reports[agent].run)
    browser.open(reports[agent].html.as_uri() + "#size=all")
    for facet, value, keeps in FILTERS[agent]:
        expected = [str(line["id"]) for line in lines if keeps(line)]
        select = f"document.querySelector('select[data-facet={json.dumps(facet)}]')"
        options = browser.evaluate(f"[...{select}.options].map(o => o.textContent)")
        assert f"{value} ({len(expected)})" in options
        choose = f"{select}.value = {json.dumps(value)}; {select}.dispatchEvent(new Event('change')); {RENDERED}"
        assert browser.evaluate(choose) == expected, (facet, value)
        assert f"f.{facet.replace(' ', '+')}={value}" in browser.evaluate("location.hash")
        assert browser.evaluate(f"{select}.value = ''; {select}.dispatchEvent(new Event('change')); {RENDERED}") == [
            str(line["id"]) for line in lines
        ]


def test_the_fragment_sets_filters_and_search_on_load_and_the_pager_steps_through(
    browser: Browser, reports: dict[str, Report]
) -> None:
    page = reports["veri-r1"].html.as_uri()
    browser.open(page + "#f.correct=no&size=all")
    assert browser.evaluate(RENDERED) == ["v2", "v3"]
    assert browser.evaluate("document.querySelector('select[data-facet=\"correct\"]').value") == "no"
    browser.open(page + "#q=PAINTED")  # the claim text is searched, in any case
    assert browser.evaluate(RENDERED) == ["v3"]
    browser.open(page)
    assert browser.evaluate(RENDERED) == ["v1", "v2"] and browser.evaluate("document.getElementById('prev').disabled")
    assert browser.evaluate(f"document.getElementById('next').click(); {RENDERED}") == ["v3", "v4"]
    assert browser.evaluate("document.getElementById('next').disabled && location.hash") == "#page=2"
    assert "4 of 4 records match · page 2 of 2" in browser.evaluate("document.getElementById('status').textContent")
