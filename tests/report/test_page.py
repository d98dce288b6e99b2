"""The report's generic parts without a browser or an eval: highlights cut into pieces, JSON safe inside a
``<script>`` element, the page's escaping and script hash, the view model's checks, reading a run directory."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evigraph.errors import ConfigError, InputDataError
from evigraph.report import Highlight, RecordView, ReportPage, TableBlock, TextBlock, read_run, render_page
from evigraph.report.data import pieces, record_data, script_json
from evigraph.report.helpers import generic_view
from tests.cli import write_jsonl


def test_overlapping_highlights_are_cut_at_every_edge_with_both_tones() -> None:
    marks = [Highlight(start=1, end=4, tone="bad", note="span"), Highlight(start=3, end=6, tone="gold", note="gold")]
    assert pieces("abcdefg", marks) == [
        ["a"],
        ["bc", "bad", "span"],
        ["d", "bad gold", "span; gold"],
        ["ef", "gold", "gold"],
        ["g"],
    ]
    # An empty highlight marks nothing; a text without highlights is one piece.
    assert pieces("abc", [Highlight(start=1, end=1)]) == [["abc"]]
    assert pieces("", []) == [[""]]


def test_highlights_are_cut_on_code_points_so_an_emoji_does_not_shift_later_spans() -> None:
    text = "🙂 ok 1899"
    assert pieces(text, [Highlight(start=text.index("1899"), end=len(text), tone="bad")])[-1] == ["1899", "bad", ""]


@pytest.mark.parametrize(
    "value",
    [
        "</script><script>alert(1)</script>",
        "<!-- <script> -->",
        "a & b > c \u2028 \u2029",
        {"k</script>": ["<!--", "</SCRIPT >"]},
    ],
)
def test_script_json_holds_no_markup_and_reads_back_the_same(value: Any) -> None:
    text = script_json(value)
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == value


def test_the_view_model_refuses_spans_outside_their_text_and_ragged_tables() -> None:
    with pytest.raises(ValidationError, match="ends past the text"):
        TextBlock(title="t", text="abc", highlights=(Highlight(start=1, end=4),))
    with pytest.raises(ValidationError, match="before its start"):
        Highlight(start=3, end=2)
    with pytest.raises(ValidationError, match="row 0 has 1 cells"):
        TableBlock(title="t", columns=("a", "b"), rows=(("x",),))
    with pytest.raises(ValidationError, match="1 tones for 2 rows"):
        TableBlock(title="t", columns=("a",), rows=(("x",), ("y",)), tones=("good",))


def test_the_page_escapes_what_it_draws_and_allows_only_its_own_script() -> None:
    view = RecordView(id="<i>1</i>", verdict="</script>", facets={"label": ("<b>",)}, scores={"r": float("nan")})
    page = render_page(
        ReportPage(title="<title>&", metrics={"<m>": 0.5, "per": {"<row>": {"<col>": 1}}}, records=(view,))
    )
    assert "<title>&lt;title&gt;&amp;</title>" in page and "&lt;m&gt;" in page and "&lt;row&gt;" in page
    assert page.count("</script>") == 2 and "<!--" not in page and "<i>" not in page and "<b>" not in page
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)[1])
    assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)[1])
    record = data["records"][0]
    assert record["verdict"] == "</script>" and record["scores"] == {"r": None}  # NaN is not JSON
    assert data["facets"] == ["correct", "label", "run"] and record["facets"]["correct"] == ["unscored"]


def test_record_data_adds_the_pages_own_facets() -> None:
    data = record_data(RecordView(id="1", verdict="v", correct=False, error="boom", facets={"x": ("a", "b")}))
    assert data["facets"] == {"correct": ["no"], "x": ["a", "b"], "run": ["failed"]}


def _line(**extra: Any) -> dict[str, Any]:
    trajectory = {
        "agent": "x",
        "input": {"claim": "<b>c</b>", "n": 3},
        "segments": [
            {"origin": "prompt", "role": "user", "text": "the prompt"},
            {"origin": "policy", "text": "the reply"},
        ],
    }
    return {"id": 1, "output": {"label": "YES"}, "gold": {"id": "1", "label": "NO"}, "trajectory": trajectory, **extra}


def test_the_generic_view_shows_inputs_turns_and_output() -> None:
    view = generic_view(_line(rewards={"r": 1, "flag": True}))
    assert view.id == "1" and view.verdict == "YES" and view.gold == '{"label": "NO"}'
    assert [b.title for b in view.input] == ["claim", "n"]
    assert [b.title for b in view.trajectory] == ["policy turn", "output", "gold"]  # the prompt is left out
    assert view.scores == {"r": 1.0}


def test_read_run_falls_back_to_the_generic_view_for_a_line_the_agents_view_cannot_read(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "predictions.jsonl", [_line(), _line(id=2, output=None, error={"type": "E", "message": "m"})]
    )
    (tmp_path / "run.json").write_text(json.dumps({"agent": "x", "generator": {"model": "m"}}), encoding="utf-8")

    def view(line: dict[str, Any]) -> RecordView:
        return RecordView(id=str(line["id"]), verdict=line["output"]["label"])  # fails on the failed run

    report = read_run(tmp_path, view)
    assert report.view_failures == 1 and "predictions.jsonl:2: report view failed: TypeError" in report.first_failure
    first, second = report.page.records
    assert first.verdict == "YES" and first.error is None
    assert second.error.startswith("E: m; ") and "report view failed" in second.error
    assert ("agent", "x") in report.page.facts and ("model", "m") in report.page.facts


def test_read_run_names_what_is_wrong_with_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such run directory"):
        read_run(tmp_path / "missing", None)
    with pytest.raises(ConfigError, match=r"holds no predictions\.jsonl"):
        read_run(tmp_path, None)
    (tmp_path / "predictions.jsonl").write_text('{"id": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(InputDataError, match=r"predictions.jsonl:2"):
        read_run(tmp_path, None)
    (tmp_path / "predictions.jsonl").write_text('{"id": 1}\n{"id": 2, "tor', encoding="utf-8")  # a run still writing
    assert [r.id for r in read_run(tmp_path, None).page.records] == ["1"]
    with pytest.raises(ConfigError, match="page size"):
        read_run(tmp_path, None, page_size=0)


def test_veri_r1_shows_given_entries_only_for_an_offline_prompt() -> None:
    from evigraph.agents.veri_r1.prompts import offline_prompt, online_prompt
    from evigraph.agents.veri_r1.report_view import _given_entries
    from evigraph.trajectory import Evidence

    offline = offline_prompt("It rains.", [Evidence(id="Rain_sentence_0", text="Rain falls.")])
    assert _given_entries(offline) == "[[Rain_sentence_0]]: Rain falls."
    # The online prompt's worked example holds an information block of its own: not this run's entries.
    assert _given_entries(online_prompt("It rains.", demonstration=True)) is None
