"""StepGap's steps table in the run report: a step the judge could not check has no confidence, so it reads n/a,
not the stand-in 0.00 its check holds (issue 30 point 8)."""

from __future__ import annotations

from evigraph.agents.stepgap.report_view import steps_table
from evigraph.agents.stepgap.schemas import StepCheck, StepGapOutput, TraceCheck


def test_an_unchecked_step_shows_no_confidence() -> None:
    checks = TraceCheck(
        question="When was the tower lit?",
        steps=[
            StepCheck(index=0, kind="inference", label="no-gap", confidence=0.8, rationale="", pipeline_path="A"),
            StepCheck(index=1, kind="conclusion", label=None, confidence=0.0, rationale="timeout", pipeline_path="",
                      error="the judge timed out"),
        ],
        judge="scripted",
        nli=None,
    )  # fmt: skip
    output = StepGapOutput(question="q", answer="1852", n_searches=1, format_ok=True, trace=None, checks=checks)
    table = steps_table(output, None)
    confidence = table.columns.index("confidence")
    assert [row[confidence] for row in table.rows] == ["0.80", "n/a"]
