"""`evigraph score rag-zeval` formats as its evaluation module documents them: predictions ``{"id", "scores": [S
per candidate, in the gold's candidate order]}``, gold ranked sets or ``{"id", "alphas": [...]}`` lines; ids as
strings, extra fields allowed, a bad line refused naming ``file:line`` and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph.agents.rag_zeval.evaluation import EVALUATION
from evigraph.errors import InputDataError
from evigraph.evaluation.adapter import NoOptions
from evigraph.evaluation.pipeline import score_report
from tests.cli import write_jsonl


def test_alphas_lines_are_gold_with_numeric_ids_and_extra_fields(tmp_path: Path) -> None:
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [{"id": 1, "alphas": [0, -0.5, -1], "question": "ignored"}, {"id": "2", "alphas": [-1, 0]}],
    )
    pred = write_jsonl(
        tmp_path / "pred.jsonl",
        [{"id": "1", "scores": [1, 0.5, 0], "model": "other"}, {"id": 2, "scores": [1, 0]}],
    )
    golds = EVALUATION.read_gold(gold)
    assert {i: g.alphas for i, g in golds.items()} == {"1": (0, -0.5, -1), "2": (-1, 0)}
    body, _ = score_report(EVALUATION, EVALUATION.read_predictions(pred), golds, NoOptions())
    assert body["ranking_accuracy"] == 0.5 and body["n_gold"] == 2  # set 2 is ranked upside down


def test_a_score_count_unlike_the_golds_names_the_prediction(tmp_path: Path) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "s", "alphas": [0, -1, -2]}])
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "s", "scores": [1, 0]}])
    with pytest.raises(ValueError, match=r"prediction 's': 2 scores for 3 gold candidates"):
        score_report(EVALUATION, EVALUATION.read_predictions(pred), EVALUATION.read_gold(gold), NoOptions())


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"id": "2", "alphas": [0, 0]}, "alphas"),  # a tie has no order
        ({"id": "2", "alphas": [0]}, "alphas"),
        ({"alphas": [0, -1]}, "id"),
        ({"id": "2", "alphas": [0, "high"]}, r"alphas\.1"),
    ],
)
def test_a_bad_gold_line_is_refused_naming_file_line_and_field(tmp_path: Path, line: dict, field: str) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "1", "alphas": [0, -1]}, line])
    with pytest.raises(InputDataError, match=rf"gold\.jsonl:2: field {field}"):
        EVALUATION.read_gold(gold)


def test_a_bad_prediction_line_is_refused_naming_file_line_and_field(tmp_path: Path) -> None:
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "1", "scores": [1, "best"]}])
    with pytest.raises(InputDataError, match=r"pred\.jsonl:1: field scores\.1"):
        EVALUATION.read_predictions(pred)
