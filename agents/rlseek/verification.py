"""RLSeek's result as the one embedding verdict (``AgentSpec.verification``).

``passed``: the detector read the response and flagged nothing -- its final list parsed and names no
hallucinated piece. A listed piece found nowhere in the response still fails (the detector flagged something it
could not point at), and so does a reply whose final list could not be read: no verdict is no pass. ``spans``:
the flagged pieces as half-open character spans ``[start, end)`` of the checked response, with the response's
own text there. ``evidence``: every step's quote from the source, with ``found`` (the quote is in the source,
verbatim or up to whitespace and case). ``label`` and ``confidence`` are ``None``: the detector gives spans, not
a label or a score. ``repair``: what to tell the host's model -- the flagged pieces of its own response,
escaped and quoted, never the detector's words. ``disagreement`` (:func:`disagreement`): one line when the final
list flags a span that no reasoning step names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evigraph.agents.rlseek.schemas import DetectedSpan, RLSeekOutput
from evigraph.protocol.escaping import neutralize
from evigraph.verification import CheckedSpan, CitedEvidence, Verification, failure_of
from evigraph.wording import shorten

__all__ = ("disagreement", "to_verification")

_NAMED = 5
"""Flagged pieces the repair instruction names (the rest are counted)."""
_PIECE_CHARS = 80


def to_verification(result: Mapping[str, Any]) -> Verification:
    """The verdict of one RLSeek run (its graph's result: ``output`` and ``trajectory``)."""
    output = RLSeekOutput.model_validate(result["output"])
    trajectory = result.get("trajectory")
    response = _checked_response(trajectory)
    spans = [
        CheckedSpan(start=s.start, end=s.end, text=_text_of(s, response), label="hallucination") for s in output.spans
    ]
    evidence = [CitedEvidence(text=q.text, found=q.found) for q in output.quotes]
    error = failure_of(trajectory)
    passed = error is None and output.parse_ok and not output.predicted_positive
    return Verification(
        agent="rlseek",
        passed=passed,
        evidence=evidence,
        spans=spans,
        repair=None if passed else _repair(output, spans),
        error=error,
        disagreement=disagreement(output, response),
        detail=output.model_dump(mode="json"),
    )


def disagreement(output: RLSeekOutput, response: str | None = None) -> str | None:
    """One line when the final list flags spans that no reasoning step names (the steps judge the response part
    by part, so such a span was flagged without being checked), else ``None``. Each span is named by its offsets
    and its text in ``response`` (escaped and quoted, as in the repair); spans whose steps were not recorded
    (outputs written before :attr:`~evigraph.agents.rlseek.schemas.DetectedSpan.steps`) are left out.

    Example:
        >>> span = DetectedSpan(start=4, end=9, text="spire", steps=())
        >>> disagreement(RLSeekOutput(task="summary", spans=(span,), parse_ok=True))
        'the verdict disagrees with its own reasoning: it flags [4, 9) "spire", which no reasoning step names'
    """
    unnamed = [s for s in output.spans if s.steps is not None and not s.steps]
    if not unnamed:
        return None
    named = ", ".join(f"[{s.start}, {s.end}) {_quoted(_text_of(s, response))}" for s in unnamed[:_NAMED])
    more = f" and {len(unnamed) - _NAMED} more" if len(unnamed) > _NAMED else ""
    return f"the verdict disagrees with its own reasoning: it flags {named}{more}, which no reasoning step names"


def _checked_response(trajectory: Any) -> str | None:
    """The response as the host gave it (the run's inputs): span offsets index it, as they index the escaped
    copy the detector saw (escaping preserves length)."""
    response = getattr(trajectory, "input", {}).get("response")
    return response if isinstance(response, str) else None


def _text_of(span: DetectedSpan, response: str | None) -> str:
    if response is not None and span.end <= len(response):
        return response[span.start : span.end]
    return span.text


def _repair(output: RLSeekOutput, spans: list[CheckedSpan]) -> str:
    if not output.parse_ok:
        return (
            "The response could not be checked for hallucinations (the detector's verdict was unreadable). Check "
            "every statement against the source before answering."
        )
    if not spans:  # flagged, but nothing it listed is in the response
        return (
            "The detector flagged content it could not locate in the response. Check every statement against the "
            "source and keep only what the source supports."
        )
    named = ", ".join(_quoted(s.text) for s in spans[:_NAMED])
    more = f" and {len(spans) - _NAMED} more" if len(spans) > _NAMED else ""
    return (
        f"These parts of the response are not supported by the source: {named}{more}. Remove or correct them so "
        "that every statement is backed by the source."
    )


def _quoted(text: str) -> str:
    # The piece is the host's own response text: shortened, tags neutralised, and JSON-quoted so it reads as data.
    return json.dumps(neutralize(shorten(text, _PIECE_CHARS)), ensure_ascii=False)
