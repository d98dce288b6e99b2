"""Reading a SEVA reply (specs/seva.md §2.2, §4): a total parse into the reply's JSON object, and the label a
metric counts when the JSON does not parse.

Normative order: strip; drop one Markdown fence that wraps the whole text; ``json.loads``; else the substring
from the first ``{`` to the last ``}``; a value that is not a JSON object is a parse failure (reward 0). Unlike
the framework's lenient :func:`~evigraph.generators.structured.extract_json_object`, nothing else is tried:
the reward must score exactly what the spec parses.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.agents.seva.labels import normalize_label
from evigraph.agents.seva.schemas import Label

__all__ = ("ParsedReply", "label_for_metrics", "parse_reply")

_WHOLE_FENCE = re.compile(r"\A```[A-Za-z]*[ \t]*\n?(?P<body>.*?)\n?```\Z", re.DOTALL)
_LABEL_FIELD = re.compile(r'"label"\s*:\s*"([^"]+)"')


class ParsedReply(BaseModel):
    """The reply's JSON object, or why there is none."""

    model_config = ConfigDict(frozen=True)

    value: dict[str, Any] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None


def _decode(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except (json.JSONDecodeError, RecursionError) as error:
        return None, str(error) if isinstance(error, json.JSONDecodeError) else "nesting too deep"


def parse_reply(text: str) -> ParsedReply:
    """The JSON object of ``text`` under §2.2 (never raises)."""
    body = text.strip()
    fence = _WHOLE_FENCE.match(body)
    if fence is not None and "```" not in fence["body"]:
        body = fence["body"].strip()
    value, error = _decode(body)
    if error is not None:
        first, last = body.find("{"), body.rfind("}")
        if first < 0 or last <= first:
            return ParsedReply(error=f"not JSON ({error}) and no {{...}} substring")
        value, error = _decode(body[first : last + 1])
        if error is not None:
            return ParsedReply(error=f"not JSON: {error}")
    if not isinstance(value, dict):
        return ParsedReply(error=f"the JSON value is a {type(value).__name__}, not an object")
    return ParsedReply(value=value)


def label_for_metrics(text: str, parsed: ParsedReply | None = None) -> Label | None:
    """The label metrics count (§4): the JSON ``label`` when the reply parses, else the first ``"label": "..."``
    in the text, through the alias table; ``None`` counts as wrong."""
    parsed = parsed or parse_reply(text)
    if parsed.value is not None:
        return normalize_label(parsed.value.get("label"))
    match = _LABEL_FIELD.search(text)
    return normalize_label(match[1]) if match else None
