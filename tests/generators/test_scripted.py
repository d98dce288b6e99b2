"""The scripted test double satisfies the backend contract and behaves like real backends."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from evigraph.errors import GeneratorError
from evigraph.generators import SamplingParams, ScriptedGenerator
from evigraph.trajectory import Segment
from tests.generators.contract import PROMPT, Capabilities, GeneratorContract


def _answer(transcript: list[Segment], params: SamplingParams) -> str:
    return "The sky looks blue because air scatters short wavelengths of sunlight more strongly."


class TestScriptedContract(GeneratorContract):
    @pytest.fixture
    def generator(self) -> ScriptedGenerator:
        return ScriptedGenerator(_answer)

    @pytest.fixture
    def capabilities(self) -> Capabilities:
        return Capabilities(token_ids=False, logprobs=False, continue_policy=True)


class Verdict(BaseModel):
    label: str
    confidence: float


async def test_queue_order_stop_and_cap() -> None:
    gen = ScriptedGenerator(["<search>q</search> trailing", "one two three four five"])
    first = await gen.continue_transcript(PROMPT, SamplingParams(stop=("</search>",)))
    assert (first.text, first.finish_reason, first.stop_string) == ("<search>q</search>", "stop", "</search>")
    second = await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=3))
    assert (second.text, second.finish_reason) == ("one two three", "length")
    with pytest.raises(GeneratorError, match="no scripted reply left"):
        await gen.continue_transcript(PROMPT, SamplingParams())


async def test_structured_repairs_once_then_reports_a_typed_error() -> None:
    gen = ScriptedGenerator(["not json", '{"label": "SUPPORT", "confidence": 0.9}'])
    result = await gen.structured(PROMPT, Verdict)
    assert result.ok and result.value == Verdict(label="SUPPORT", confidence=0.9) and result.attempts == 2
    # The repair turn shows the model its own reply and what was wrong with it.
    repair_transcript = gen.calls[1].transcript
    assert [s.origin for s in repair_transcript[-2:]] == ["policy", "environment"]
    assert "no JSON object" in repair_transcript[-1].text

    bad = ScriptedGenerator(['{"label": 3}', '```json\n{"label": "X"}\n```'])
    failed = await bad.structured(PROMPT, Verdict)
    assert not failed.ok and failed.error is not None and failed.error.kind == "schema_mismatch"
    assert "confidence" in failed.error.message
