"""A fake ``vllm`` package with real-vLLM output semantics, for testing :class:`VLLMGenerator` without a GPU.

:func:`install` puts these modules into ``sys.modules`` (each with a proper ``ModuleSpec``), under the
import paths the real vLLM 0.32 uses:

- ``vllm.SamplingParams`` / ``vllm.sampling_params.SamplingParams``: a keyword-only dataclass with vLLM's
  field names and defaults (an unknown field is a ``TypeError``, as with the real msgspec struct);
- ``vllm.sampling_params.StructuredOutputsParams``: exactly one constraint must be set;
- ``vllm.engine.arg_utils.AsyncEngineArgs`` and ``vllm.v1.engine.async_llm.AsyncLLM``, whose
  ``from_engine_args`` builds a :class:`FakeAsyncLLM`.

:class:`FakeAsyncLLM` runs a deterministic "model" (the next token is a function of the ids so far, picked
from readable word tokens of the real tokenizer) and post-processes like vLLM v1 does: it stops at the EOS
token (kept in ``token_ids``), at ``max_tokens``, or at a stop string. For a stop string it cuts ``text``
right after the stop string (``include_stop_str_in_output``) or before it, but never cuts ``token_ids``: so a
token that runs past the stop string is whole in ``token_ids`` and partial in ``text``, as in vLLM. It records
every request (prompt, ``SamplingParams``, request id) so tests can assert the mapping exactly.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib.machinery
import sys
import types
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

Model = Callable[[Sequence[int], Sequence[int]], int]
"""``(prompt_ids, generated_ids) -> next token id``."""

_WORDS = (
    " The sky is blue because air scatters short wavelengths of sunlight more strongly than long ones ."
    " Clouds look white and the sea reflects it , so evidence supports the claim"
)


@dataclass(kw_only=True)
class SamplingParams:
    """The fields of ``vllm.SamplingParams`` the backend may set, with vLLM 0.32's defaults."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool = False
    max_tokens: int | None = 16
    min_tokens: int = 0
    logprobs: int | None = None
    detokenize: bool = True
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    structured_outputs: StructuredOutputsParams | None = None


@dataclass(kw_only=True)
class StructuredOutputsParams:
    json: str | dict[str, Any] | None = None
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None

    def __post_init__(self) -> None:
        count = sum(value is not None for value in (self.json, self.regex, self.choice, self.grammar))
        if count != 1:
            raise ValueError(f"exactly one structured-outputs constraint must be set, got {count}")


class AsyncEngineArgs:
    """Accepts any keyword, like the real dataclass accepts its ~200 fields."""

    def __init__(self, model: str, tokenizer: str | None = None, **extra: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.extra = extra


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool


@dataclass
class RecordedRequest:
    prompt: dict[str, Any]
    sampling_params: SamplingParams
    request_id: str


def fake_logprob(token_id: int) -> float:
    """The deterministic logprob the fake reports for ``token_id`` (always negative)."""
    return -0.125 * (1 + token_id % 7)


class FakeAsyncLLM:
    """A deterministic stand-in for ``vllm.v1.engine.async_llm.AsyncLLM``.

    Args:
        tokenizer: a Hugging Face tokenizer (the tiny-model fixture's); it decodes and defines EOS.
        model: ``(prompt_ids, generated_ids) -> next id``; default: a hash-like walk over word tokens.
        extra_eos_ids: ids that stop like an extra EOS from ``generation_config.json`` (``stop_reason`` is
            the id, as in vLLM).
        error: raised from ``generate`` (to test error mapping).
        step_delay_s: awaited between tokens, so concurrent requests interleave.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        model: Model | None = None,
        extra_eos_ids: Sequence[int] = (),
        error: BaseException | None = None,
        step_delay_s: float = 0.0,
    ) -> None:
        self.tokenizer = tokenizer
        self.eos_id: int = tokenizer.eos_token_id
        self.word_ids = [tokenizer.encode(w, add_special_tokens=False)[0] for w in _WORDS.split(" ") if w] + [
            tokenizer.encode(" " + w, add_special_tokens=False)[0] for w in _WORDS.split(" ") if w
        ]
        self.model: Model = model or self._walk
        self.extra_eos_ids = frozenset(extra_eos_ids)
        self.error = error
        self.step_delay_s = step_delay_s
        self.requests: list[RecordedRequest] = []
        self.outputs: list[CompletionOutput] = []
        self.running: set[str] = set()
        self.max_running = 0
        self.aborted: list[str] = []
        self.shutdown_calls = 0

    def _walk(self, prompt_ids: Sequence[int], generated: Sequence[int]) -> int:
        recent = [*prompt_ids, *generated][-3:]
        mix = sum((position + 3) * token for position, token in enumerate(recent)) + 7 * len(generated)
        return self.word_ids[mix % len(self.word_ids)]

    def _decode(self, ids: Sequence[int], params: SamplingParams) -> str:
        return self.tokenizer.decode(
            list(ids), skip_special_tokens=params.skip_special_tokens, clean_up_tokenization_spaces=False
        )

    async def generate(
        self, prompt: dict[str, Any], sampling_params: SamplingParams, request_id: str
    ) -> AsyncIterator[RequestOutput]:
        if request_id in self.running:
            raise ValueError(f"Request id {request_id} already running.")
        self.requests.append(RecordedRequest(dict(prompt), sampling_params, request_id))
        if self.error is not None:
            raise self.error
        prompt_ids = list(prompt["prompt_token_ids"])
        params = sampling_params
        stops = [params.stop] if isinstance(params.stop, str) else list(params.stop or [])
        self.running.add(request_id)
        self.max_running = max(self.max_running, len(self.running))
        try:
            ids: list[int] = []
            text = ""
            finish: str | None = None
            stop_reason: int | str | None = None
            while finish is None:
                token = self.model(prompt_ids, ids)
                ids.append(token)
                eos = token == self.eos_id and not params.ignore_eos
                extra_eos = token in self.extra_eos_ids
                # vLLM leaves a stop token's text out unless include_stop_str_in_output is set.
                shown = ids[:-1] if (eos or extra_eos) and not params.include_stop_str_in_output else ids
                previous_length = len(text)
                text = self._decode(shown, params)
                if eos:
                    finish = "stop"
                elif extra_eos:
                    finish, stop_reason = "stop", token
                elif params.max_tokens is not None and len(ids) >= params.max_tokens:
                    finish = "length"
                hit = _first_stop(text, stops, previous_length)
                if hit is not None:  # a stop string wins over the engine-side reason, as in vLLM
                    position, stop = hit
                    finish, stop_reason = "stop", stop
                    text = text[: position + len(stop)] if params.include_stop_str_in_output else text[:position]
                if self.step_delay_s:
                    await asyncio.sleep(self.step_delay_s)
                else:
                    await asyncio.sleep(0)
                logprobs = None
                if params.logprobs is not None:
                    logprobs = [{t: Logprob(fake_logprob(t), rank=1)} for t in ids]
                completion = CompletionOutput(
                    index=0,
                    text=text,
                    token_ids=list(ids),
                    cumulative_logprob=sum(fake_logprob(t) for t in ids) if logprobs is not None else None,
                    logprobs=logprobs,
                    finish_reason=finish,
                    stop_reason=stop_reason,
                )
                if finish is not None:
                    self.outputs.append(completion)
                yield RequestOutput(request_id, prompt_ids, [completion], finished=finish is not None)
        except (asyncio.CancelledError, GeneratorExit):
            self.aborted.append(request_id)
            raise
        finally:
            self.running.discard(request_id)

    def shutdown(self) -> None:
        self.shutdown_calls += 1

    @classmethod
    def from_engine_args(cls, engine_args: AsyncEngineArgs) -> FakeAsyncLLM:
        engine = cls(_tokenizer(engine_args.tokenizer or engine_args.model))
        engine.engine_args = engine_args  # type: ignore[attr-defined]
        BUILT.append(engine)
        return engine


@functools.lru_cache(maxsize=4)
def _tokenizer(source: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source)


BUILT: list[FakeAsyncLLM] = []
"""Engines built through ``AsyncLLM.from_engine_args`` (cleared by :func:`install`)."""


def _first_stop(text: str, stops: Sequence[str], previous_length: int) -> tuple[int, str] | None:
    """The stop string completing earliest in the text new since ``previous_length`` (vLLM's search)."""
    best: tuple[int, str] | None = None
    for stop in stops:
        position = text.find(stop, max(0, previous_length - len(stop) + 1))
        if position >= 0 and (best is None or position + len(stop) < best[0] + len(best[1])):
            best = (position, stop)
    return best


def scripted(token_ids: Sequence[int], *, then: int | None = None) -> Model:
    """A model that emits ``token_ids`` in order, then ``then`` forever (default: the last id again)."""
    ids = list(token_ids)

    def model(prompt_ids: Sequence[int], generated: Sequence[int]) -> int:
        if len(generated) < len(ids):
            return ids[len(generated)]
        return then if then is not None else ids[-1]

    return model


def _module(name: str, *, package: bool = True, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, loader=None, is_package=package)
    if package:
        module.__path__ = []
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


def install(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """Put the fake ``vllm`` package into ``sys.modules`` for one test; returns the top-level module."""
    BUILT.clear()
    async_llm = _module("vllm.v1.engine.async_llm", package=False, AsyncLLM=FakeAsyncLLM)
    v1_engine = _module("vllm.v1.engine", async_llm=async_llm)
    v1 = _module("vllm.v1", engine=v1_engine)
    arg_utils = _module("vllm.engine.arg_utils", package=False, AsyncEngineArgs=AsyncEngineArgs)
    engine = _module("vllm.engine", arg_utils=arg_utils)
    sampling = _module(
        "vllm.sampling_params",
        package=False,
        SamplingParams=SamplingParams,
        StructuredOutputsParams=StructuredOutputsParams,
    )
    vllm = _module(
        "vllm",
        __version__="0.0.0+fake",
        SamplingParams=SamplingParams,
        AsyncEngineArgs=AsyncEngineArgs,
        sampling_params=sampling,
        engine=engine,
        v1=v1,
    )
    for module in (vllm, sampling, engine, arg_utils, v1, v1_engine, async_llm):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    return vllm


def recorded_fields(params: SamplingParams) -> dict[str, Any]:
    """The recorded parameters as a plain dict (for exact comparisons)."""
    return dataclasses.asdict(params)
