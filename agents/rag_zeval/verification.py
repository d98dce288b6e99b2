"""RAG-Zeval's result as the one embedding verdict (``AgentSpec.verification``).

Embedded, RAG-Zeval checks one answer against a question and a reference: the host passes ``candidates=[answer]``
(a host key holding a one-item list). ``passed``: that answer's claim precision ``S(y)`` (supported claims /
claims, spec §2.2) is at least :data:`PASS_SCORE` (0.5); with several candidates, every one of them must reach
it. ``confidence``: ``S(y)`` (the lowest one with several candidates), always a number -- a reply that could
not be read scores 0.0 -- so a host sets another threshold with the verifier's ``pass_if``:
``verifier_node("rag-zeval", ..., pass_if=lambda v: v.confidence >= 0.8)``. ``label`` is ``None``: the
evaluator scores, it does not label. ``evidence``: the grounding evidence of the checked answers' claims, with
``found``: whether it occurs in the reference. ``repair``: what to tell the host's model, counting unsupported
claims in our words (the claims are model text and stay in ``detail``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.rag_zeval.schemas import RagZevalOutput, ScoredCandidate
from evigraph.tools.quotes import find_quote
from evigraph.verification import CitedEvidence, Verification, failure_of

__all__ = ("PASS_SCORE", "to_verification")

PASS_SCORE = 0.5
"""The least ``S(y)`` that passes (override with ``pass_if``)."""


def to_verification(result: Mapping[str, Any]) -> Verification:
    """The verdict of one RAG-Zeval run (its graph's result: ``output`` and ``trajectory``)."""
    output = RagZevalOutput.model_validate(result["output"])
    trajectory = result.get("trajectory")
    error = failure_of(trajectory)
    scores = [c.score for c in output.candidates]
    passed = error is None and bool(scores) and min(scores) >= PASS_SCORE
    return Verification(
        agent="rag-zeval",
        passed=passed,
        confidence=min(scores) if scores else 0.0,
        evidence=_evidence(output, _reference(trajectory)),
        repair=None if passed else _repair(output),
        error=error,
        detail=output.model_dump(mode="json"),
    )


def _reference(trajectory: Any) -> str | None:
    reference = getattr(trajectory, "input", {}).get("reference")
    return reference if isinstance(reference, str) else None


def _evidence(output: RagZevalOutput, reference: str | None) -> list[CitedEvidence]:
    quoted = dict.fromkeys(text for c in output.candidates for claim in c.claims for text in claim.grounding_evidence)
    return [
        CitedEvidence(text=text, found=None if reference is None else find_quote(text, reference) is not None)
        for text in quoted
        if text.strip()
    ]


def _repair(output: RagZevalOutput) -> str:
    if not output.candidates:
        return "The answer could not be checked against the reference. Check every claim in it before answering."
    several = len(output.candidates) > 1
    notes = [_note(c, f"answer {c.index + 1}" if several else "the answer") for c in output.candidates]
    return " ".join(n for n in notes if n) + (
        " Remove or correct what the reference does not state, so that every claim is backed by it."
    )


def _note(candidate: ScoredCandidate, name: str) -> str | None:
    if candidate.score >= PASS_SCORE:
        return None
    if not candidate.total:
        return f"No claim of {name} could be checked against the reference."
    if candidate.total == 1:
        return f"The claim in {name} is not supported by the reference."
    unsupported = candidate.total - candidate.supported
    return f"{unsupported} of the {candidate.total} claims in {name} are not supported by the reference."
