"""The NLI cross-encoder (specs/stepgap.md §2.5): a local 3-way ``AutoModelForSequenceClassification`` checkpoint.

The reference is the DeBERTa-v3 NLI family; any 3-way NLI sequence classifier works. Input is the
(premise, hypothesis) pair only -- no prompt, so no upstream framing leaks into the decision (§8 #1). Pairs
longer than the model's limit lose premise tokens first (the hypothesis is cut only when it alone is too
long). Batches are sorted by length to pad less; a pair's result does not depend on its batch-mates (up to
float rounding). Torch and transformers are imported in the constructor, never at module import.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evigraph.errors import ConfigError, MissingDependencyError
from evigraph.machine import configure_torch_threads, quiet_progress_bars
from evigraph.tools.nli.engine import NLIDescription, NLIEngine, Pair, Triple
from evigraph.tools.nli.labels import PROBE_PAIRS, calibrate_label_order, parse_id2label, parse_label_order
from evigraph.tools.nli.results import softmax

__all__ = ("NLIModel",)

logger = logging.getLogger(__name__)

_INSTALL_HINT = "pip install torch transformers (both are core dependencies of evigraph)"
_FALLBACK_LIMIT = 512


def _check_classifier(config: Any, source: str) -> None:
    """Refuse a checkpoint that is not a 3-way sequence classifier (before any weights load)."""
    architectures = list(getattr(config, "architectures", None) or [])
    if architectures and not any(name.endswith("ForSequenceClassification") for name in architectures):
        raise ConfigError(
            f"not a sequence classifier: architectures {architectures} (an NLI checkpoint is a "
            "*ForSequenceClassification model with 3 labels, e.g. a DeBERTa-v3 NLI cross-encoder)",
            source=source,
        )
    if config.num_labels != 3:
        raise ConfigError(
            f"not a 3-way NLI classifier: num_labels = {config.num_labels}, id2label = {config.id2label} "
            "(expected 3 labels: entailment, neutral, contradiction)",
            source=source,
        )


def _token_limit(tokenizer: Any, config: Any) -> int:
    """The model's pair length limit: the smaller of the tokenizer's and the position table's real limits."""
    limits = [
        value
        for value in (getattr(tokenizer, "model_max_length", None), getattr(config, "max_position_embeddings", None))
        if isinstance(value, int) and 0 < value < 1_000_000  # tokenizers without a limit report ~1e30
    ]
    return min(limits) if limits else _FALLBACK_LIMIT


class NLIModel(NLIEngine):
    """A cross-encoder NLI checkpoint behind :class:`~evigraph.tools.nli.engine.NLIEngine`.

    Args:
        checkpoint: a local model directory (``config.json``, weights, tokenizer); nothing is downloaded.
        label_order: force the label of output index 0, 1, 2, e.g. ``("entailment", "neutral",
            "contradiction")``; by default ``id2label`` or the start-up probes decide
            (:mod:`evigraph.tools.nli.labels`).
        batch_size: pairs per forward pass.
        cache_size: pairs the LRU cache keeps (0: no cache).
        max_length: tokens per pair; default the model's limit.
        device: a torch device string, e.g. ``cpu`` or ``cuda:0``.
        num_threads: torch intra-op threads on CPU; ``None`` uses 1 on machines with at most 2 cores.
        name: the engine name's suffix (default: the directory's name).

    Raises:
        ConfigError: no such directory, no readable config, not a 3-way NLI sequence classifier, a bad
            ``label_order``, or an order neither named nor found by the probes.
        MissingDependencyError: torch or transformers is not installed.
    """

    def __init__(
        self,
        checkpoint: str | Path,
        *,
        label_order: Sequence[str] | None = None,
        batch_size: int = 32,
        cache_size: int = 4096,
        max_length: int | None = None,
        device: str = "cpu",
        num_threads: int | None = None,
        name: str | None = None,
    ) -> None:
        try:
            import torch  # noqa: F401 -- fail early, with the install hint, when torch is missing
            from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as error:
            raise MissingDependencyError(error.name or "transformers", _INSTALL_HINT) from error
        path = Path(checkpoint).expanduser()
        if not path.is_dir():
            raise ConfigError(f"NLI checkpoint {str(path)!r} is not a directory", source="checkpoint")
        source = str(path / "config.json")
        forced = parse_label_order(label_order) if label_order is not None else None
        if max_length is not None and max_length < 8:
            raise ConfigError(f"max_length must be >= 8 tokens, got {max_length}", source="max_length")
        super().__init__(engine=f"cross-encoder:{name or path.name}", batch_size=batch_size, cache_size=cache_size)
        try:
            config = AutoConfig.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError, KeyError) as error:
            raise ConfigError(f"no readable model config in {str(path)!r}: {error}", source=source) from error
        _check_classifier(config, source)
        named = parse_id2label(config.id2label, source=source)

        self.checkpoint = path
        self.device = device
        self.num_threads = configure_torch_threads(num_threads) if device == "cpu" else None
        try:
            with quiet_progress_bars():
                self._tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
                self._model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError, KeyError) as error:
            raise ConfigError(f"could not load the NLI checkpoint {str(path)!r}: {error}", source=source) from error
        self._model.to(device).eval()
        self._forward_lock = threading.Lock()
        self.max_length = max_length or _token_limit(self._tokenizer, config)

        identical, negated = self._logits(list(PROBE_PAIRS), 2)
        self.label_order = calibrate_label_order(named, identical, negated, forced=forced)
        for warning in self.label_order.warnings:
            logger.warning("%s: %s", self.engine, warning)
        logger.info("%s: label order %s (%s)", self.engine, self.label_order.labels, self.label_order.method)

    def describe(self) -> NLIDescription:
        return NLIDescription(
            engine=self.engine,
            kind="cross-encoder",
            source=str(self.checkpoint),
            label_order=list(self.label_order.labels),
            label_order_method=self.label_order.method,
            warnings=list(self.label_order.warnings),
            cache=self.cache_info()._asdict(),
            max_length=self.max_length,
        )

    def _score(self, pairs: list[Pair], batch_size: int) -> list[Triple]:
        return [self.label_order.arrange(softmax(row)) for row in self._logits(pairs, batch_size)]

    async def _ascore(self, pairs: list[Pair], batch_size: int) -> list[Triple]:
        return await asyncio.to_thread(self._score, pairs, batch_size)

    def _logits(self, pairs: list[Pair], batch_size: int) -> list[list[float]]:
        """Raw logits per pair, in the model's index order."""
        import torch

        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        rows: list[list[float]] = [[]] * len(pairs)
        with self._forward_lock, torch.inference_mode():
            if self.num_threads is not None and torch.get_num_threads() != self.num_threads:
                torch.set_num_threads(self.num_threads)  # OpenMP's thread count is per calling thread
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                encoded = self._encode([pairs[i] for i in chunk])
                logits = self._model(**{k: v.to(self.device) for k, v in encoded.items()}).logits
                for i, row in zip(chunk, logits.float().cpu().tolist(), strict=True):
                    rows[i] = row
        return rows

    def _encode(self, pairs: list[Pair]) -> Any:
        premises, hypotheses = [p for p, _ in pairs], [h for _, h in pairs]
        try:
            return self._tokenizer(
                premises,
                hypotheses,
                truncation="only_first",
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            )
        except Exception:  # tokenizers raises a bare Exception when a hypothesis alone is too long
            encodings = [self._encode_pair(p, h) for p, h in pairs]
            return self._tokenizer.pad(encodings, return_tensors="pt")

    def _encode_pair(self, premise: str, hypothesis: str) -> Any:
        try:
            return self._tokenizer(premise, hypothesis, truncation="only_first", max_length=self.max_length)
        except Exception:  # see _encode
            return self._tokenizer(premise, hypothesis, truncation="longest_first", max_length=self.max_length)
