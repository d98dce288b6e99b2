"""examples/attribute_claim.py with a scripted verifier: alignments located in the source, the reasoning, the label
and -- for a Not Attributable verdict only -- the error type."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.examples.loading import load_example

VERDICT: dict[str, Any] = {
    "evidence_alignment": [
        {"claim_span": "first lit in 1867", "source_span": "The present brick tower was first lit in 1867.",
         "status": "match"},
        {"claim_span": "about 300 feet tall", "source_span": "The tower is about 300 feet tall.", "status": "mismatch"},
    ],
    "reasoning_chain": [
        {"claim_part": "first lit in 1867", "source_evidence": "first lit in 1867", "judgment": "supported",
         "explanation": "The year agrees with the source."},
        {"claim_part": "about 300 feet tall", "source_evidence": "about 142 feet tall", "judgment": "not_supported",
         "explanation": "The source gives 142 feet."},
    ],
    "label": "Not Attributable", "confidence": 0.9, "error_type": "numerical_exaggeration",
    "fix_suggestion": "Say about 142 feet.",
}  # fmt: skip


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], verdict: dict[str, Any]) -> list[str]:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([json.dumps(verdict)]), encoding="utf-8")
    load_example("attribute_claim").main(["--model", f"scripted:{replies}"])
    return capsys.readouterr().out.splitlines()


def test_a_not_attributable_verdict_with_its_spans_and_error_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _run(tmp_path, capsys, VERDICT)
    assert lines[:8] == [
        "claim: Assateague Light was first lit in 1867 and is about 300 feet tall.",
        "alignment:",
        "  'first lit in 1867' ~ 'The present brick tower was first lit in 1867.'  match  (in the source)",
        # The model's "source span" with the wrong number is not a quote of the source: the example says so.
        "  'about 300 feet tall' ~ 'The tower is about 300 feet tall.'  mismatch  (not in the source)",
        "reasoning:",
        "  'first lit in 1867' <- 'first lit in 1867'  (in the source): supported -- The year agrees with the source.",
        "  'about 300 feet tall' <- 'about 142 feet tall'  (in the source): not_supported -- "
        "The source gives 142 feet.",
        "label: Not Attributable (confidence 0.90)",
    ]
    assert lines[8] == "error type: numerical_exaggeration" and lines[9].startswith("took ")


def test_an_attributable_verdict_shows_no_error_type_and_a_bad_reply_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _run(tmp_path, capsys, {**VERDICT, "label": "Attributable", "confidence": 0.6})
    assert "label: Attributable (confidence 0.60)" in lines
    assert not any(line.startswith("error type") for line in lines)
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["It is attributable.", "Still not JSON."]), encoding="utf-8")  # with the repair turn
    load_example("attribute_claim").main(["--model", f"scripted:{replies}"])
    assert "the verdict could not be read" in capsys.readouterr().out
