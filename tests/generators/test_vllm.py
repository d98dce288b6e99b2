"""The vLLM backend against a fake ``vllm`` package with real-vLLM output semantics (no GPU, no weights).

The fake (``tests/generators/fake_vllm.py``) records every ``SamplingParams`` and prompt it receives, so
these tests pin the exact mapping; ``benchmarks/smoke_vllm_cpu.py`` runs the same checks on a real engine.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from evigraph.errors import ConfigError, GeneratorError, MissingDependencyError
from evigraph.generators import Guide, SamplingParams
from evigraph.generators.chat_format import ChatFormat
from evigraph.generators.vllm import VLLMGenerator
from evigraph.trajectory import Segment
from tests.generators import fake_vllm
from tests.generators.contract import PROMPT, Capabilities, GeneratorContract


class Verdict(BaseModel):
    label: str
    confidence: float


@pytest.fixture(autouse=True)
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fake ``vllm`` package, installed for every test here (the constructor imports ``vllm``)."""
    return fake_vllm.install(monkeypatch)


@pytest.fixture
def generator(fake: Any, tiny_llama_dir: Path, tiny_tokenizer: Any) -> Iterator[VLLMGenerator]:
    """A generator whose engine was built through ``AsyncLLM.from_engine_args`` (the fake's)."""
    gen = VLLMGenerator(str(tiny_llama_dir), tokenizer=tiny_tokenizer, engine_kwargs={"dtype": "float32"})
    yield gen
    asyncio.run(gen.aclose())


def _engine(gen: VLLMGenerator) -> fake_vllm.FakeAsyncLLM:
    assert isinstance(gen.engine, fake_vllm.FakeAsyncLLM)
    return gen.engine


def _ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def _decode(tokenizer: Any, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _with_model(tokenizer: Any, model: fake_vllm.Model, **kwargs: Any) -> VLLMGenerator:
    """A generator around an injected fake engine running ``model``."""
    engine = fake_vllm.FakeAsyncLLM(tokenizer, model=model, **kwargs)
    return VLLMGenerator("tiny", tokenizer=tokenizer, engine=engine)


class TestVLLMContract(GeneratorContract):
    @pytest.fixture
    def capabilities(self) -> Capabilities:
        return Capabilities(token_ids=True, logprobs=True, guides=frozenset({"json", "regex"}), continue_policy=True)


# -- SamplingParams mapping ---------------------------------------------------------------------------------
_BASE = {
    **dataclasses.asdict(fake_vllm.SamplingParams()),
    "max_tokens": 256,
    "temperature": 0.0,
    "top_p": 1.0,
    "seed": 0,
    "stop": [],
    "include_stop_str_in_output": True,
    "logprobs": None,
    "skip_special_tokens": False,
    "spaces_between_special_tokens": False,
    "structured_outputs": None,
}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (SamplingParams(), {}),
        (
            SamplingParams(max_new_tokens=7, temperature=0.7, top_p=0.9, seed=11, stop=("</search>", "\n\n")),
            {"max_tokens": 7, "temperature": 0.7, "top_p": 0.9, "seed": 11, "stop": ["</search>", "\n\n"]},
        ),
        (SamplingParams(seed=None, logprobs=True), {"seed": None, "logprobs": 0}),
        (
            SamplingParams(guide=Guide.pattern(r"(yes|no)")),
            {"structured_outputs": {"json": None, "regex": "(yes|no)", "choice": None, "grammar": None}},
        ),
        (
            SamplingParams(guide=Guide.json(Verdict)),
            {
                "structured_outputs": {
                    "json": Verdict.model_json_schema(),
                    "regex": None,
                    "choice": None,
                    "grammar": None,
                }
            },
        ),
    ],
    ids=["defaults", "sampling-and-stop", "logprobs", "regex-guide", "json-guide"],
)
async def test_sampling_params_mapping(
    generator: VLLMGenerator, params: SamplingParams, expected: dict[str, Any]
) -> None:
    await generator.continue_transcript(PROMPT, params)
    (request,) = _engine(generator).requests
    assert isinstance(request.sampling_params, fake_vllm.SamplingParams)
    assert dataclasses.asdict(request.sampling_params) == {**_BASE, **expected}
    if params.guide is not None:
        assert isinstance(request.sampling_params.structured_outputs, fake_vllm.StructuredOutputsParams)


async def test_engine_built_from_engine_args_with_kwargs(fake: Any, tiny_llama_dir: Path) -> None:
    gen = VLLMGenerator(
        str(tiny_llama_dir),
        tokenizer=str(tiny_llama_dir),
        engine_kwargs={"dtype": "float32", "enforce_eager": True, "max_model_len": 2048},
    )
    (engine,) = fake_vllm.BUILT
    # The fake modules carry real specs, so `find_spec` (what `evigraph info` uses) sees vLLM as installed.
    assert importlib.util.find_spec("vllm.v1.engine.async_llm") is not None
    assert gen.engine is engine
    assert engine.engine_args.model == str(tiny_llama_dir)
    assert engine.engine_args.tokenizer == str(tiny_llama_dir)  # the engine detokenizes with our tokenizer
    assert engine.engine_args.extra == {"dtype": "float32", "enforce_eager": True, "max_model_len": 2048}
    assert gen.name == tiny_llama_dir.name


# -- prompt: token-exact rendering --------------------------------------------------------------------------
async def test_prompt_is_the_rendered_token_ids(generator: VLLMGenerator, tiny_tokenizer: Any) -> None:
    first = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=5))
    transcript = [
        *PROMPT,
        first.to_segment(),
        Segment(origin="environment", text="<information>none</information>"),
        Segment(origin="policy", text="So"),  # a trailing policy segment: the model continues this turn
    ]
    await generator.continue_transcript(transcript, SamplingParams(max_new_tokens=3))
    engine = _engine(generator)
    chat_format = ChatFormat(tiny_tokenizer)
    assert engine.requests[0].prompt == {"prompt_token_ids": chat_format.render(PROMPT).token_ids}
    assert engine.requests[1].prompt == {"prompt_token_ids": chat_format.render(transcript).token_ids}
    # The first reply's ids went back to the model unchanged.
    prompt_ids = engine.requests[1].prompt["prompt_token_ids"]
    start = len(chat_format.render(PROMPT).token_ids)
    assert prompt_ids[start : start + len(first.token_ids or [])] == first.token_ids


async def test_each_request_has_its_own_id_on_one_shared_engine(tiny_tokenizer: Any) -> None:
    engine = fake_vllm.FakeAsyncLLM(tiny_tokenizer, step_delay_s=0.001)
    gen = VLLMGenerator("tiny", tokenizer=tiny_tokenizer, engine=engine)
    results = await asyncio.gather(
        *(gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=6)) for _ in range(8))
    )
    request_ids = [r.request_id for r in engine.requests]
    assert len(set(request_ids)) == 8
    assert engine.max_running == 8  # all eight were in flight at once: the engine batches, we do not queue
    assert len({r.text for r in results}) == 1


# -- output mapping ------------------------------------------------------------------------------------------
async def test_a_token_running_past_the_stop_string_stays_whole(tiny_tokenizer: Any) -> None:
    words = _ids(tiny_tokenizer, " The sky is blue")
    assert _decode(tiny_tokenizer, words[1:2]) == " sky", "the test needs ' sky' to be one token"
    gen = _with_model(tiny_tokenizer, fake_vllm.scripted(words))
    result = await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=10, stop=("sk",)))
    # vLLM itself cut its text inside the token; token ids keep the token, and so does our text.
    raw = _engine(gen).outputs[-1]
    assert raw.text == " The sk" and raw.token_ids == words[:2]
    assert (result.text, result.token_ids) == (" The sky", words[:2])
    assert result.text == _decode(tiny_tokenizer, result.token_ids or [])
    assert (result.finish_reason, result.stop_string) == ("stop", "sk")


async def test_stop_string_at_a_token_boundary(tiny_tokenizer: Any) -> None:
    words = _ids(tiny_tokenizer, "<search>blue sky</search> more text")
    gen = _with_model(tiny_tokenizer, fake_vllm.scripted(words))
    result = await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=30, stop=("</search>",)))
    assert result.text == "<search>blue sky</search>"
    assert (result.finish_reason, result.stop_string) == ("stop", "</search>")
    assert result.text == _decode(tiny_tokenizer, result.token_ids or [])


async def test_eos_is_kept_in_ids_and_text(tiny_tokenizer: Any) -> None:
    eos = tiny_tokenizer.eos_token_id
    words = _ids(tiny_tokenizer, " Yes.")
    gen = _with_model(tiny_tokenizer, fake_vllm.scripted([*words, eos]))
    result = await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=10, stop=("\n\n",)))
    assert result.finish_reason == "eos" and result.stop_string is None
    assert result.token_ids == [*words, eos]
    assert result.text == " Yes." + tiny_tokenizer.eos_token
    # The next environment turn does not repeat the end-of-turn marker.
    segment = result.to_segment()
    rendered = ChatFormat(tiny_tokenizer).render(
        [*PROMPT, segment, Segment(origin="environment", text="<information>x</information>")]
    )
    assert _decode(tiny_tokenizer, rendered.token_ids).count(tiny_tokenizer.eos_token * 2) == 0


async def test_an_extra_eos_id_from_the_generation_config_is_eos(tiny_tokenizer: Any) -> None:
    extra = _ids(tiny_tokenizer, "<|endoftext|>")
    assert len(extra) == 1
    words = _ids(tiny_tokenizer, " No")
    gen = _with_model(tiny_tokenizer, fake_vllm.scripted([*words, *extra]), extra_eos_ids=extra)
    result = await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=10))
    assert _engine(gen).outputs[-1].stop_reason == extra[0]  # vLLM reports the id, not None
    assert result.finish_reason == "eos" and result.token_ids == [*words, *extra]


async def test_length_and_logprobs_align(generator: VLLMGenerator, tiny_tokenizer: Any) -> None:
    result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=5, logprobs=True))
    assert result.finish_reason == "length" and result.stop_string is None
    assert result.token_ids is not None and len(result.token_ids) == 5
    assert result.logprobs == [fake_vllm.fake_logprob(t) for t in result.token_ids]
    assert result.text == _decode(tiny_tokenizer, result.token_ids)
    assert result.prompt_tokens == len(ChatFormat(tiny_tokenizer).render(PROMPT).token_ids)
    plain = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=5))
    assert plain.logprobs is None


async def test_guided_structured_output(tiny_tokenizer: Any) -> None:
    reply = '{"label": "SUPPORT", "confidence": 0.9}'
    gen = _with_model(tiny_tokenizer, fake_vllm.scripted(_ids(tiny_tokenizer, reply), then=tiny_tokenizer.eos_token_id))
    result = await gen.structured(PROMPT, Verdict, SamplingParams(max_new_tokens=64))
    assert result.ok and result.guided and result.attempts == 1
    assert result.value == Verdict(label="SUPPORT", confidence=0.9)
    (request,) = _engine(gen).requests
    assert request.sampling_params.structured_outputs == fake_vllm.StructuredOutputsParams(
        json=Verdict.model_json_schema()
    )
    # Guided: the transcript is sent as is, without the schema instruction of unguided backends.
    assert request.prompt["prompt_token_ids"] == ChatFormat(tiny_tokenizer).render(PROMPT).token_ids


# -- errors and lifecycle ------------------------------------------------------------------------------------
class VLLMClientError(Exception):
    """Stands in for ``vllm.exceptions.VLLMClientError`` (matched by class name)."""


class VLLMValidationError(VLLMClientError):
    pass


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (VLLMValidationError("prompt length 9000 exceeds max_model_len 2048"), ConfigError),
        (ValueError("bad regex"), ConfigError),
        (RuntimeError("CUDA error: device-side assert"), GeneratorError),
    ],
)
async def test_engine_errors_are_mapped(tiny_tokenizer: Any, error: Exception, expected: type[Exception]) -> None:
    engine = fake_vllm.FakeAsyncLLM(tiny_tokenizer, error=error)
    gen = VLLMGenerator("tiny", tokenizer=tiny_tokenizer, engine=engine)
    with pytest.raises(expected, match=str(error).split(":")[0]):
        await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=4))


async def test_wrapped_request_error_is_a_config_error(tiny_tokenizer: Any) -> None:
    """vLLM wraps unexpected errors in ``EngineGenerateError`` raised ``from`` the original one."""

    class EngineGenerateError(Exception):
        pass

    wrapped = EngineGenerateError()
    wrapped.__cause__ = ValueError("invalid JSON schema")
    gen = VLLMGenerator("tiny", tokenizer=tiny_tokenizer, engine=fake_vllm.FakeAsyncLLM(tiny_tokenizer, error=wrapped))
    with pytest.raises(ConfigError, match="invalid JSON schema"):
        await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=4))


async def test_aborted_request_is_a_generator_error(tiny_tokenizer: Any) -> None:
    class AbortingEngine:
        async def generate(self, prompt: Any, params: Any, request_id: str) -> AsyncIterator[Any]:
            output = fake_vllm.CompletionOutput(0, "", [], None, None, finish_reason="abort")
            yield fake_vllm.RequestOutput(request_id, [], [output], finished=True)

    gen = VLLMGenerator("tiny", tokenizer=tiny_tokenizer, engine=AbortingEngine())
    with pytest.raises(GeneratorError, match="abort"):
        await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=4))


async def test_cancelling_a_call_aborts_its_request(tiny_tokenizer: Any) -> None:
    engine = fake_vllm.FakeAsyncLLM(tiny_tokenizer, step_delay_s=0.01)
    gen = VLLMGenerator("tiny", tokenizer=tiny_tokenizer, engine=engine)
    task = asyncio.create_task(gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=200)))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert engine.aborted == [engine.requests[0].request_id]
    assert not engine.running


async def test_aclose_shuts_down_only_an_owned_engine(fake: Any, tiny_llama_dir: Path, tiny_tokenizer: Any) -> None:
    owned = VLLMGenerator(str(tiny_llama_dir), tokenizer=tiny_tokenizer)
    await owned.aclose()
    await owned.aclose()
    assert _engine(owned).shutdown_calls == 1
    with pytest.raises(GeneratorError, match="closed"):
        await owned.continue_transcript(PROMPT, SamplingParams(max_new_tokens=2))

    injected = fake_vllm.FakeAsyncLLM(tiny_tokenizer)
    borrowed = VLLMGenerator("tiny", tokenizer=tiny_tokenizer, engine=injected)
    await borrowed.aclose()
    assert injected.shutdown_calls == 0  # a trainer's engine outlives the generator


def test_missing_vllm_names_the_extra(monkeypatch: pytest.MonkeyPatch, tiny_tokenizer: Any) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail even where it is installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'evigraph\[vllm\]'") as caught:
        VLLMGenerator("tiny", tokenizer=tiny_tokenizer)
    assert caught.value.package == "vllm"


def test_bad_tokenizer_dir_is_a_config_error(fake: Any, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="tokenizer"):
        VLLMGenerator(str(tmp_path / "nowhere"))
