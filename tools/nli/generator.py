"""The NLI fallback: the configured generator scores the three label words (weaker than a cross-encoder).

Used only when no NLI checkpoint is configured. The generator sees the same isolated (premise, hypothesis)
question -- a short neutral prompt, :data:`NLI_PROMPT`, and nothing from the checker's own context -- and
scores the continuations ``entailment``, ``neutral`` and ``contradiction`` by the sum of their token
log-probabilities (:class:`~evigraph.generators.base.ContinuationScorer`). The probabilities are the softmax of
those three sums; :func:`~evigraph.tools.nli.results.nli_decision` then applies the same thresholds.

Why weaker: a general chat model is not trained for NLI, its label words carry priors (and a longer word
has more tokens to pay for), and small models often ignore the premise. Results say so in their engine
name (``generator:<name>``) and :meth:`GeneratorNLI.describe` carries a warning.
"""

from __future__ import annotations

import asyncio
import logging

from evigraph.errors import ConfigError
from evigraph.event_loop import run_sync
from evigraph.generators.base import ContinuationScorer, Generator
from evigraph.protocol.escaping import neutralize
from evigraph.tools.nli.engine import NLIDescription, NLIEngine, Pair, Triple
from evigraph.tools.nli.results import NLI_LABELS, softmax
from evigraph.trajectory import Segment

__all__ = ("LABEL_WORDS", "NLI_PROMPT", "GeneratorNLI", "nli_transcript")

logger = logging.getLogger(__name__)

NLI_PROMPT = (
    "Read the premise and the hypothesis, then name their relation with one word.\n"
    "entailment: the premise shows that the hypothesis is true.\n"
    "contradiction: the premise shows that the hypothesis is false.\n"
    "neutral: the premise does neither.\n\n"
    "Premise: {premise}\n"
    "Hypothesis: {hypothesis}\n\n"
    "Relation (entailment, neutral or contradiction):"
)
"""The one user message the fallback sends; premise and hypothesis are escaped before they go in."""
LABEL_WORDS = ("entailment", "neutral", "contradiction")
"""The scored continuations, in (E, N, C) order."""
WEAKER = (
    "fallback NLI: a general generator scores the label words; weaker than an NLI cross-encoder "
    "(configure an NLI checkpoint for StepGap's stages D and E)"
)


def nli_transcript(premise: str, hypothesis: str) -> list[Segment]:
    """The isolated question for one pair (nothing else from the caller's context)."""
    text = NLI_PROMPT.format(premise=neutralize(premise), hypothesis=neutralize(hypothesis))
    return [Segment(origin="prompt", role="user", text=text)]


class GeneratorNLI(NLIEngine):
    """NLI by label-word log-probabilities of an evigraph generator (the weaker fallback).

    Args:
        generator: a generator that can score continuations (the transformers backend, the scripted one).
        batch_size: pairs scored concurrently.
        cache_size: pairs the LRU cache keeps (0: no cache).

    Raises:
        ConfigError: the generator's backend cannot score given continuations.
    """

    def __init__(self, generator: Generator, *, batch_size: int = 8, cache_size: int = 4096) -> None:
        name = getattr(generator, "name", type(generator).__name__)
        if not isinstance(generator, ContinuationScorer):
            raise ConfigError(
                f"the NLI fallback needs a generator that scores given continuations; {type(generator).__name__} "
                f"({name!r}) returns logprobs of generated tokens only. Configure an NLI cross-encoder checkpoint "
                "(make_nli(checkpoint=DIR), a 3-way NLI model such as a DeBERTa-v3 NLI cross-encoder) or use a "
                "local transformers generator (hf:DIR)",
                source="nli",
            )
        super().__init__(engine=f"generator:{name}", batch_size=batch_size, cache_size=cache_size)
        self.generator = generator
        self._scorer: ContinuationScorer = generator
        logger.warning("%s: %s", self.engine, WEAKER)

    def describe(self) -> NLIDescription:
        return NLIDescription(
            engine=self.engine,
            kind="generator",
            source=f"{type(self.generator).__name__} {self.engine.removeprefix('generator:')}",
            label_order=list(NLI_LABELS),
            label_order_method="prompt",
            warnings=[WEAKER],
            cache=self.cache_info()._asdict(),
        )

    async def _ascore(self, pairs: list[Pair], batch_size: int) -> list[Triple]:
        slots = asyncio.Semaphore(batch_size)

        async def one(premise: str, hypothesis: str) -> Triple:
            async with slots:
                scores = await self._scorer.score_continuations(nli_transcript(premise, hypothesis), LABEL_WORDS)
            p_e, p_n, p_c = softmax(scores)
            return p_e, p_n, p_c

        return list(await asyncio.gather(*(one(p, h) for p, h in pairs)))

    def _score(self, pairs: list[Pair], batch_size: int) -> list[Triple]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return run_sync(lambda: self._ascore(pairs, batch_size))
        raise ConfigError("the generator NLI fallback is async: inside an event loop, await abatch_classify/aclassify")
