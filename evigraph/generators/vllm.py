"""The GPU backend: an in-process vLLM engine (``AsyncLLM``) behind the :class:`Generator` interface.

Token in, token out. The prompt is :meth:`ChatFormat.render` of the transcript, sent to vLLM as a
``{"prompt_token_ids": [...]}`` prompt, so vLLM never applies a chat template of its own and a policy
segment's stored ids go back to the model unchanged: a transcript may end in a policy segment and the model
continues that turn.

What the output guarantees (the same as :class:`~evigraph.generators.transformers.TransformersGenerator`):

- ``text == tokenizer.decode(token_ids)`` with special tokens kept. vLLM cuts its own ``text`` right after
  the stop string even when the token that completed the stop string runs past it, while ``token_ids`` keep
  that token whole; the two would then disagree, and the transcript stores token ids. So the text is
  decoded here from the ids instead of taken from vLLM.
- ``finish_reason``: ``"stop"`` when a stop string fired (``stop_string`` names it; it stays in the text),
  ``"eos"`` when the model emitted an end-of-sequence token (vLLM reports ``stop_reason`` ``None``, or the
  token id for an extra EOS id from ``generation_config.json``; the EOS id stays in ``token_ids``), and
  ``"length"`` at the token cap or the end of the context.
- ``logprobs`` (when asked for) hold the log-probability of each sampled token, aligned with ``token_ids``.
  vLLM's default ``logprobs_mode="raw_logprobs"`` computes them from the unmodified model distribution
  (before temperature, top-p or a guide mask), which is what an RL trainer compares against.

Concurrency: every call is one engine request with its own request id; many graph runs share one engine
and vLLM batches them continuously. Build the generator once per process, inside
``if __name__ == "__main__":`` in scripts (vLLM starts its engine core in a child process), and drive it
from one event loop (``AsyncLLM`` binds its output handler to the loop it first runs on, so
:meth:`~evigraph.generators.base.BaseGenerator.continue_sync`, which opens a new loop per call, only suits
a single call).

``vllm`` is imported inside the constructor: it is an optional extra (``evigraph[vllm]``) for GPU machines.
"""

from __future__ import annotations

import inspect
import logging
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evigraph.errors import ConfigError, EvigraphError, GeneratorError, MissingDependencyError
from evigraph.generators.base import BaseGenerator
from evigraph.generators.chat_format import ChatFormat, TokenizerLike
from evigraph.generators.types import Continuation, FinishReason, SamplingParams
from evigraph.trajectory import Segment

__all__ = ("VLLMGenerator", "to_continuation", "to_vllm_sampling_params")

logger = logging.getLogger(__name__)

_INSTALL_HINT = "pip install 'evigraph[vllm]' on a GPU machine; see README"


def to_vllm_sampling_params(params: SamplingParams, *, sampling_cls: Any, structured_cls: Any) -> Any:
    """Our :class:`SamplingParams` as a vLLM ``SamplingParams`` (classes passed in: vLLM is imported lazily).

    Args:
        params: the call's settings.
        sampling_cls: ``vllm.SamplingParams``.
        structured_cls: ``vllm.sampling_params.StructuredOutputsParams``.
    """
    structured = None
    if params.guide is not None:
        if params.guide.kind == "json":
            structured = structured_cls(json=params.guide.json_schema)
        else:
            structured = structured_cls(regex=params.guide.regex)
    return sampling_cls(
        max_tokens=params.max_new_tokens,  # vLLM's own default is only 16
        temperature=params.temperature,
        top_p=params.top_p,
        seed=params.seed,
        stop=list(params.stop),
        # Our convention keeps the stop string in the text; vLLM drops it by default.
        include_stop_str_in_output=True,
        # 0 returns just the sampled token's logprob (k > 0 would add the top-k alternatives).
        logprobs=0 if params.logprobs else None,
        # Keep <|im_end|> and friends in vLLM's text too, so its stop-string search sees what we decode.
        skip_special_tokens=False,
        spaces_between_special_tokens=False,
        structured_outputs=structured,
    )


def _sampled_logprobs(completion: Any, token_ids: Sequence[int]) -> list[float]:
    """The sampled token's logprob at every position (vLLM gives a ``{token_id: Logprob}`` dict each)."""
    entries = completion.logprobs
    if entries is None or len(entries) != len(token_ids):
        got = "none" if entries is None else len(entries)
        raise GeneratorError(f"vLLM returned {got} logprob entries for {len(token_ids)} tokens")
    values = []
    for position, (entry, token_id) in enumerate(zip(entries, token_ids, strict=True)):
        chosen = entry.get(token_id) if hasattr(entry, "get") else None
        if chosen is None:
            raise GeneratorError(f"vLLM returned no logprob for the sampled token at position {position}")
        values.append(float(chosen.logprob))
    return values


def to_continuation(
    completion: Any,
    *,
    params: SamplingParams,
    decode: Any,
    prompt_tokens: int | None = None,
) -> Continuation:
    """Map one vLLM ``CompletionOutput`` onto a :class:`Continuation` (pure; see the module docstring).

    Args:
        completion: ``RequestOutput.outputs[0]`` of a finished request.
        params: the call's settings (whether logprobs were asked for).
        decode: token ids -> text with special tokens kept.
        prompt_tokens: the prompt length, reported on the result.

    Raises:
        GeneratorError: the request was aborted or failed inside the engine, or its logprobs do not align.
    """
    token_ids = [int(t) for t in completion.token_ids]
    reason = None if completion.finish_reason is None else str(completion.finish_reason)
    stop_reason = completion.stop_reason
    finish: FinishReason
    stop_string: str | None = None
    if reason == "length":
        finish = "length"
    elif reason == "stop" and isinstance(stop_reason, str):
        finish, stop_string = "stop", stop_reason
    elif reason == "stop":
        # None: the model's EOS token; an int: an extra EOS id from generation_config.json (we never set
        # stop_token_ids ourselves). Either way the id is the last entry of token_ids.
        finish = "eos"
    else:
        raise GeneratorError(f"vLLM finished the request with finish_reason={reason!r} (stop_reason={stop_reason!r})")
    logprobs = _sampled_logprobs(completion, token_ids) if params.logprobs else None
    return Continuation(
        text=decode(token_ids),
        finish_reason=finish,
        stop_string=stop_string,
        token_ids=token_ids,
        logprobs=logprobs,
        prompt_tokens=prompt_tokens,
    )


def _is_request_error(error: BaseException) -> bool:
    """Whether vLLM rejected the request itself (a bad setting, a prompt longer than the context).

    vLLM >= 0.30 raises ``VLLMClientError`` subclasses for these; older releases raised ``ValueError``.
    Matched by name so this module never imports ``vllm.exceptions`` (absent from older releases).
    """
    if isinstance(error, ValueError):
        return True
    return any(cls.__name__ == "VLLMClientError" for cls in type(error).__mro__)


class VLLMGenerator(BaseGenerator):
    """vLLM's ``AsyncLLM`` engine, in process, with exact token ids, logprobs and guided decoding.

    Args:
        model: a Hugging Face model directory (or a name vLLM can resolve); ignored for loading when
            ``engine`` is given, but still the tokenizer's default source.
        tokenizer: the tokenizer: a directory or name (default: ``model``), or an already-loaded Hugging Face
            tokenizer. It renders the transcript and decodes the output, so it must be the model's own.
        engine: an already-built engine with ``AsyncLLM.generate``'s signature (e.g. one a trainer owns).
            Such an engine belongs to the caller: :meth:`aclose` leaves it running.
        engine_kwargs: extra ``AsyncEngineArgs`` fields (``dtype``, ``max_model_len``,
            ``gpu_memory_utilization``, ``enforce_eager`` ...), used only when no ``engine`` is given.
        name: shown in traces and ``evigraph info`` (default: the model directory's name).

    Raises:
        MissingDependencyError: ``vllm`` is not installed.
        ConfigError: the tokenizer cannot be loaded or has no chat template.
        GeneratorError: the engine could not be built.
    """

    can_continue_policy = True
    supported_guides = frozenset({"json", "regex"})

    def __init__(
        self,
        model: str,
        *,
        tokenizer: str | TokenizerLike | None = None,
        engine: object | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        try:
            import vllm  # noqa: F401 -- the presence check; the names below come from submodules
            from vllm.sampling_params import SamplingParams as VLLMSamplingParams
            from vllm.sampling_params import StructuredOutputsParams
        except ImportError as error:
            missing = error.name or "vllm"
            if missing.split(".")[0] != "vllm":  # vllm is there but one of its own dependencies is not
                raise MissingDependencyError(missing, f"vllm needs it; {_INSTALL_HINT}") from error
            raise MissingDependencyError("vllm", _INSTALL_HINT) from error
        self._sampling_cls = VLLMSamplingParams
        self._structured_cls = StructuredOutputsParams
        self.model = str(model)
        self.name = name or Path(self.model).name or self.model
        kwargs = dict(engine_kwargs or {})

        if tokenizer is None or isinstance(tokenizer, str | Path):
            source = str(tokenizer) if tokenizer is not None else self.model
            self.tokenizer: Any = _load_tokenizer(source, trust_remote_code=bool(kwargs.get("trust_remote_code")))
            if tokenizer is not None:
                kwargs.setdefault("tokenizer", source)  # the engine must detokenize with the same tokenizer
        else:
            self.tokenizer = tokenizer
        self.chat_format = ChatFormat(self.tokenizer)

        self._owns_engine = engine is None
        self.engine: Any = engine if engine is not None else self._build_engine(self.model, kwargs)
        self.context_window = _engine_context_window(self.engine, kwargs)
        self._closed = False

    @staticmethod
    def _build_engine(model: str, engine_kwargs: dict[str, Any]) -> Any:
        """``AsyncLLM.from_engine_args(AsyncEngineArgs(model=model, **engine_kwargs))``."""
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        try:
            args = AsyncEngineArgs(model=model, **engine_kwargs)
        except TypeError as error:  # an unknown keyword
            raise ConfigError(f"bad vLLM engine argument: {error}", source="engine_kwargs") from error
        started = time.perf_counter()
        try:
            engine = AsyncLLM.from_engine_args(args)
        except EvigraphError:
            raise
        except Exception as error:
            raise GeneratorError(f"could not start the vLLM engine for {model!r}: {error}") from error
        logger.info("vLLM engine for %s ready in %.1f s", model, time.perf_counter() - started)
        return engine

    async def _engine_generate(self, prompt_token_ids: list[int], sampling_params: Any, request_id: str) -> Any:
        """Run one request to completion; return its ``CompletionOutput`` (the only place the engine is used).

        ``AsyncLLM.generate`` yields cumulative outputs; the last one is complete. If the caller is cancelled,
        ``generate`` aborts the request inside the engine itself.
        """
        final = None
        async for output in self.engine.generate({"prompt_token_ids": prompt_token_ids}, sampling_params, request_id):
            final = output
        if final is None or not final.outputs:
            raise GeneratorError(f"{self.name}: vLLM returned no output for request {request_id}")
        return final.outputs[0]

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        if self._closed:
            raise GeneratorError(f"{self.name}: the generator is closed")
        prompt_ids = list(self.chat_format.render(transcript).token_ids)
        request_id = f"evigraph-{uuid.uuid4().hex}"
        try:
            sampling = to_vllm_sampling_params(
                params, sampling_cls=self._sampling_cls, structured_cls=self._structured_cls
            )
            completion = await self._engine_generate(prompt_ids, sampling, request_id)
        except EvigraphError:
            raise
        except Exception as error:
            cause = error.__cause__ if error.__cause__ is not None else error
            if _is_request_error(error) or _is_request_error(cause):
                raise ConfigError(f"{self.name}: vLLM rejected the request: {cause}") from error
            raise GeneratorError(f"{self.name}: vLLM generation failed: {type(cause).__name__}: {cause}") from error
        return to_continuation(completion, params=params, decode=self._decode, prompt_tokens=len(prompt_ids))

    def _decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    async def aclose(self) -> None:
        """Shut down the engine this generator built (an injected engine is left to its owner). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._owns_engine:
            return
        shutdown = getattr(self.engine, "shutdown", None)
        if shutdown is None:
            return
        # Called on the loop on purpose, as vLLM's own server does: AsyncLLM.shutdown stops the engine core
        # before it cancels the output-handler task, and from a worker thread that task would keep running
        # meanwhile and log the dying engine as an EngineDeadError. It blocks the loop for a few seconds.
        result = shutdown()
        if inspect.isawaitable(result):
            await result


def _engine_context_window(engine: Any, engine_kwargs: dict[str, Any]) -> int | None:
    """``max_model_len`` as the engine resolved it (``AsyncLLM.model_config``), else as it was asked for."""
    resolved = getattr(getattr(engine, "model_config", None), "max_model_len", None)
    if isinstance(resolved, int):
        return resolved
    asked = engine_kwargs.get("max_model_len")
    return asked if isinstance(asked, int) else None


def _load_tokenizer(source: str, *, trust_remote_code: bool) -> Any:
    try:
        from transformers import AutoTokenizer
    except ImportError as error:
        raise MissingDependencyError("transformers", "pip install transformers (a core dependency)") from error
    try:
        return AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot load the tokenizer from {source!r}: {error}", source="tokenizer") from error
