"""SEVA's result as the one embedding verdict (``AgentSpec.verification``).

``passed``: the claim was judged Attributable (Not Attributable fails, and so does a reply whose label could not
be read). ``label``: the normalised label. ``confidence``: the confidence the verdict states (``None`` when the
reply could not be read). ``evidence``: every source span the verdict quotes (alignments and reasoning steps),
with ``found``: whether it really occurs in the source. ``repair``: what to tell the host's model, in our words,
naming the error type when the verdict gives one of the taxonomy's. The verdict's own ``fix_suggestion`` is
model text: it stays in ``detail`` (the dumped :class:`~evigraph.agents.seva.schemas.SevaOutput`), never in
``repair``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.seva.schemas import ATTRIBUTABLE, ErrorType, SevaOutput
from evigraph.verification import CitedEvidence, Verification, failure_of

__all__ = ("to_verification",)

_ERRORS: dict[ErrorType, str] = {
    "numerical_exaggeration": "a quantity differs from the source's",
    "negation_flip": "it reverses what the source says (a negation added or dropped)",
    "scope_inflation": "it generalises or strengthens what the source states",
    "temporal_shift": "a date or time differs from the source's",
    "entity_substitution": "it names a different person, place or thing than the source",
    "fabrication": "it adds information the source does not contain",
}


def to_verification(result: Mapping[str, Any]) -> Verification:
    """The verdict of one SEVA run (its graph's result: ``output`` and ``trajectory``)."""
    output = SevaOutput.model_validate(result["output"])
    error = failure_of(result.get("trajectory"))
    passed = error is None and output.label == ATTRIBUTABLE
    return Verification(
        agent="seva",
        passed=passed,
        label=output.label,
        confidence=output.confidence if output.parse_ok else None,
        evidence=[CitedEvidence(text=check.text, found=check.found) for check in output.source_spans],
        repair=None if passed else _repair(output),
        error=error,
        detail=output.model_dump(mode="json"),
    )


def _repair(output: SevaOutput) -> str:
    if output.label is None:
        return "Whether the source backs this claim could not be established. Check it against the source first."
    # Only a known error type is named, in our words: the reply's own string is model text.
    why = _ERRORS.get(output.error_type)  # type: ignore[call-overload]
    reason = f": {why}" if why else ""
    return (
        f"The source does not back this claim{reason}. Change the claim so that the source supports every part of "
        "it, or leave out what the source does not state."
    )
