"""StepGap's ``passed`` rule (agents/stepgap/verification.py), each clause on its own."""

from __future__ import annotations

from typing import Any

from evigraph.agents.stepgap.verification import to_verification


def _step(index: int, label: str | None, confidence: float = 0.9) -> dict[str, Any]:
    return {
        "index": index,
        "kind": "inference",
        "label": label,
        "confidence": confidence,
        "rationale": "",
        "pipeline_path": "",
    }


def _checks(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"checks": {"question": "Q?", "steps": list(steps), "judge": "test", "nli": None}}


def test_every_step_checked_without_a_gap_passes() -> None:
    verdict = to_verification(_checks(_step(0, "no-gap", 0.9), _step(1, "no-gap", 0.7)))
    assert verdict.passed is True
    assert verdict.label == "no-gap"
    assert verdict.confidence == 0.7  # the lowest step confidence


def test_an_unchecked_step_fails_the_trace() -> None:
    # Step 2 has no label (the judge could not check it) and no error; no step has a gap.
    verdict = to_verification(_checks(_step(0, "no-gap"), _step(1, None)))
    assert verdict.passed is False
    assert verdict.label is None
    assert verdict.confidence is None
    assert verdict.error is None
    assert verdict.repair is not None and "Step(s) 2 could not be checked" in verdict.repair
