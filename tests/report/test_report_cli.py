"""`evigraph report RUN --html OUT` over real eval runs of every agent: the page is self-contained, record text
never becomes markup, each agent's view marks what it should, and the filter values are there."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from evigraph.cli.app import run
from tests.report.conftest import Report
from tests.report.runs import AGENTS, FILTERS, PAYLOAD, page_data, predictions


def _pieces(block: dict[str, Any]) -> list[list[str]]:
    if block["kind"] == "text":
        return block["pieces"]
    if block["kind"] == "segments":
        return [p for segment in block["segments"] for p in segment["pieces"]]
    return []


def marked(record: dict[str, Any], tone: str) -> list[str]:
    """The texts of a record's pieces that carry ``tone``."""
    blocks = [*record["input"], *record["trajectory"]]
    return [p[0] for b in blocks for p in _pieces(b) if len(p) > 1 and tone in p[1].split()]


def table(record: dict[str, Any], title: str) -> list[dict[str, str]]:
    """The rows of a record's table whose title starts with ``title``, as dicts by column."""
    found = next(b for b in record["trajectory"] if b["kind"] == "table" and b["title"].startswith(title))
    return [dict(zip(found["columns"], row, strict=True)) for row in found["rows"]]


@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_page_is_self_contained_and_shows_record_text_only_as_data(reports: dict[str, Report], agent: str) -> None:
    report = reports[agent]
    page = report.html.read_text(encoding="utf-8")
    assert PAYLOAD not in page and "<!--" not in page and page.count("</script") == 2
    assert not re.search(r'\b(?:src|href)="(?!data:)', page)  # nothing to fetch: plots are data: URIs
    plots = sorted(report.run.rglob("*.png"))
    assert page.count('src="data:image/png;base64,') == len(plots)  # rlseek and rag-zeval draw none
    data = page_data(page)
    lines = predictions(report.run)
    assert [r["id"] for r in data["records"]] == [str(line["id"]) for line in lines] and data["page_size"] == 2
    assert any(PAYLOAD in p[0] for r in data["records"] for b in r["input"] for p in _pieces(b))  # kept as text
    metrics = json.loads((report.run / "report.json").read_text(encoding="utf-8"))
    shown = [k for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    assert shown and all(f'<div class="k">{k}</div>' in page for k in shown)


@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_filter_values_are_the_records_own(reports: dict[str, Report], agent: str) -> None:
    data = page_data(reports[agent].html.read_text(encoding="utf-8"))
    by_id = {r["id"]: r for r in data["records"]}
    assert data["facets"][0] == "correct" and data["facets"][-1] == "run"
    for facet, value, keeps in FILTERS[agent]:
        expected = {str(line["id"]) for line in predictions(reports[agent].run) if keeps(line)}
        assert expected, (facet, value)
        assert {i for i, r in by_id.items() if value in r["facets"].get(facet, [])} == expected, (facet, value)


def test_veri_r1_marks_cited_entries_in_the_retrieved_text(reports: dict[str, Report]) -> None:
    records = {r["id"]: r for r in page_data(reports["veri-r1"].html.read_text(encoding="utf-8"))["records"]}
    tower = "[[Tower_sentence_0]]: Tower was first lit in 1850 by the harbour board."
    assert marked(records["v1"], "good") == [tower]  # cited and gold
    assert marked(records["v4"], "warn") == [tower]  # cited, not gold
    assert marked(records["v4"], "gold") == ["[[Other_sentence_1]]: Unrelated ‹/script>‹!-- text with ‹b>tags‹/b>."]
    segments = next(b for b in records["v1"]["trajectory"] if b["kind"] == "segments")["segments"]
    assert [s["tag"] for s in segments] == ["plan", "search", "information", "think", "answer"]


def test_stepgap_shows_labels_repairs_paths_and_the_quote_in_the_passages(reports: dict[str, Report]) -> None:
    records = {r["id"]: r for r in page_data(reports["stepgap"].html.read_text(encoding="utf-8"))["records"]}
    for line in predictions(reports["stepgap"].run):
        rows = table(records[line["id"]], "step checks")
        checks = line["output"]["checks"]["steps"]
        assert [r["label"] for r in rows] == [c["label"] for c in checks]
        assert [r["pipeline_path"] for r in rows] == [c["pipeline_path"] for c in checks]
        assert [r["repair"] for r in rows] == [c["repair"] for c in checks]
    assert marked(records["q1"], "info") == ["Tower was first lit in 1850"]


def test_rlseek_marks_spans_in_the_response_and_quotes_in_the_source(reports: dict[str, Report]) -> None:
    records = {r["id"]: r for r in page_data(reports["rlseek"].html.read_text(encoding="utf-8"))["records"]}
    assert marked(records["r1"], "bad") == ["1899"] and marked(records["r1"], "gold") == ["1899"]
    assert marked(records["r1"], "info") == ["completed in 1889"]
    assert marked(records["r2"], "bad") == [] and marked(records["r2"], "info") == ["It is 330 metres tall."]


def test_seva_shows_alignments_and_the_error_type(reports: dict[str, Report]) -> None:
    records = {r["id"]: r for r in page_data(reports["seva"].html.read_text(encoding="utf-8"))["records"]}
    assert marked(records["a"], "good") == ["opened in 1932"] and marked(records["b"], "bad") == ["opened in 1935"]
    source = next(b for b in records["a"]["input"] if b["title"] == "source")
    quoted = [p for p in source["pieces"] if len(p) > 1]  # the alignment's and a chain step's span: one piece
    assert quoted == [["opened to traffic in March 1932", "info", "alignment 1; chain step 1; chain step 2"]]
    assert [r["status"] for r in table(records["b"], "evidence alignment")] == ["mismatch"]
    assert "temporal_shift" in records["b"]["verdict"] and records["b"]["facets"]["error type"] == ["temporal_shift"]


def test_rag_zeval_shows_claims_evidence_and_the_ranking_with_ties(reports: dict[str, Report]) -> None:
    records = {r["id"]: r for r in page_data(reports["rag-zeval"].html.read_text(encoding="utf-8"))["records"]}
    evidence = "The bridge over the river opened to traffic in March 1932."
    assert marked(records["s0"], "good") == [evidence]
    assert [r["answer"] for r in table(records["s0"], "ranking")] == ["answer 1", "answer 2"]
    assert [r["S"] for r in table(records["s1"], "ranking")] == ["1.000 (tie)", "1.000 (tie)"]
    assert records["s1"]["verdict"] == "answer 1 (1/1) = answer 2 (1/1)"
    assert [r["supported"] for r in table(records["s0"], "claims of answer 2")] == ["no"]


def test_report_names_a_bad_run_directory_and_draws_an_unnamed_agents_run_generically(
    reports: dict[str, Report], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["report", str(tmp_path / "missing")]) == 2
    assert "no such run directory" in capsys.readouterr().err
    assert run(["report", str(reports["seva"].run), "--agent", "no-such-agent"]) == 2
    assert "unknown agent 'no-such-agent'" in capsys.readouterr().err
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(reports["seva"].run / "predictions.jsonl", bare)  # no run.json: the agent is unknown
    assert run(["report", str(bare)]) == 0
    assert "names no agent" in capsys.readouterr().err
    data = page_data((bare / "report.html").read_text(encoding="utf-8"))
    assert [r["id"] for r in data["records"]] == ["a", "b"]
    assert [b["title"] for b in data["records"][0]["trajectory"]] == ["policy turn", "output", "gold"]
    assert run(["report", str(bare), "--agent", "seva", "--html", str(tmp_path / "seva.html")]) == 0
    assert marked(page_data((tmp_path / "seva.html").read_text(encoding="utf-8"))["records"][0], "good")
