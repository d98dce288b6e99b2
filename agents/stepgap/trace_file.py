"""The trace ``evigraph check`` reads, in either of its two forms, and the JSON schema of both.

- steps: ``{"question", "steps": [{"reasoning", "query", "evidence": [{"id", "title", "text"}], "answer"}]}``
  (:class:`~.schemas.Trace`);
- a flat transcript: ``{"question", "response"}`` with a Search-R1 transcript whose information blocks are
  inline (:class:`TranscriptTrace`), split into steps at each ``</search>`` and ``</answer>``.

The schema ``evigraph check --schema`` prints is generated from these two models, so it is the reader's own.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from evigraph.agents.stepgap.schemas import Trace
from evigraph.errors import InputDataError

__all__ = ("TranscriptTrace", "parse_trace", "trace_schema")


class TranscriptTrace(BaseModel):
    """A trace as one flat Search-R1 transcript, split into steps at each ``</search>`` and ``</answer>``; the
    inline information blocks become the steps' evidence."""

    model_config = ConfigDict(frozen=True, extra="allow", use_attribute_docstrings=True)

    id: str | None = None
    question: str = Field(min_length=1)
    """The question the transcript answers."""
    response: str = Field(min_length=1)
    """The transcript: ``<think>…</think><search>…</search><information>Doc 1(Title: …) …</information>…
    <answer>…</answer>``."""
    golds: list[str] = Field(default_factory=list)
    """Gold answer aliases, when known (EM of the final answer)."""


def trace_schema() -> dict[str, Any]:
    """The JSON schema of a trace file: one of the two forms, each with its required and optional fields."""
    schema = TypeAdapter(Trace | TranscriptTrace).json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "StepGap trace (evigraph check TRACE)",
        "description": (
            "One JSON object: a question and its steps (Trace), or a question and a flat Search-R1 transcript "
            "(TranscriptTrace). Fields not listed here are kept and ignored."
        ),
        **schema,
    }


def parse_trace(text: str, where: str) -> Trace:
    """The trace in ``text`` (read from ``where``, named in errors): the steps form, or the transcript form split
    into steps.

    Raises:
        InputDataError: not JSON, not one object, not a trace, or its question or a step is empty or blank
            (nothing to judge), naming the field.
    """
    from evigraph.agents.search_r1.steps import steps_from_text
    from evigraph.jsonl import format_validation_error

    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputDataError(where, error.lineno, f"not valid JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise InputDataError(where, 1, "expected one JSON object (a trace; `evigraph check --schema` prints its form)")
    try:
        if "steps" not in data and isinstance(data.get("response"), str):
            TranscriptTrace.model_validate(data)
            data = {**data, "steps": [s.model_dump() for s in steps_from_text(data["response"])]}
        trace = Trace.model_validate(data)
    except ValidationError as error:
        raise InputDataError(where, 1, format_validation_error(error)) from None
    if not trace.question.strip():
        raise InputDataError(where, 1, "field question: empty or blank")
    blank = next((i for i, step in enumerate(trace.steps) if not step.shown().strip()), None)
    if blank is not None:
        raise InputDataError(where, 1, f"field steps.{blank}: an empty step (no text, query or answer)")
    return trace
