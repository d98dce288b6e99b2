"""SEVA's result as the one embedding verdict (``AgentSpec.verification``).

``passed``: the claim was judged Attributable (Not Attributable fails, and so does a reply whose label could not
be read). ``label``: the normalised label. ``confidence``: the confidence the verdict states (``None`` when the
reply could not be read or states no number in [0, 1]). ``evidence``: every source span the verdict quotes
(alignments and reasoning steps), with ``found``: whether it really occurs in the source. ``repair``: what to tell
the host's model, in our words, naming the error type when the verdict gives one of the taxonomy's. The verdict's
own ``fix_suggestion`` is model text: it stays in ``detail`` (the dumped
:class:`~evigraph.agents.seva.schemas.SevaOutput`), never in ``repair``. ``disagreement`` (:func:`disagreement`):
one line when the label contradicts the verdict's own reasoning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.seva.schemas import ATTRIBUTABLE, NOT_ATTRIBUTABLE, ErrorType, SevaOutput
from evigraph.verification import CitedEvidence, Verification, failure_of

__all__ = ("disagreement", "to_verification")

# What, in a verdict's own reasoning, speaks against the claim being fully backed (Attributable means every part).
_AGAINST = {
    "reasoning_chain": ("judgment", frozenset({"not_supported", "partially_supported"}), "step"),
    "evidence_alignment": ("status", frozenset({"mismatch", "not_found"}), "alignment"),
}

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
        confidence=output.confidence if output.parse_ok else None,  # None too when the reply states none
        evidence=[CitedEvidence(text=check.text, found=check.found) for check in output.source_spans],
        repair=None if passed else _repair(output),
        error=error,
        disagreement=disagreement(output),
        detail=output.model_dump(mode="json"),
    )


def _values(output: SevaOutput, field: str) -> list[object]:
    key = _AGAINST[field][0]
    items = (output.parsed or {}).get(field)
    return [item.get(key) for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []


def disagreement(output: SevaOutput) -> str | None:
    """One line when the verdict's label contradicts its own reasoning, else ``None``: an Attributable label over a
    step judged ``not_supported``/``partially_supported`` or an alignment that is a ``mismatch``/``not_found``;
    a Not Attributable label whose every step is ``supported`` and every alignment a ``match``; or a label given
    with a stated confidence of 0. Only these fixed values and step numbers are named, never the reply's prose.

    Example:
        >>> reply = {"reasoning_chain": [{"judgment": "not_supported"}, {"judgment": "supported"}],
        ...          "evidence_alignment": [{"status": "match"}], "label": "Attributable"}
        >>> disagreement(SevaOutput(raw="", parse_ok=True, parsed=reply, label="Attributable", confidence=0.8))
        'the verdict disagrees with its own reasoning: labelled Attributable, but step 1 judges not_supported'
    """
    if not output.parse_ok or output.label is None:
        return None
    reasons: list[str] = []
    if output.label == ATTRIBUTABLE:
        for field, (_, against, noun) in _AGAINST.items():
            reasons += [
                f"{noun} {n} {'judges' if noun == 'step' else 'is'} {value}"
                for n, value in enumerate(_values(output, field), start=1)
                if isinstance(value, str) and value in against  # the reply's JSON may hold anything here
            ]
    elif output.label == NOT_ATTRIBUTABLE:
        steps, alignments = _values(output, "reasoning_chain"), _values(output, "evidence_alignment")
        if steps and all(v == "supported" for v in steps) and all(v == "match" for v in alignments):
            reasons.append("every step judges supported and every alignment is a match")
    if output.confidence == 0.0:
        # A label stated with no confidence at all in it: the verdict's number takes its own label back.
        reasons.append("its stated confidence in that label is 0")
    if not reasons:
        return None
    listed = reasons[0] if len(reasons) == 1 else f"{', '.join(reasons[:-1])} and {reasons[-1]}"
    return f"the verdict disagrees with its own reasoning: labelled {output.label}, but {listed}"


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
