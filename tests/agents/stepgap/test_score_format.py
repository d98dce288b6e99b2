"""`evigraph score stepgap` formats as issue 10 fixed them: gold ``{"id": str, "answer_correct": bool, "steps":
[{"label"}]}``, pred ``{"id": str, "steps": [{"label"}]}`` or the checker's own eval lines; extra fields allowed
(top level and per step); a bad line is refused naming ``file:line`` and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph.agents.stepgap.evaluation import EVALUATION, StepGapEvalOptions
from evigraph.agents.stepgap.schemas import StepCheck, StepGapOutput, TraceCheck
from evigraph.errors import ConfigError, InputDataError
from evigraph.evaluation.adapter import RunRecord
from evigraph.evaluation.pipeline import score_report
from tests.cli import write_jsonl

OPTIONS = StepGapEvalOptions(resamples=20)


def stored_line(record_id: str, labels: list[str]) -> dict:
    """A line as ``evigraph eval stepgap`` stores it: the run's output carries the checker's step labels."""
    checks = TraceCheck(
        question="Q?",
        steps=[
            StepCheck(index=i, kind="inference", label=label, confidence=0.9, rationale="r", pipeline_path="stageA")
            for i, label in enumerate(labels)
        ],
        judge="scripted",
        nli=None,
    )
    output = StepGapOutput(question="Q?", answer="A", n_searches=1, format_ok=True, trace=None, checks=checks)
    return RunRecord(id=record_id, response="...", output=output.model_dump(mode="json")).model_dump(mode="json")


def test_documented_gold_and_both_prediction_shapes_with_extra_fields_are_scored(tmp_path: Path) -> None:
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"id": "q1", "answer_correct": False, "steps": [{"label": "IE", "note": "x"}, {"label": "MB"}], "src": 1},
            {"id": "q2", "answer_correct": True, "steps": [{"label": "no-gap"}, {"label": "no-gap"}]},
        ],
    )
    pred = write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {"id": "q1", "steps": [{"label": "IE", "confidence": 0.7}, {"label": "no-gap"}], "model": "other"},
            stored_line("q2", ["no-gap", "MB"]),  # the checker's own eval line
        ],
    )
    body, _ = score_report(EVALUATION, EVALUATION.read_predictions(pred), EVALUATION.read_gold(gold), OPTIONS)
    # Steps: TP 1 (q1 s1), FN 1 (q1 s2), FP 1 (q2 s2), TN 1.
    assert body["step"]["precision"] == 0.5 and body["step"]["recall"] == 0.5
    assert body["n_steps"] == 4 and body["n_gold"] == 2 and body["n_missing"] == 0


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"answer_correct": True, "steps": [{"label": "IE"}]}, "id"),
        ({"id": "q2", "answer_correct": True, "steps": [{"label": "GAP"}]}, r"steps\.0\.label"),
        ({"id": "q2", "answer_correct": "sometimes", "steps": []}, "answer_correct"),
        ({"id": "q2", "answer_correct": True, "steps": {"label": "IE"}}, "steps"),
    ],
)
def test_a_bad_gold_line_is_refused_naming_file_line_and_field(tmp_path: Path, line: dict, field: str) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "q1", "answer_correct": True, "steps": []}, line])
    with pytest.raises(InputDataError, match=rf"gold\.jsonl:2: field {field}"):
        EVALUATION.read_gold(gold)


def test_gold_without_answer_correct_names_the_record(tmp_path: Path) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "q1", "steps": [{"label": "IE"}]}])
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "q1", "steps": [{"label": "IE"}]}])
    with pytest.raises(ConfigError, match=r"gold record 'q1': needs answer_correct"):
        score_report(EVALUATION, EVALUATION.read_predictions(pred), EVALUATION.read_gold(gold), OPTIONS)
