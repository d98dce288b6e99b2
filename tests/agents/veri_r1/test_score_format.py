"""`evigraph score veri-r1` formats as issue 4 fixed them: the shared eval files as they are (ids strings or
integers, compared as strings), predictions ``{"id", "response"}`` or our eval lines, unknown keys ignored,
``file:line: field`` errors, a duplicate id naming both lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evigraph.agents.veri_r1.evaluation import EVALUATION, VeriR1EvalOptions
from evigraph.errors import InputDataError
from evigraph.evaluation.pipeline import score_report
from tests.cli import write_jsonl
from tests.markers import requires_shared_data, shared_data

VERI_R1 = shared_data("veri-r1-claim-verification")


@requires_shared_data("veri-r1-claim-verification")
def test_integer_ids_of_the_shared_scifact_file_match_string_prediction_ids(tmp_path: Path) -> None:
    first = json.loads((VERI_R1 / "eval_scifact.jsonl").read_text(encoding="utf-8").partition("\n")[0])
    assert isinstance(first["id"], int)  # the release stores SciFact ids as numbers
    gold = EVALUATION.read_gold(VERI_R1 / "eval_scifact.jsonl")
    answer = f"<answer>Label: {first['golden_answers']['label']}\nEvidence: </answer>"
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": str(first["id"]), "response": answer, "system": "x"}])
    body, _ = score_report(EVALUATION, EVALUATION.read_predictions(pred), gold, VeriR1EvalOptions())
    assert body["n"] == 1 and body["n_missing"] == len(gold) - 1


@requires_shared_data("veri-r1-claim-verification")
def test_the_training_file_repeating_ids_is_refused_as_gold_naming_both_lines() -> None:
    # train_online.jsonl repeats 1,095 claims under the same id: gold keyed by id cannot hold it.
    with pytest.raises(InputDataError, match=r"train_online\.jsonl:\d+: field id: duplicate id '\w+' \(lines \d+ and"):
        EVALUATION.read_gold(VERI_R1 / "train_online.jsonl")


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"id": "2", "model": "x"}, "response"),  # neither the raw text nor our output
        ({"id": "2", "response": ["<answer>"]}, "response"),
        ({"id": True, "response": "x"}, "id"),
        ({"response": "x"}, "id"),
    ],
)
def test_a_bad_prediction_line_is_refused_naming_file_line_and_field(tmp_path: Path, line: dict, field: str) -> None:
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": 1, "response": "<answer>Label: SUPPORT</answer>"}, line])
    with pytest.raises(InputDataError, match=rf"pred\.jsonl:2: field {field}"):
        EVALUATION.read_predictions(pred)
