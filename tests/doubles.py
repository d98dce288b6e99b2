"""Test doubles shared by several agents' tests."""

from __future__ import annotations

import re
from typing import Any

from evigraph.generators.scripted import ScriptedGenerator
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.trajectory import Segment

__all__ = ("GuidedScripted", "JsonGuidedScripted", "fits_json_guide")


class GuidedScripted(ScriptedGenerator):
    """A scripted backend that enforces regex guides the way a real one does: a reply outside the guide fails."""

    supported_guides = frozenset({"regex"})

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        result = await super()._continue(transcript, params)
        if params.guide is not None:
            assert re.fullmatch(params.guide.regex, result.text), f"{result.text!r} breaks the guide"
        return result


def fits_json_guide(schema: dict[str, Any], text: str) -> bool:
    """Whether lm-format-enforcer, the transformers backend's enforcer, lets a model write ``text`` under the JSON
    ``schema`` (character by character, as decoding does)."""
    from lmformatenforcer import JsonSchemaParser

    parser = JsonSchemaParser(schema)
    for char in text:
        if char not in parser.get_allowed_characters():
            return False
        parser = parser.add_character(char)
    return parser.can_end()


class JsonGuidedScripted(ScriptedGenerator):
    """A scripted backend that enforces JSON guides the way the transformers one does: a reply outside the guide
    fails."""

    supported_guides = frozenset({"json"})

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        result = await super()._continue(transcript, params)
        if params.guide is not None:
            assert params.guide.json_schema is not None
            assert fits_json_guide(params.guide.json_schema, result.text), f"{result.text!r} breaks the guide"
        return result
