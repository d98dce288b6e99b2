"""SEVA's ``passed`` rule (agents/seva/verification.py), each clause on its own."""

from __future__ import annotations

from types import SimpleNamespace

from evigraph.agents.seva.verification import to_verification

_ATTRIBUTABLE = {"raw": "{}", "parse_ok": True, "label": "Attributable", "confidence": 0.9}


def test_attributable_without_an_error_passes() -> None:
    verdict = to_verification({"output": _ATTRIBUTABLE, "trajectory": SimpleNamespace(error=None)})
    assert verdict.passed is True
    assert verdict.error is None


def test_attributable_with_an_error_does_not_pass() -> None:
    error = SimpleNamespace(type="RuntimeError", message="backend failed")
    verdict = to_verification({"output": _ATTRIBUTABLE, "trajectory": SimpleNamespace(error=error)})
    assert verdict.passed is False
    assert verdict.error == "RuntimeError: backend failed"
    assert verdict.repair is not None


# ---- issue 30 point 8: a confidence never stated is not 0.0, and a verdict its reasoning contradicts says so -----
def _parsed(label: str, judgments: list[str], statuses: list[str]) -> dict[str, object]:
    return {
        "evidence_alignment": [{"claim_span": "a", "source_span": "b", "status": s} for s in statuses],
        "reasoning_chain": [
            {"claim_part": "a", "source_evidence": "b", "judgment": j, "explanation": "Because of the source."}
            for j in judgments
        ],
        "label": label,
    }


def test_a_reply_that_states_no_confidence_maps_to_none_not_zero() -> None:
    from evigraph.agents.seva.verdict import read_verdict

    reply = '{"evidence_alignment": [], "reasoning_chain": [], "label": "Attributable"}'
    output = read_verdict(reply, source="The bridge opened in 1932.")
    assert output.parse_ok and output.confidence is None
    verdict = to_verification({"output": output.model_dump(), "trajectory": SimpleNamespace(error=None)})
    assert verdict.confidence is None
    # A stated confidence is kept as stated, 0 included.
    stated = read_verdict('{"label": "Attributable", "confidence": "0.25"}', source="x")
    assert stated.confidence == 0.25


def test_an_attributable_label_over_unsupported_steps_carries_one_line_saying_so() -> None:
    parsed = _parsed("Attributable", ["not_supported", "partially_supported"], ["match", "mismatch"])
    output = {"raw": "{}", "parse_ok": True, "label": "Attributable", "confidence": 0.0, "parsed": parsed}
    verdict = to_verification({"output": output, "trajectory": SimpleNamespace(error=None)})
    assert verdict.passed is True  # the label decides; the disagreement is said, not hidden
    assert verdict.disagreement == (
        "the verdict disagrees with its own reasoning: labelled Attributable, but step 1 judges not_supported, "
        "step 2 judges partially_supported, alignment 2 is mismatch and its stated confidence in that label is 0"
    )
    assert "the verdict disagrees with its own reasoning" in verdict.summary()


def test_a_not_attributable_label_over_supported_steps_disagrees_and_an_agreeing_verdict_does_not() -> None:
    against = {"raw": "{}", "parse_ok": True, "label": "Not Attributable", "confidence": 0.7,
               "parsed": _parsed("Not Attributable", ["supported", "supported"], ["match"])}  # fmt: skip
    assert to_verification({"output": against}).disagreement == (
        "the verdict disagrees with its own reasoning: labelled Not Attributable, but every step judges supported "
        "and every alignment is a match"
    )
    agreeing = {**against, "parsed": _parsed("Not Attributable", ["supported", "not_supported"], ["match"])}
    assert to_verification({"output": agreeing}).disagreement is None
    fine = {"raw": "{}", "parse_ok": True, "label": "Attributable", "confidence": 0.9,
            "parsed": _parsed("Attributable", ["supported"], ["match"])}  # fmt: skip
    assert to_verification({"output": fine}).disagreement is None
    # Whatever the reply's JSON holds where a judgment belongs, it is not read as one.
    odd = {**fine, "parsed": {**_parsed("Attributable", [], []), "reasoning_chain": [{"judgment": ["x"]}]}}
    assert to_verification({"output": odd}).disagreement is None
