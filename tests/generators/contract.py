"""One contract every generation backend must satisfy.

A backend's test module subclasses :class:`GeneratorContract` and provides two fixtures:

- ``generator``: a ready :class:`~evigraph.generators.base.BaseGenerator` that decodes greedily and
  deterministically (tiny random weights are fine: the contract never depends on *what* is generated);
- ``capabilities``: a :class:`Capabilities` saying what the backend claims (token ids, logprobs, guides).

The stop-string test needs no control over the model: it first generates freely, picks a substring of
that output as a stop string, and regenerates greedily -- the same prefix must now end at the stop string.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel

from evigraph.errors import ConfigError
from evigraph.generators.base import BaseGenerator
from evigraph.generators.types import Guide, SamplingParams, StructuredResult
from evigraph.trajectory import Segment

PROMPT = [
    Segment(origin="prompt", role="system", text="You verify claims."),
    Segment(origin="prompt", role="user", text="Is the sky blue? Answer in one sentence."),
]


@dataclass(frozen=True)
class Capabilities:
    token_ids: bool
    logprobs: bool
    guides: frozenset[str] = field(default_factory=frozenset)
    continue_policy: bool = False


class Verdict(BaseModel):
    label: str
    confidence: float


class GeneratorContract:
    """Backend-independent behaviour; subclass and provide ``generator`` and ``capabilities`` fixtures."""

    async def test_continuation_is_well_formed(self, generator: BaseGenerator, capabilities: Capabilities) -> None:
        result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=8))
        assert isinstance(result.text, str)
        assert result.finish_reason in {"stop", "eos", "length"}
        if capabilities.token_ids:
            assert result.token_ids is not None
            assert 0 < len(result.token_ids) <= 8
        if result.finish_reason == "length" and capabilities.token_ids:
            assert len(result.token_ids or []) == 8

    async def test_greedy_is_deterministic(self, generator: BaseGenerator) -> None:
        params = SamplingParams(max_new_tokens=6)
        first = await generator.continue_transcript(PROMPT, params)
        second = await generator.continue_transcript(PROMPT, params)
        assert first.text == second.text

    async def test_stop_string_ends_the_turn_and_stays_in_text(self, generator: BaseGenerator) -> None:
        free = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=12))
        stripped = free.text.rstrip()
        if len(stripped) < 4:
            pytest.skip("the model ended too early to pick a stop string from its output")
        stop = stripped[len(stripped) // 2 : len(stripped) // 2 + 2]
        if not stop.strip():
            stop = stripped[-2:]
        stopped = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=12, stop=(stop,)))
        assert stopped.finish_reason == "stop"
        assert stopped.stop_string == stop
        cut = free.text.index(stop) + len(stop)
        # The stop string is kept; a token that ran past it stays whole (so the text may be a bit longer).
        assert stopped.text.startswith(free.text[:cut])
        assert free.text.startswith(stopped.text)

    async def test_logprobs_align_with_tokens(self, generator: BaseGenerator, capabilities: Capabilities) -> None:
        result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=5, logprobs=True))
        if not capabilities.logprobs:
            return
        assert result.token_ids is not None and result.logprobs is not None
        assert len(result.logprobs) == len(result.token_ids)
        assert all(lp <= 1e-6 for lp in result.logprobs)

    async def test_multi_turn_transcript_with_environment_turn(self, generator: BaseGenerator) -> None:
        first = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=4))
        transcript = [
            *PROMPT,
            first.to_segment(),
            Segment(origin="environment", text="<information>none</information>"),
        ]
        second = await generator.continue_transcript(transcript, SamplingParams(max_new_tokens=4))
        assert isinstance(second.text, str)

    async def test_trailing_policy_segment(self, generator: BaseGenerator, capabilities: Capabilities) -> None:
        transcript = [*PROMPT, Segment(origin="policy", text="The")]
        if capabilities.continue_policy:
            result = await generator.continue_transcript(transcript, SamplingParams(max_new_tokens=3))
            assert isinstance(result.text, str)
        else:
            with pytest.raises(ConfigError):
                await generator.continue_transcript(transcript, SamplingParams(max_new_tokens=3))

    async def test_concurrent_calls_share_the_backend(self, generator: BaseGenerator) -> None:
        params = SamplingParams(max_new_tokens=4)
        results = await asyncio.gather(*(generator.continue_transcript(PROMPT, params) for _ in range(6)))
        assert len(results) == 6
        assert all(isinstance(r.text, str) for r in results)

    async def test_unsupported_guide_is_a_config_error(
        self, generator: BaseGenerator, capabilities: Capabilities
    ) -> None:
        for kind, guide in (("json", Guide.json(Verdict)), ("regex", Guide.pattern(r"(yes|no)"))):
            params = SamplingParams(max_new_tokens=4, guide=guide)
            if kind in capabilities.guides:
                continue
            with pytest.raises(ConfigError):
                await generator.continue_transcript(PROMPT, params)

    async def test_structured_never_raises_on_model_text(self, generator: BaseGenerator) -> None:
        result = await generator.structured(PROMPT, Verdict, SamplingParams(max_new_tokens=24))
        assert isinstance(result, StructuredResult)
        assert result.ok or result.error is not None
        assert 1 <= result.attempts <= 2
