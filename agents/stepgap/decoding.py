"""The judge's reply schemas for weak models (inference only): the JSON schemas of
:class:`~.schemas.StepJudgement` and its three sections, narrowed to one step's evidence with the shared pieces of
:mod:`evigraph.protocol.guides`.

Stage C's ``evidence_quote`` is ``""`` or one of the evidence's own sentences, each cut to at most
``quote_max_words`` words and kept only with ``quote_min_words`` words or more: exactly the spans stage C
accepts, taken from the passages as the judge sees them. Reasoning fields are short, because a 135M judge fills
every string to its bound and each character is decoding time. The checker validates the reply against the
full model all the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from evigraph.agents.stepgap.labels import Stage
from evigraph.agents.stepgap.schemas import (
    AbstentionJudgement,
    AlignmentJudgement,
    QuoteJudgement,
    StepJudgement,
)
from evigraph.protocol.guides import JSON_UNQUOTABLE, choice_schema, sentence_choices
from evigraph.trajectory import Evidence

__all__ = ("REASONING_CHARS", "judgement_schema", "quote_choices")

REASONING_CHARS = 60
"""Bound of a weak judge's reasoning fields (the schema allows 300)."""

_STAGE_MODELS: dict[Stage, type[BaseModel]] = {"A": AlignmentJudgement, "B": AbstentionJudgement, "C": QuoteJudgement}


def quote_choices(evidence: Sequence[Evidence], *, max_chars: int, min_words: int, max_words: int) -> list[str]:
    """The evidence sentences a weak judge may quote: from each passage's text as shown (its first ``max_chars``
    characters), cut to ``max_words`` words, at least ``min_words`` words, no JSON delimiters."""
    pieces = [
        piece
        for passage in evidence
        for piece in sentence_choices(
            passage.text[:max_chars],
            max_chars=250,
            banned=JSON_UNQUOTABLE,
            min_words=min_words,
            max_words=max_words,
        )
    ]
    return list(dict.fromkeys(pieces))


def _section(model: type[BaseModel], quotes: Sequence[str]) -> dict[str, Any]:
    """``model``'s schema (no references: lm-format-enforcer reads the sections inline) with short reasoning and,
    for stage C, the quote as one of ``quotes``."""
    schema = model.model_json_schema()
    properties: dict[str, Any] = {}
    for name, field in schema["properties"].items():
        if name.endswith("_reasoning"):
            field = {"type": "string", "maxLength": REASONING_CHARS}
        elif name == "evidence_quote":
            field = choice_schema(quotes, max_chars=250, empty=True)
        properties[name] = field
    return {"type": "object", "properties": properties, "required": list(schema["required"])}


def judgement_schema(
    evidence: Sequence[Evidence],
    *,
    stage: Stage | None = None,
    max_chars: int = 600,
    min_words: int = 5,
    max_words: int = 20,
) -> dict[str, Any]:
    """The schema of one reply: all three sections (``stage=None``, the single call) or one stage's section
    (``per_stage`` mode), for a step whose local evidence is ``evidence``."""
    quotes = quote_choices(evidence, max_chars=max_chars, min_words=min_words, max_words=max_words)
    if stage is not None:
        return _section(_STAGE_MODELS[stage], quotes)
    sections = StepJudgement.model_fields  # the single-call reply's sections, in its own order
    properties = {name: _section(field.annotation, quotes) for name, field in sections.items()}  # type: ignore[arg-type]
    return {"type": "object", "properties": properties, "required": list(properties)}
