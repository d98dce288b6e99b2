"""SEVA's verdict schema for weak models (inference only): the JSON schema of :class:`~.schemas.Verdict` narrowed
to one claim and source, built from the shared pieces of :mod:`evigraph.protocol.guides`.

Every field that names a text is taken from that text: a ``claim_span``/``claim_part`` is one of the claim's
clauses or phrases, a ``source_span``/``source_evidence`` one of the source's sentences, clauses or phrases. The
schema also holds the verdict's own rules: an alignment whose status is ``not_found`` has an empty
``source_span`` (and only such a one), and only a Not Attributable verdict names an ``error_type`` and a
``fix_suggestion``. Free strings are short: a 135M model fills a string to its bound, and every character is
decoding time. Rewards never use this schema: they read the raw reply leniently (§2.2).
"""

from __future__ import annotations

from typing import Any

from evigraph.agents.seva.prompts import Shown
from evigraph.agents.seva.schemas import ATTRIBUTABLE, ERROR_TYPES, JUDGMENTS, NOT_ATTRIBUTABLE
from evigraph.protocol.guides import JSON_UNQUOTABLE, choice_schema, phrase_choices, sentence_choices, verbatim_choices
from evigraph.wording import cut_short

__all__ = ("EXPLANATION_CHARS", "FIX_CHARS", "claim_pieces", "display_text", "source_pieces", "verdict_schema")

EXPLANATION_CHARS = 60
"""Bound of a weak model's ``explanation`` (the rubric allows 100)."""
FIX_CHARS = 60
"""Bound of a weak model's ``fix_suggestion`` (the rubric allows 100)."""
_BOUNDS = frozenset({EXPLANATION_CHARS, FIX_CHARS, 100})
"""Lengths at which a grammar stops a free string: ours, and the rubric's 100 that a server's structured output
enforces from :class:`~evigraph.agents.seva.schemas.Verdict`."""
_SENTENCE_END = (".", "!", "?", '."', ".'", ")")


def display_text(text: str) -> str:
    """A free string of the verdict (an explanation, a fix suggestion) as output shows it. A small model fills a
    string to its grammar's bound, which stops it mid-sentence and often mid-word; a string exactly that long and
    not ending a sentence is shown cut at a whole word with a final ``…`` (:func:`evigraph.wording.cut_short`), so
    the cut is visible and no word is shown in pieces. Any other string is shown as written.

    Example:
        >>> display_text("The claim says 300 feet while the source gives about 142 fee")  # 60 characters
        'The claim says 300 feet while the source gives about 142…'
        >>> display_text("Same year as the source.")
        'Same year as the source.'
    """
    stripped = text.rstrip()
    if len(text) not in _BOUNDS or stripped.endswith(_SENTENCE_END):
        return text
    return cut_short(text)


def claim_pieces(claim: str) -> list[str]:
    """The claim's clauses and phrases a ``claim_span``/``claim_part`` may be (at most 60 characters)."""
    return phrase_choices(claim, max_chars=60, banned=JSON_UNQUOTABLE)


def source_pieces(source: str) -> list[str]:
    """The source's sentences, clauses and phrases a ``source_span``/``source_evidence`` may be (at most 100
    characters each)."""
    sentences = sentence_choices(source, max_chars=100, banned=JSON_UNQUOTABLE)
    return verbatim_choices([*sentences, *phrase_choices(source, max_chars=100, banned=JSON_UNQUOTABLE)], max_chars=100)


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


def _enum(*values: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def verdict_schema(shown: Shown) -> dict[str, Any]:
    """The JSON schema a weak model's verdict on ``shown`` (the escaped claim and source) is decoded under: one
    or two alignments, two reasoning steps, then the label with its conditional diagnosis."""
    claim = choice_schema(claim_pieces(shown.claim), max_chars=60)
    pieces = source_pieces(shown.source)
    source = choice_schema(pieces, max_chars=100)
    found = _object({"claim_span": claim, "source_span": source, "status": _enum("match", "mismatch")})
    missing = _object({"claim_span": claim, "source_span": _enum(""), "status": _enum("not_found")})
    step = _object(
        {
            "claim_part": claim,
            "source_evidence": choice_schema(pieces, max_chars=100, empty=True),
            "judgment": _enum(*JUDGMENTS),
            "explanation": {"type": "string", "minLength": 10, "maxLength": EXPLANATION_CHARS},
        }
    )
    common = {
        "evidence_alignment": {"type": "array", "items": {"anyOf": [found, missing]}, "minItems": 1, "maxItems": 2},
        "reasoning_chain": {"type": "array", "items": step, "minItems": 2, "maxItems": 2},
    }
    confidence = {"type": "number", "minimum": 0.0, "maximum": 1.0}
    attributable = _object({**common, "label": _enum(ATTRIBUTABLE), "confidence": confidence})
    not_attributable = _object(
        {
            **common,
            "label": _enum(NOT_ATTRIBUTABLE),
            "confidence": confidence,
            "error_type": _enum(*ERROR_TYPES),
            "fix_suggestion": {"type": "string", "minLength": 1, "maxLength": FIX_CHARS},
        }
    )
    return {"anyOf": [attributable, not_attributable]}
