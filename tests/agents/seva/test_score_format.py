"""`evigraph score seva` formats as issue 13 fixed them: ``{"id": str, "label": ...}`` lines (the §3.5 alias table:
strings and JSON booleans; anything else, ``null`` included, counts as wrong), gold also as any record file the
agent reads (ours, WiCE in both layouts, Veri-R1), extra fields allowed, ``file:line`` errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph.agents.seva.evaluation import EVALUATION
from evigraph.errors import InputDataError
from evigraph.evaluation.adapter import NoOptions
from evigraph.evaluation.pipeline import score_report
from tests.cli import write_jsonl
from tests.markers import requires_shared_data, shared_data

WICE_ORACLE = "code_and_resources/entailment_inputs/oracle_chunks/claim/dev.jsonl"


def score(pred: Path, gold: Path) -> dict:
    body, _ = score_report(EVALUATION, EVALUATION.read_predictions(pred), EVALUATION.read_gold(gold), NoOptions())
    return body


def test_ids_as_numbers_match_strings_and_a_null_or_numeric_label_counts_as_wrong(tmp_path: Path) -> None:
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"id": 1, "label": "supported", "annotator": "x"},
            {"id": "2", "label": "Not_Attributable"},
            {"id": 3, "label": True},
            {"id": 4, "label": "false"},
        ],
    )
    pred = write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {"id": "1", "label": True},
            {"id": 2, "label": "no", "model": "other"},
            {"id": 3, "label": None},  # present but null: wrong whatever the gold
            {"id": 4, "label": 0},  # neither a string nor a boolean: wrong
        ],
    )
    body = score(pred, gold)
    assert body["n"] == 4 and body["accuracy"] == 0.5 and body["n_missing"] == 0


def test_gold_may_be_a_wice_oracle_chunks_file_as_released(tmp_path: Path) -> None:
    row = {
        "claim": "C.",
        "evidence": ["S one.", "S two."],
        "label": "supported",
        "meta": {"id": "dev7", "oracle_idx": [0]},
    }
    gold = write_jsonl(tmp_path / "oracle.jsonl", [row, {**row, "label": "partially_supported"}])
    assert [(g.id, g.label) for g in EVALUATION.read_gold(gold).values()] == [
        ("dev7/1", "Attributable"),
        ("dev7/2", "Not Attributable"),
    ]
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "dev7/1", "label": "yes"}, {"id": "dev7/2", "label": "yes"}])
    assert score(pred, gold)["accuracy"] == 0.5


@requires_shared_data("wice")
def test_the_shared_wice_releases_are_read_as_gold() -> None:
    wice = shared_data("wice")
    oracle = EVALUATION.read_gold(wice / WICE_ORACLE)
    assert len(oracle) == 1043 and next(iter(oracle)) == "dev02986/1"
    assert len(EVALUATION.read_gold(wice / "data/entailment_retrieval/claim/dev.jsonl")) > 0


@pytest.mark.parametrize(
    ("line", "field"),
    [({"id": "2", "label": "maybe"}, "label"), ({"label": "yes"}, "id"), ({"id": "2"}, "label")],
)
def test_a_bad_gold_line_is_refused_naming_file_line_and_field(tmp_path: Path, line: dict, field: str) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "1", "label": "yes"}, line])
    with pytest.raises(InputDataError, match=rf"gold\.jsonl:2: field {field}"):
        EVALUATION.read_gold(gold)
