"""The one interface every LLM node talks to.

A :class:`Generator` has two faces:

- :meth:`Generator.continue_transcript` continues a transcript (a list of :class:`~evigraph.trajectory.Segment`)
  until a stop string, the end-of-sequence token or the token cap, and returns a :class:`Continuation`:
  the text, how it finished and -- where the backend has them -- the exact token ids and logprobs.
- :meth:`Generator.structured` returns a validated pydantic object inside a :class:`StructuredResult`:
  guided JSON where the backend supports it, else parse plus one repair turn, else a typed error value.
  It never raises on model text.

Transcript convention (decided once, used by inference, rollouts and SFT export): prompt segments are the
system/user messages; each policy segment is an assistant turn and **includes its stop string**; each
environment segment (tool output, corrective note) is rendered as a **new user turn**. Token backends render
that through :class:`~evigraph.generators.chat_format.ChatFormat`; chat backends send the same messages.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

from evigraph.errors import ConfigError
from evigraph.event_loop import run_sync
from evigraph.generators.chat_format import ChatFormat
from evigraph.generators.types import (
    Continuation,
    SamplingParams,
    SchemaT,
    StructuredResult,
)
from evigraph.trajectory import Segment

__all__ = ("BaseGenerator", "ContinuationScorer", "Generator", "check_transcript")

logger = logging.getLogger(__name__)


@runtime_checkable
class Generator(Protocol):
    """What graphs need from an LLM backend. Implementations: ``evigraph.generators.*``.

    **Token-level backends** (transformers, vLLM, a scripted generator given a tokenizer) set
    :attr:`chat_format` and promise two things: every :class:`Continuation` carries the exact ``token_ids``
    the model produced (and ``logprobs`` when asked for), and the model consumed exactly
    ``chat_format.render(transcript)``. Graphs rely on these to store exact training sequences; text
    backends (chat APIs) leave :attr:`chat_format` as ``None``. See :mod:`evigraph.tokens` for the strict
    mode training uses.
    """

    name: str
    chat_format: ChatFormat | None
    """The tokenizer and chat template this backend renders transcripts with; ``None`` on text backends."""
    context_window: int | None
    """The most tokens one sequence (prompt plus everything generated) may hold, when the backend knows it."""
    constrained: bool
    """Weak-model mode (inference only): agents guide each turn with a grammar (a regex :class:`Guide`) and
    may show a worked example in their prompts. Never on for RL rollouts: a guide changes the distribution."""

    async def continue_transcript(self, transcript: Sequence[Segment], params: SamplingParams) -> Continuation:
        """Continue ``transcript`` with one policy turn."""
        ...

    async def structured(
        self,
        transcript: Sequence[Segment],
        schema: type[SchemaT],
        params: SamplingParams | None = None,
    ) -> StructuredResult[SchemaT]:
        """Answer ``transcript`` with one ``schema`` object (guided, or parse + one repair turn)."""
        ...


@runtime_checkable
class ContinuationScorer(Protocol):
    """An optional capability: score given continuations of a transcript instead of sampling one.

    Implemented by the transformers backend and the scripted test double; used where a generator must rank a
    fixed set of answers (the NLI fallback of :mod:`evigraph.tools.nli`). Backends whose APIs return
    logprobs of generated tokens only (chat APIs, vLLM here) do not implement it.
    """

    async def score_continuations(self, transcript: Sequence[Segment], continuations: Sequence[str]) -> list[float]:
        """The sum of the token log-probabilities of each continuation right after the rendered transcript
        (teacher-forced, temperature 1); an empty continuation scores 0.0."""
        ...


def check_transcript(transcript: Sequence[Segment], *, allow_trailing_policy: bool) -> None:
    """Reject transcripts no backend can render, with a message saying what is wrong.

    Raises:
        ConfigError: empty transcript, prompt segments after the start, two environment segments in a
            row (one environment turn is one segment), or (for chat backends) a
            transcript ending in a policy segment, which would need assistant prefill.
    """
    if not transcript:
        raise ConfigError("the transcript is empty: it needs at least one prompt segment")
    if transcript[0].origin != "prompt":
        raise ConfigError(f"a transcript starts with prompt segments, got {transcript[0].origin!r} first")
    seen_other = False
    for position, segment in enumerate(transcript):
        if segment.origin != "prompt":
            seen_other = True
        elif seen_other:
            raise ConfigError(f"segment {position}: prompt segments must all come before policy/environment ones")
        if position and segment.origin == "environment" and transcript[position - 1].origin == "environment":
            raise ConfigError(f"segment {position}: merge consecutive environment notes into one segment")
    if transcript[-1].origin == "policy" and not allow_trailing_policy:
        raise ConfigError(
            "the transcript ends with a policy segment; this backend cannot continue an assistant turn "
            "(append an environment segment, or use a token backend)"
        )


class BaseGenerator(abc.ABC):
    """Shared behaviour: argument checks, the structured-output fallback, a sync convenience.

    Subclasses implement :meth:`_continue` and declare which guides they can enforce.
    """

    name: str = "generator"
    chat_format: ChatFormat | None = None
    """Set by token-level backends (see :class:`Generator`)."""
    context_window: int | None = None
    """The model's context length where known (graphs keep whole runs inside it)."""
    constrained: bool = False
    """Weak-model mode (see :class:`Generator`); set by :func:`~evigraph.generators.factory.make_generator`."""
    supported_guides: ClassVar[frozenset[str]] = frozenset()
    """Guide kinds (``json``/``regex``) this backend can enforce while decoding."""
    can_continue_policy: ClassVar[bool] = False
    """Whether a transcript may end in a policy segment (token backends: yes; chat APIs: no)."""

    async def continue_transcript(self, transcript: Sequence[Segment], params: SamplingParams) -> Continuation:
        check_transcript(transcript, allow_trailing_policy=self.can_continue_policy)
        if params.guide is not None and params.guide.kind not in self.supported_guides:
            accepted = sorted(self.supported_guides) or ["none"]
            raise ConfigError(
                f"{self.name} cannot enforce a {params.guide.kind!r} guide (supported: {', '.join(accepted)})",
                source="guide",
            )
        return await self._continue(list(transcript), params)

    @abc.abstractmethod
    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        """Backend-specific generation; arguments are already checked."""

    async def structured(
        self,
        transcript: Sequence[Segment],
        schema: type[SchemaT],
        params: SamplingParams | None = None,
    ) -> StructuredResult[SchemaT]:
        from evigraph.generators.structured import generate_structured

        return await generate_structured(self, transcript, schema, params or SamplingParams(max_new_tokens=512))

    def continue_sync(self, transcript: Sequence[Segment], params: SamplingParams) -> Continuation:
        """Blocking wrapper for scripts and notebooks without a running event loop."""
        return run_sync(lambda: self.continue_transcript(transcript, params))

    async def aclose(self) -> None:  # noqa: B027 -- optional hook; most backends hold nothing to release
        """Release backend resources (engines, HTTP clients). Safe to call twice."""
