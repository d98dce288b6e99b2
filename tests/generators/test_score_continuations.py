"""The optional :class:`ContinuationScorer` capability: the scripted double and the transformers backend."""

from __future__ import annotations

import math
from typing import Any

import pytest

from evigraph.errors import ConfigError, GeneratorError
from evigraph.generators import BaseGenerator, Continuation, ContinuationScorer, SamplingParams, ScriptedGenerator
from evigraph.trajectory import Segment
from tests.generators.contract import PROMPT


class _TextOnly(BaseGenerator):
    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        return Continuation(text="", finish_reason="eos")


def test_which_backends_score() -> None:
    assert isinstance(ScriptedGenerator([]), ContinuationScorer)
    assert not isinstance(_TextOnly(), ContinuationScorer)


async def test_scripted_scores_default_to_the_fixed_logprob_per_piece(qwen2_style_tokenizer: Any) -> None:
    plain = ScriptedGenerator([], logprob=-0.5)
    assert await plain.score_continuations(PROMPT, ["yes", "not at all", ""]) == [-0.5, -1.5, 0.0]
    tokenized = ScriptedGenerator([], logprob=-0.5, tokenizer=qwen2_style_tokenizer)
    pieces = len(qwen2_style_tokenizer.encode("contradiction", add_special_tokens=False))
    assert await tokenized.score_continuations(PROMPT, ["contradiction"]) == [-0.5 * pieces]


async def test_scripted_scores_from_a_function() -> None:
    generator = ScriptedGenerator([], scores=lambda transcript, options: [-float(len(o)) for o in options])
    assert await generator.score_continuations(PROMPT, ["ab", "abcd"]) == [-2.0, -4.0]
    short = ScriptedGenerator([], scores=lambda transcript, options: [0.0])
    with pytest.raises(GeneratorError, match="gave 1 values for 2 continuations"):
        await short.score_continuations(PROMPT, ["a", "b"])
    with pytest.raises(ConfigError, match="empty"):
        await generator.score_continuations([], ["a"])


async def test_scoring_what_the_model_generated_gives_its_logprobs(tiny_chat_lm: Any) -> None:
    generated = await tiny_chat_lm.continue_transcript(PROMPT, SamplingParams(max_new_tokens=6, logprobs=True))
    ids, tokenizer = generated.token_ids, tiny_chat_lm.tokenizer
    # Random weights may emit a non-canonical tokenization; score the longest prefix that re-encodes to itself.
    size = max(k for k in range(1, len(ids) + 1) if tokenizer.encode(tokenizer.decode(ids[:k])) == ids[:k])
    assert size >= 2
    (score,) = await tiny_chat_lm.score_continuations(PROMPT, [tokenizer.decode(ids[:size])])
    assert math.isclose(score, sum(generated.logprobs[:size]), abs_tol=1e-4)


async def test_scores_do_not_depend_on_batch_mates(tiny_chat_lm: Any) -> None:
    options = ["entailment", "neutral", "contradiction", ""]
    together = await tiny_chat_lm.score_continuations(PROMPT, options)
    alone = [(await tiny_chat_lm.score_continuations(PROMPT, [o]))[0] for o in options]
    assert all(math.isclose(a, b, abs_tol=1e-5) for a, b in zip(together, alone, strict=True))
    assert together[-1] == 0.0 and all(s < 0 for s in together[:-1])
    with pytest.raises(ConfigError, match="the model's context is 512"):
        await tiny_chat_lm.score_continuations(PROMPT, ["word " * 600])
