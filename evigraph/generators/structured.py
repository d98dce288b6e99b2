"""Structured output on any backend: guided JSON if possible, else parse plus one repair turn.

The result is always a :class:`~evigraph.generators.base.StructuredResult`; bad model text becomes a typed
:class:`~evigraph.generators.base.StructuredError`, never an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from evigraph.generators.types import Continuation, Guide, SamplingParams, StructuredError, StructuredResult
from evigraph.jsonl import format_validation_error
from evigraph.trajectory import Segment

__all__ = ("extract_json_object", "generate_structured", "parse_structured", "schema_instruction")

SchemaT = TypeVar("SchemaT", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_MAX_START_POSITIONS = 200  # bounds the raw_decode scan on long, brace-heavy text


class _Continuer(Protocol):
    """The slice of a generator this module drives."""

    supported_guides: frozenset[str]

    async def continue_transcript(self, transcript: Sequence[Segment], params: SamplingParams) -> Continuation: ...


def extract_json_object(text: str) -> dict[str, Any] | StructuredError:
    """The JSON object in ``text``: the last fenced block that holds one, else the first decodable ``{...}``."""
    for block in reversed(_FENCE.findall(text)):
        try:
            value = json.loads(block, strict=False)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder(strict=False)  # guided JSON may hold raw tabs/newlines in strings
    starts = [m.start() for m in re.finditer(r"\{", text)][:_MAX_START_POSITIONS]
    last_error: json.JSONDecodeError | None = None
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as error:
            last_error = error
            continue
        if isinstance(value, dict):
            return value
    if not starts:
        return StructuredError(kind="no_json", message="the reply contains no JSON object")
    detail = f" ({last_error.msg})" if last_error else ""
    return StructuredError(kind="invalid_json", message=f"the reply's JSON does not parse{detail}")


def parse_structured(text: str, schema: type[SchemaT]) -> SchemaT | StructuredError:
    """Extract and validate one ``schema`` object from model text (total: never raises)."""
    found = extract_json_object(text)
    if isinstance(found, StructuredError):
        return found
    try:
        return schema.model_validate(found)
    except ValidationError as error:
        return StructuredError(kind="schema_mismatch", message=format_validation_error(error))


def schema_instruction(schema: type[BaseModel]) -> str:
    """The instruction appended for backends that cannot enforce the schema."""
    rendered = json.dumps(schema.model_json_schema(), ensure_ascii=False)
    return f"\n\nReply with a single JSON object and nothing else. It must follow this JSON Schema:\n{rendered}"


def _repair_note(error: StructuredError) -> str:
    return f"That reply could not be used: {error.message}. Reply again with only the corrected JSON object."


def _with_instruction(transcript: Sequence[Segment], schema: type[BaseModel]) -> list[Segment]:
    """Append the schema instruction to the last user-visible message (a copy; inputs stay untouched)."""
    segments = list(transcript)
    last = segments[-1]
    segments[-1] = last.model_copy(update={"text": last.text + schema_instruction(schema), "token_ids": None})
    return segments


async def generate_structured(
    generator: _Continuer,
    transcript: Sequence[Segment],
    schema: type[SchemaT],
    params: SamplingParams,
) -> StructuredResult[SchemaT]:
    guided = "json" in generator.supported_guides
    if guided:
        segments = list(transcript)
        # A JSON guide the caller set is a narrower schema of the same object (weak-model mode: the input's own
        # pieces as enums); the reply is still validated against ``schema``.
        keep = params.guide is not None and params.guide.kind == "json"
        call_params = params if keep else params.model_copy(update={"guide": Guide.json(schema)})
    else:
        segments = _with_instruction(transcript, schema)
        call_params = params.model_copy(update={"guide": None})
    attempts = 0
    raw = ""
    error: StructuredError | None = None
    continuation: Continuation | None = None
    for attempt in range(2):  # the first try plus one repair turn
        attempts = attempt + 1
        continuation = await generator.continue_transcript(segments, call_params)
        raw = continuation.text
        parsed = parse_structured(raw, schema)
        if not isinstance(parsed, StructuredError):
            return StructuredResult[schema](
                value=parsed, raw=raw, attempts=attempts, guided=guided, continuation=continuation
            )
        error = parsed
        if continuation.finish_reason == "length":
            error = StructuredError(
                kind="truncated", message=f"hit the token cap before the object closed; {error.message}"
            )
        segments = [
            *segments,
            continuation.to_segment(),
            Segment(origin="environment", text=_repair_note(error)),
        ]
    return StructuredResult[schema](error=error, raw=raw, attempts=attempts, guided=guided, continuation=continuation)
