"""What every NLI engine shares: the pair cache, one code path for single and batched calls, the LangChain face.

An engine only turns uncached pairs into (entailment, neutral, contradiction) probability triples
(:meth:`NLIEngine._score`, :meth:`NLIEngine._ascore`); this base answers cached pairs, scores each distinct
new pair once per call, labels the triples with :func:`~evigraph.tools.nli.results.nli_decision` and keeps the
cache. ``classify`` is ``batch_classify([pair])[0]``.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any, Literal, NamedTuple, NotRequired

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from evigraph.errors import ConfigError, ToolError
from evigraph.protocol.escaping import neutralize
from evigraph.tools.nli.results import NLILabel, NLIResult, render_nli_result

__all__ = ("NLICacheInfo", "NLIDescription", "NLIEngine", "NLIInput", "Pair")

logger = logging.getLogger(__name__)

Pair = tuple[str, str]
"""``(premise, hypothesis)``."""
Triple = tuple[float, float, float]


class NLICacheInfo(NamedTuple):
    """Cache counters, as ``functools.lru_cache`` reports them.

    ``hits`` counts pairs answered without the engine (cached, or repeated within one call); ``misses``
    counts pairs the engine scored. ``hits + misses`` is the number of pairs asked for.
    """

    hits: int
    misses: int
    size: int
    maxsize: int


class NLIDescription(TypedDict):
    """What :meth:`NLIEngine.describe` reports (logged at start-up, shown by diagnostics)."""

    engine: str
    """The ``engine`` name results carry."""
    kind: Literal["cross-encoder", "generator"]
    source: str
    """The checkpoint directory, or the generator's backend and name."""
    label_order: list[NLILabel]
    """The label of each output index (the fallback: of each label word)."""
    label_order_method: Literal["forced", "id2label", "probe", "prompt"]
    """How the order was decided (see :mod:`evigraph.tools.nli.labels`); ``prompt`` for the fallback."""
    warnings: list[str]
    cache: dict[str, int]
    max_length: NotRequired[int]
    """The cross-encoder's token limit per pair."""


class NLIInput(BaseModel):
    """Arguments of the NLI tool as a model sees them."""

    premise: str = Field(description="The evidence text: a quote or passage, copied exactly.")
    hypothesis: str = Field(description="One declarative claim to test against the premise.")


class NLIEngine(abc.ABC):
    """Shared behaviour of the NLI engines (:class:`~evigraph.tools.nli.cross_encoder.NLIModel`,
    :class:`~evigraph.tools.nli.generator.GeneratorNLI`).

    Args:
        engine: the name results carry.
        batch_size: pairs per forward pass (cross-encoder) or in flight at once (fallback).
        cache_size: the most pairs the LRU cache keeps; 0 disables it.

    Raises:
        ConfigError: ``batch_size < 1`` or ``cache_size < 0``.
    """

    def __init__(self, *, engine: str, batch_size: int, cache_size: int) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}", source="batch_size")
        if cache_size < 0:
            raise ConfigError(f"cache_size must be >= 0 (0 disables the cache), got {cache_size}", source="cache_size")
        self.engine = engine
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str, str], NLIResult] = OrderedDict()
        self._lock = threading.Lock()  # async callers run batches on worker threads
        self._hits = self._misses = 0

    # -- the engine's part ----------------------------------------------------------------------------
    @abc.abstractmethod
    def _score(self, pairs: list[Pair], batch_size: int) -> list[Triple]:
        """(E, N, C) probabilities of distinct, uncached pairs, in order."""

    @abc.abstractmethod
    async def _ascore(self, pairs: list[Pair], batch_size: int) -> list[Triple]:
        """:meth:`_score` without blocking the event loop."""

    @abc.abstractmethod
    def describe(self) -> NLIDescription:
        """Which engine runs, on what, with which label order and how it was decided."""

    # -- one code path ----------------------------------------------------------------------------------
    def batch_classify(self, pairs: Sequence[Pair], *, batch_size: int | None = None) -> list[NLIResult]:
        """One result per ``(premise, hypothesis)`` pair, in order.

        Raises:
            ConfigError: a pair is not two strings, or a bad ``batch_size``.
            ToolError: the engine failed.
        """
        found, missing, size = self._plan(pairs, batch_size)
        if missing:
            with _as_tool_error(self.engine):
                triples = self._score(missing, size)
            self._store(found, missing, triples)
        return [found[pair] for pair in pairs]

    async def abatch_classify(self, pairs: Sequence[Pair], *, batch_size: int | None = None) -> list[NLIResult]:
        """:meth:`batch_classify` for async callers (graph nodes)."""
        found, missing, size = self._plan(pairs, batch_size)
        if missing:
            with _as_tool_error(self.engine):
                triples = await self._ascore(missing, size)
            self._store(found, missing, triples)
        return [found[pair] for pair in pairs]

    def classify(self, premise: str, hypothesis: str) -> NLIResult:
        """The verdict for one pair: ``batch_classify([(premise, hypothesis)])[0]``."""
        return self.batch_classify([(premise, hypothesis)])[0]

    async def aclassify(self, premise: str, hypothesis: str) -> NLIResult:
        return (await self.abatch_classify([(premise, hypothesis)]))[0]

    def _plan(self, pairs: Sequence[Pair], batch_size: int | None) -> tuple[dict[Pair, NLIResult], list[Pair], int]:
        """Cached results, the distinct pairs left to score, and the batch size to score them with."""
        size = self.batch_size if batch_size is None else batch_size
        if size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {size}", source="batch_size")
        found: dict[Pair, NLIResult] = {}
        missing: dict[Pair, None] = {}
        with self._lock:
            for pair in pairs:
                if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(t, str) for t in pair)):
                    raise ConfigError(f"an NLI pair is a (premise, hypothesis) tuple of strings, got {pair!r}")
                if pair in found or pair in missing:
                    self._hits += 1
                    continue
                key = (*pair, self.engine)
                cached = self._cache.get(key)
                if cached is None:
                    missing[pair] = None
                    self._misses += 1
                else:
                    self._cache.move_to_end(key)
                    found[pair] = cached
                    self._hits += 1
        return found, list(missing), size

    def _store(self, found: dict[Pair, NLIResult], missing: list[Pair], triples: list[Triple]) -> None:
        if len(triples) != len(missing):
            raise ToolError(f"{self.engine}: {len(triples)} results for {len(missing)} pairs")
        with self._lock:
            for pair, triple in zip(missing, triples, strict=True):
                result = found[pair] = NLIResult.from_probabilities(triple, self.engine)
                if self.cache_size:
                    self._cache[(*pair, self.engine)] = result
                    self._cache.move_to_end((*pair, self.engine))
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    # -- cache ------------------------------------------------------------------------------------------
    def cache_info(self) -> NLICacheInfo:
        with self._lock:
            return NLICacheInfo(self._hits, self._misses, len(self._cache), self.cache_size)

    def clear_cache(self) -> None:
        """Empty the cache and reset its counters."""
        with self._lock:
            self._cache.clear()
            self._hits = self._misses = 0

    # -- the LangChain face -----------------------------------------------------------------------------
    def as_langchain_tool(self) -> Any:
        """A LangChain tool over this engine, for host agents (sync and async)."""
        from langchain_core.tools import StructuredTool

        def failed(error: ToolError) -> str:  # a tool failure is an observation the model can read
            return neutralize(f"NLI failed: {error}")

        def run(premise: str, hypothesis: str) -> str:
            try:
                return render_nli_result(self.classify(premise, hypothesis))
            except ToolError as error:
                return failed(error)

        async def arun(premise: str, hypothesis: str) -> str:
            try:
                return render_nli_result(await self.aclassify(premise, hypothesis))
            except ToolError as error:
                return failed(error)

        return StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name="nli",
            description=(
                "Test whether the premise (evidence text) supports the hypothesis (one claim). Returns "
                "ENTAILMENT (the premise shows the claim is true), CONTRADICTION (shows it is false) or NEUTRAL "
                "(neither), followed by the three probabilities. The premise alone decides: give the exact "
                "evidence text, not a summary, and a single declarative claim, not a question."
            ),
            args_schema=NLIInput,
        )


@contextlib.contextmanager
def _as_tool_error(engine: str) -> Iterator[None]:
    """Engine failures (torch errors, a backend error) become :class:`ToolError`; usage errors pass through."""
    try:
        yield
    except (ConfigError, ToolError):
        raise
    except Exception as error:
        raise ToolError(f"{engine}: NLI failed: {type(error).__name__}: {error}") from error
