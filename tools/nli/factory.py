"""Pick the NLI engine a run is configured with: the cross-encoder when a checkpoint is given, else the fallback."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from evigraph.errors import ConfigError
from evigraph.generators.base import Generator
from evigraph.tools.nli.engine import NLIEngine

__all__ = ("make_nli",)

logger = logging.getLogger(__name__)


def make_nli(
    checkpoint: str | Path | None = None,
    generator: Generator | None = None,
    *,
    label_order: Sequence[str] | None = None,
    batch_size: int | None = None,
    cache_size: int = 4096,
    max_length: int | None = None,
    device: str = "cpu",
    num_threads: int | None = None,
) -> NLIEngine:
    """The NLI engine for StepGap's stages D and E.

    Args:
        checkpoint: a local 3-way NLI cross-encoder directory (:class:`~evigraph.tools.nli.cross_encoder.NLIModel`).
        generator: the run's generator, used only without ``checkpoint``
            (:class:`~evigraph.tools.nli.generator.GeneratorNLI`, the weaker fallback; it logs a warning).
        label_order, max_length, device, num_threads: cross-encoder options (see ``NLIModel``).
        batch_size: pairs per forward pass (default 32) or, for the fallback, in flight (default 8).
        cache_size: pairs the LRU cache keeps (0: no cache).

    Raises:
        ConfigError: neither a checkpoint nor a generator; a cross-encoder option without a checkpoint; the
            generator cannot score continuations; anything ``NLIModel`` refuses.
    """
    if checkpoint is not None:
        from evigraph.tools.nli.cross_encoder import NLIModel

        if generator is not None:
            logger.debug("an NLI checkpoint is configured; the generator is not used for NLI")
        return NLIModel(
            checkpoint,
            label_order=label_order,
            batch_size=batch_size or 32,
            cache_size=cache_size,
            max_length=max_length,
            device=device,
            num_threads=num_threads,
        )
    if generator is None:
        raise ConfigError(
            "StepGap's NLI stages need an NLI cross-encoder checkpoint (a local 3-way NLI model directory, e.g. a "
            "DeBERTa-v3 NLI cross-encoder) or, as a weaker fallback, a generator that can score continuations "
            "(a local transformers model); neither was given",
            source="nli",
        )
    given = {"label_order": label_order, "max_length": max_length, "num_threads": num_threads}
    given["device"] = device if device != "cpu" else None
    stray = sorted(name for name, value in given.items() if value is not None)
    if stray:
        raise ConfigError(f"{', '.join(stray)} apply to an NLI checkpoint, and none is given", source="nli")
    from evigraph.tools.nli.generator import GeneratorNLI

    return GeneratorNLI(generator, batch_size=batch_size or 8, cache_size=cache_size)
