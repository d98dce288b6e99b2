"""The graph's policy turns on TRL's own vLLM engine, for GRPO runs that set ``use_vllm``.

Why: with ``use_vllm: true`` TRL builds a ``VLLMGeneration`` (``trainer.vllm_generation``) and keeps its
weights equal to the model being trained (``GRPOTrainer._generate`` calls ``sync_weights()`` before a custom
``rollout_func`` whenever the step changed). Generating the graph's turns through transformers' ``generate``
would leave that engine idle and be many times slower on a GPU. :class:`TrlVllmGenerator` puts the engine behind
evigraph's :class:`~evigraph.generators.base.Generator` interface so a rollout uses it unchanged.

What runs where:

- **Here (the rollout's event loop):** each turn's transcript is rendered to token ids with
  :class:`~evigraph.generators.chat_format.ChatFormat` in strict mode (a policy turn goes back as the ids it
  was sampled as), and queued. The many episodes of a batch ask for turns concurrently; a small coalescer
  collects the turns pending on the loop and hands them to the engine as *one* ``generate`` call per protocol
  setting (the same stop strings and per-turn cap), so vLLM batches them.
- **A worker thread (one, so engine calls never overlap):** the call itself. ``VLLMGeneration.generate`` reads
  its sampling settings from its own attributes; for the length of one call this module sets the *protocol*
  ones -- ``max_completion_length`` (the turn cap), ``generation_kwargs`` with the graph's ``stop`` strings,
  ``include_stop_str_in_output``, ``skip_special_tokens=False``, and ``logprobs=0`` (the sampled token's own
  logprob) -- and puts the originals back after. The *sampling* settings (temperature, top-p, top-k, min-p,
  repetition penalty) stay the trainer's: the graph's own temperature is ignored, as on OpenRLHF.
- **TRL's engine:** in ``colocate`` mode ``generation_kwargs`` is merged into vLLM's ``SamplingParams`` and
  ``LLM.generate`` runs in this process on the training GPU; in ``server`` mode the same keys go in the body of
  a ``/v1/completions`` request to ``trl vllm-serve`` / ``vllm serve`` (vLLM's ``CompletionRequest`` has all
  four protocol fields). Both return token ids and per-token logprobs, never a finish reason.

Mapping back (:func:`engine_continuation`): the finish reason is read off the ids the way
:func:`~evigraph.generators.transformers.finish_row` reads a transformers row -- an EOS id ends the turn
("eos", the id kept), a stop string completed by the last token ends it ("stop", kept whole in ids and text),
else the cap or the context ran out ("length"); the text is decoded from the ids with special tokens kept; the
logprob of each *sampled* token is looked up by id in vLLM's per-position list. TRL asks vLLM for
``processed_logprobs`` (after temperature and top-p), which is what its importance-sampling correction compares
against.

What cannot go through this interface is refused when the generator is built (:class:`ConfigError`): more than
one training process (``generate`` is then a collective call, and each process would coalesce differently), a
``vllm_structured_outputs_regex`` (it would constrain every turn), and ``generation_kwargs`` keys that change
how a turn ends or duplicate the group's samples (``seed``, ``stop_token_ids``, ``ignore_eos``, ...).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from evigraph.errors import ConfigError, EvigraphError, GeneratorError
from evigraph.generators.base import BaseGenerator
from evigraph.generators.chat_format import ChatFormat, TokenizerLike
from evigraph.generators.transformers import finish_row
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.trajectory import Segment

__all__ = ("PROTOCOL_KEYS", "TrlVllmGenerator", "check_engine", "engine_continuation", "vllm_policy")

logger = logging.getLogger(__name__)

PROTOCOL_KEYS = ("stop", "include_stop_str_in_output", "skip_special_tokens", "spaces_between_special_tokens")
"""The ``generation_kwargs`` keys this module sets for every call (the graph's, never the trainer's)."""

_REFUSED_KWARGS = {
    "stop": "the graph sets its stop strings per turn",
    "include_stop_str_in_output": "the stop string always stays in the turn",
    "skip_special_tokens": "special tokens are always kept",
    "spaces_between_special_tokens": "set per call",
    "max_tokens": "the per-turn cap is the graph's",
    "n": "one sample per turn",
    "logprobs": "the sampled token's logprob is always asked for",
    "seed": "a fixed seed makes every episode of a group sample the same first turn",
    "stop_token_ids": "a turn ending on such an id could not be told from one cut by the cap",
    "ignore_eos": "the EOS token ends a turn",
    "min_tokens": "it would run turns past their stop strings",
    "structured_outputs": "it would constrain every turn",
    "detokenize": "stop strings need the detokenized text",
    "output_kind": "the engine returns whole turns",
}
"""``generation_kwargs`` keys that cannot stay in the trainer's config, and why."""


def check_engine(engine: Any) -> None:
    """Refuse an engine whose settings this module cannot honour (see the module docstring).

    Raises:
        ConfigError: not TRL's ``VLLMGeneration`` (a missing attribute), an unknown mode, several processes, a
            structured-output regex, or a refused ``generation_kwargs`` key.
    """
    missing = [
        name
        for name in ("generate", "mode", "max_completion_length", "generation_kwargs", "logprobs")
        if not hasattr(engine, name)
    ]
    if missing:
        raise ConfigError(f"not TRL's VLLMGeneration (no {', '.join(missing)}): {type(engine).__name__}")
    if engine.mode not in ("colocate", "server"):
        raise ConfigError(f"vllm_mode must be 'colocate' or 'server', got {engine.mode!r}", source="trl.args.vllm_mode")
    processes = getattr(getattr(engine, "accelerator", None), "num_processes", 1)
    if processes > 1:
        raise ConfigError(
            f"the graph's turns go through TRL's vLLM engine in one training process only, not {processes}: "
            "VLLMGeneration.generate gathers every process's prompts (a collective call), and each process's "
            "episodes ask for turns at their own pace"
        )
    if getattr(engine, "structured_outputs_regex", None) is not None:
        raise ConfigError(
            "a structured-output regex would constrain every policy turn of the graph: leave it unset",
            source="trl.args.vllm_structured_outputs_regex",
        )
    refused = {key: why for key, why in _REFUSED_KWARGS.items() if key in (engine.generation_kwargs or {})}
    if refused:
        reasons = "; ".join(f"{key!r}: {why}" for key, why in refused.items())
        raise ConfigError(f"remove these keys ({reasons})", source="trl.args.generation_kwargs")
    if engine.mode == "colocate" and getattr(engine, "enable_sleep_mode", False):
        logger.warning(
            "vllm_enable_sleep_mode: TRL's engine reloads the policy's weights before every generate call and "
            "sleeps after it; a multi-turn rollout makes several calls per step, each paying for a reload"
        )


def _sampled_logprobs(
    token_ids: Sequence[int], logprobs: Sequence[Sequence[float | None]], logprob_token_ids: Sequence[Sequence[int]]
) -> list[float]:
    """The sampled token's logprob at each position, looked up by id (the sampled token is first only when
    ``logprobs=0``; with top-N it may sit anywhere in the rank-sorted list). A NaN stays NaN, as in TRL's own
    rollouts (``GRPOTrainer`` gives such tokens an importance ratio of 1)."""
    if len(logprobs) != len(token_ids) or len(logprob_token_ids) != len(token_ids):
        raise GeneratorError(
            f"the engine returned {len(logprobs)} logprob entries and {len(logprob_token_ids)} id entries "
            f"for {len(token_ids)} tokens"
        )
    values = []
    for position, (token, ranked, ids) in enumerate(zip(token_ids, logprobs, logprob_token_ids, strict=True)):
        ids = [int(i) for i in ids]
        if token not in ids:
            raise GeneratorError(f"the engine returned no logprob for the sampled token at position {position}")
        value = ranked[ids.index(token)]
        if value is None:  # TRL turns vLLM's NaN into None; its importance-sampling correction skips NaN tokens
            logger.warning("the engine returned a NaN logprob for the sampled token at position %d", position)
            value = math.nan
        values.append(float(value))
    return values


def engine_continuation(
    completion_ids: Sequence[int],
    logprobs: Sequence[Sequence[float | None]],
    logprob_token_ids: Sequence[Sequence[int]],
    *,
    params: SamplingParams,
    eos_ids: frozenset[int],
    decode: Callable[[Sequence[int]], str],
    prompt_tokens: int | None = None,
) -> Continuation:
    """One row of ``VLLMGeneration.generate``'s output as a :class:`Continuation` (pure).

    Args:
        completion_ids: the row's generated ids.
        logprobs: per position, the rank-sorted logprobs vLLM returned.
        logprob_token_ids: per position, the ids of those logprobs.
        params: the call's protocol: stop strings and the cap the engine was given.
        eos_ids: the ids vLLM stops on (the tokenizer's EOS and the model's ``generation_config``'s).
        decode: ids -> text, special tokens kept.
        prompt_tokens: the prompt length, reported on the result.

    Raises:
        GeneratorError: more tokens than the cap (the cap did not reach the engine), or logprobs that do not
            align with the ids.
    """
    ids = [int(t) for t in completion_ids]
    if len(ids) > params.max_new_tokens:
        raise GeneratorError(f"the engine returned {len(ids)} tokens for a turn capped at {params.max_new_tokens}")
    sampled = _sampled_logprobs(ids, logprobs, logprob_token_ids)
    continuation = finish_row(ids, params=params, eos_ids=eos_ids, decode=decode, logprobs=sampled)
    kept = len(continuation.token_ids or ())
    if kept != len(ids):  # vLLM stopped later than our reading of its ids: keep the consistent prefix
        logger.warning("the engine's turn of %d tokens reads as finished after %d; the rest is dropped", len(ids), kept)
    return continuation.model_copy(update={"prompt_tokens": prompt_tokens})


@dataclass
class _Turn:
    """One policy turn waiting for the engine."""

    prompt: list[int]
    key: tuple[tuple[str, ...], int]
    """(stop strings, cap): turns with equal keys share a ``generate`` call."""
    future: asyncio.Future[Continuation]


class TrlVllmGenerator(BaseGenerator):
    """TRL's ``VLLMGeneration`` as a token-level generator (see the module docstring).

    Args:
        engine: ``trainer.vllm_generation``.
        tokenizer: the policy's tokenizer (with a chat template).
        eos_ids: the ids the engine stops on (``trainer.eos_token_ids``); default the tokenizer's EOS.
        context_window: the most tokens a sequence may hold (vLLM's ``max_model_len``): a turn's cap is cut to
            the room left, and a prompt that fills it is refused.
        chat_format: a :class:`ChatFormat` of ``tokenizer`` to share.
        batch_wait_s: how long the first pending turn waits for others before a call starts (turns that arrive
            while a call runs wait for it anyway).
        name: shown in trajectories.

    Raises:
        ConfigError: see :func:`check_engine`; no EOS id.
    """

    can_continue_policy = True

    def __init__(
        self,
        engine: Any,
        tokenizer: TokenizerLike,
        *,
        eos_ids: Iterable[int] | None = None,
        context_window: int | None = None,
        chat_format: ChatFormat | None = None,
        batch_wait_s: float = 0.01,
        name: str = "trl-vllm",
    ) -> None:
        check_engine(engine)
        self.engine = engine
        self.tokenizer = tokenizer
        self.chat_format = chat_format or ChatFormat(tokenizer)
        ids = {int(i) for i in eos_ids or ()}
        eos = getattr(tokenizer, "eos_token_id", None)
        if isinstance(eos, int):
            ids.add(eos)
        if not ids:
            raise ConfigError(f"{name}: neither the trainer nor the tokenizer defines an EOS token")
        self.eos_ids = frozenset(ids)
        self.context_window = context_window
        self.batch_wait_s = batch_wait_s
        self.name = name
        self.engine_calls = 0
        """How many ``generate`` calls this generator made (each carries every turn pending at the time)."""
        self._pending: list[_Turn] = []
        self._drainer: asyncio.Task[None] | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evigraph-trl-vllm")
        self._closed = False

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        return await self.continue_ids(self.chat_format.render(transcript, strict=True).token_ids, params)

    async def continue_ids(self, token_ids: Sequence[int], params: SamplingParams) -> Continuation:
        """One turn after a prompt given as token ids (already rendered); ``params`` give the protocol only
        (stop strings, cap); the logprobs of the sampled tokens always come back.

        Raises:
            ConfigError: a guide, or a prompt that fills the context.
            GeneratorError: the generator is closed, the engine failed or returned something unreadable.
        """
        if params.guide is not None:
            raise ConfigError(f"{self.name} cannot enforce a {params.guide.kind!r} guide", source="guide")
        if self._closed:
            raise GeneratorError(f"{self.name}: the generator is closed")
        prompt = [int(t) for t in token_ids]
        cap = params.max_new_tokens
        if self.context_window is not None:
            room = self.context_window - len(prompt)
            if room < 1:
                raise ConfigError(
                    f"{self.name}: the transcript has {len(prompt)} tokens, the context is {self.context_window}"
                )
            cap = min(cap, room)
        loop = asyncio.get_running_loop()
        drainer = self._drainer
        if drainer is not None and not drainer.done() and drainer.get_loop() is not loop:
            raise GeneratorError(f"{self.name}: turns from two event loops at once")
        turn = _Turn(prompt, (tuple(params.stop), cap), loop.create_future())
        self._pending.append(turn)
        if drainer is None or drainer.done():
            self._drainer = loop.create_task(self._drain(), name=f"{self.name}-coalescer")
        return await turn.future

    async def _drain(self) -> None:
        """Serve the pending turns until none is left: each round one engine call for the protocol setting of
        the oldest pending turn, with every pending turn of that setting (those that arrived meanwhile too)."""
        loop = asyncio.get_running_loop()
        batch: list[_Turn] = []
        try:
            await asyncio.sleep(self.batch_wait_s)  # let the episodes scheduled in this tick queue their turns
            while self._pending:
                key = self._pending[0].key
                batch = [t for t in self._pending if t.key == key and not t.future.done()]
                self._pending = [t for t in self._pending if t.key != key]
                if not batch:
                    continue
                try:
                    results = await loop.run_in_executor(self._worker, self._call, key, [t.prompt for t in batch])
                except EvigraphError as error:
                    results = [error] * len(batch)
                except Exception as error:
                    wrapped = GeneratorError(f"{self.name}: generation failed: {type(error).__name__}: {error}")
                    wrapped.__cause__ = error
                    results = [wrapped] * len(batch)
                for turn, result in zip(batch, results, strict=True):
                    if turn.future.done():  # its caller gave up meanwhile
                        continue
                    if isinstance(result, BaseException):
                        turn.future.set_exception(result)
                    else:
                        turn.future.set_result(result)
        finally:  # cancelled with turns in flight or queued (the loop is shutting down): nobody may wait forever
            leftovers, self._pending = self._pending, []
            for turn in [*batch, *leftovers]:
                if not turn.future.done():
                    turn.future.set_exception(GeneratorError(f"{self.name}: the coalescer stopped"))

    def _call(self, key: tuple[tuple[str, ...], int], prompts: list[list[int]]) -> list[Continuation | EvigraphError]:
        """One ``generate`` call with this key's protocol fields set on the engine (worker thread)."""
        stops, cap = key
        engine = self.engine
        saved = (engine.max_completion_length, engine.generation_kwargs, engine.logprobs)
        engine.max_completion_length = cap
        engine.generation_kwargs = {
            **(saved[1] or {}),
            "stop": list(stops),
            "include_stop_str_in_output": True,
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        engine.logprobs = 0
        self.engine_calls += 1
        try:
            prompt_ids, completion_ids, logprobs, logprob_token_ids = engine.generate(
                prompts=prompts, images=None, num_generations=1
            )
        finally:
            engine.max_completion_length, engine.generation_kwargs, engine.logprobs = saved
        if len(completion_ids) != len(prompts):
            raise GeneratorError(f"{self.name}: {len(completion_ids)} completions for {len(prompts)} prompts")
        if prompt_ids is not None and [[int(t) for t in p] for p in prompt_ids] != prompts:
            raise GeneratorError(f"{self.name}: the engine's prompt ids differ from the ones sent (order or content)")
        if logprobs is None or logprob_token_ids is None:
            raise GeneratorError(f"{self.name}: the engine returned no logprobs")
        params = SamplingParams(max_new_tokens=cap, stop=stops, logprobs=True)
        results: list[Continuation | EvigraphError] = []
        rows = zip(prompts, completion_ids, logprobs, logprob_token_ids, strict=True)
        for prompt, ids, row_logprobs, row_ids in rows:
            try:
                results.append(
                    engine_continuation(
                        ids,
                        row_logprobs,
                        row_ids,
                        params=params,
                        eos_ids=self.eos_ids,
                        decode=self._decode,
                        prompt_tokens=len(prompt),
                    )
                )
            except EvigraphError as error:
                results.append(error)
        return results

    def _decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def close(self) -> None:
        """Stop the worker thread (after the call in flight). The engine is the trainer's: left running."""
        self._closed = True
        self._worker.shutdown(wait=False)

    async def aclose(self) -> None:
        self.close()


def _context_window(trainer: Any) -> int | None:
    """The engine's ``max_model_len`` as TRL itself reads it (``GRPOTrainer._tool_call_loop``): the colocated
    LLM's model config, else the policy's ``max_position_embeddings``."""
    engine = trainer.vllm_generation
    if engine.mode == "colocate":
        try:
            return int(engine.llm.llm_engine.model_config.max_model_len)
        except (AttributeError, TypeError, ValueError):
            pass
    value = getattr(getattr(getattr(trainer, "model", None), "config", None), "max_position_embeddings", None)
    return value if isinstance(value, int) else None


def vllm_policy(trainer: Any, tokenizer: Any, *, context_window: int | None = None) -> TrlVllmGenerator | None:
    """The graph's policy over ``trainer.vllm_generation`` when the TRL config sets ``use_vllm``, else ``None``
    (the rollout generates through transformers).

    Args:
        trainer: the ``GRPOTrainer``.
        tokenizer: its ``processing_class``.
        context_window: the most tokens a sequence may hold; default the engine's ``max_model_len``.

    Raises:
        ConfigError: ``use_vllm`` is set but the trainer built no engine, or the engine's settings are refused
            (:func:`check_engine`).
    """
    if not getattr(trainer.args, "use_vllm", False):
        return None
    if getattr(trainer, "vllm_generation", None) is None:
        raise ConfigError("use_vllm is set but the trainer has no vllm_generation", source="trl.args.use_vllm")
    return TrlVllmGenerator(
        trainer.vllm_generation,
        tokenizer,
        eos_ids=getattr(trainer, "eos_token_ids", None),
        context_window=context_window if context_window is not None else _context_window(trainer),
    )
