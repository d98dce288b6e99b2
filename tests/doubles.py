"""Test doubles shared by several agents' tests."""

from __future__ import annotations

import re

from evigraph.generators.scripted import ScriptedGenerator
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.trajectory import Segment

__all__ = ("GuidedScripted",)


class GuidedScripted(ScriptedGenerator):
    """A scripted backend that enforces regex guides the way a real one does: a reply outside the guide fails."""

    supported_guides = frozenset({"regex"})

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        result = await super()._continue(transcript, params)
        if params.guide is not None:
            assert re.fullmatch(params.guide.regex, result.text), f"{result.text!r} breaks the guide"
        return result
