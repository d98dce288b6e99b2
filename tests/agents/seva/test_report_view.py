"""SEVA's record in the run report (agents/seva/report_view.py): a confidence the reply never stated reads n/a,
the label's disagreement with its reasoning is one of the verdict's facts, and an explanation its grammar stopped
mid-word is shown cut at a whole word. Expected texts are written by hand."""

from __future__ import annotations

from typing import Any

from evigraph.agents.seva.report_view import report_view
from evigraph.report.view import KeyValuesBlock, TableBlock


def _line(**output: Any) -> dict[str, Any]:
    parsed = {
        "evidence_alignment": [{"claim_span": "300 feet", "source_span": "142 feet", "status": "mismatch"}],
        "reasoning_chain": [{"claim_part": "300 feet", "source_evidence": "142 feet", "judgment": "not_supported",
                             "explanation": "The claim says 300 feet while the source gives about 142 fee"}],
        "label": "Attributable",
    }  # fmt: skip
    return {
        "id": "a",
        "trajectory": {"input": {"claim": "It is 300 feet tall.", "source": "It is 142 feet tall."}},
        "output": {"raw": "{}", "parse_ok": True, "parsed": parsed, "label": "Attributable", **output},
    }


def test_the_report_shows_n_a_for_no_confidence_the_disagreement_and_whole_words() -> None:
    view = report_view(_line())
    assert view.verdict == "Attributable"
    facts = dict(next(b for b in view.trajectory if isinstance(b, KeyValuesBlock)).items)
    assert facts["confidence"] == "n/a (the reply states none)"
    assert facts["disagreement"] == (
        "the verdict disagrees with its own reasoning: labelled Attributable, but step 1 judges not_supported and "
        "alignment 1 is mismatch"
    )
    chain = next(b for b in view.trajectory if isinstance(b, TableBlock) and b.title == "reasoning chain")
    assert chain.rows[0][3] == "The claim says 300 feet while the source gives about 142…"
    assert report_view(_line(confidence=0.75)).verdict == "Attributable (confidence 0.75)"
