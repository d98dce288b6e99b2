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
import asyncio
import logging
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evigraph.errors import ConfigError
from evigraph.trajectory import Segment

__all__ = (
    "BaseGenerator",
    "Continuation",
    "FinishReason",
    "Generator",
    "Guide",
    "SamplingParams",
    "StructuredError",
    "StructuredResult",
    "check_transcript",
)

logger = logging.getLogger(__name__)

FinishReason = Literal["stop", "eos", "length"]
SchemaT = TypeVar("SchemaT", bound=BaseModel)


class Guide(BaseModel):
    """A decoding constraint for weak models at inference time (never used in RL rollouts or scoring).

    Exactly one of ``json_schema`` (a JSON Schema dict) or ``regex`` is set.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["json", "regex"]
    json_schema: dict[str, Any] | None = None
    regex: str | None = None

    @classmethod
    def json(cls, schema: dict[str, Any] | type[BaseModel]) -> Guide:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            schema = schema.model_json_schema()
        return cls(kind="json", json_schema=schema)

    @classmethod
    def pattern(cls, regex: str) -> Guide:
        return cls(kind="regex", regex=regex)


class SamplingParams(BaseModel):
    """How to sample one continuation. Every field maps onto a CLI flag ``--generator.<field>``."""

    model_config = ConfigDict(frozen=True)

    max_new_tokens: int = Field(256, ge=1)
    """Per-turn token cap (``--generator.max-new-tokens``)."""
    temperature: float = Field(0.0, ge=0.0)
    """0 means greedy decoding."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = 0
    stop: tuple[str, ...] = ()
    """Stop strings; the one that fired stays at the end of the returned text."""
    logprobs: bool = False
    """Return per-token log-probabilities of the generated tokens where the backend can."""
    guide: Guide | None = None
    """Constrained decoding (inference only); backends that cannot honour it raise ConfigError."""

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_tuple(cls, value: object) -> object:
        if isinstance(value, str):
            return (value,)
        return tuple(value) if isinstance(value, list) else value

    @field_validator("stop")
    @classmethod
    def _no_empty_stop(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not s for s in value):
            raise ValueError("stop strings must be non-empty")
        return value


class Continuation(BaseModel):
    """What one generation call produced."""

    text: str
    """The generated text. Ends with the stop string when ``finish_reason == 'stop'``; a token that ran
    past the stop string stays whole, so ``text`` always equals the decoded ``token_ids``."""
    finish_reason: FinishReason
    stop_string: str | None = None
    """Which stop string fired (``finish_reason == 'stop'``)."""
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_tokens: int | None = None

    def to_segment(self) -> Segment:
        """The policy segment to append to the transcript."""
        return Segment(
            origin="policy",
            text=self.text,
            token_ids=self.token_ids,
            # Text backends return logprobs without ids; a segment keeps them only when they can be aligned.
            logprobs=self.logprobs if self.token_ids is not None else None,
            finish_reason=self.finish_reason,
        )


class StructuredError(BaseModel):
    """Why a structured call produced no valid object (a value, never raised)."""

    kind: Literal["no_json", "invalid_json", "schema_mismatch", "truncated"]
    message: str


class StructuredResult(BaseModel, Generic[SchemaT]):
    """A validated object, or the error and the raw text of the last attempt."""

    value: SchemaT | None = None
    error: StructuredError | None = None
    raw: str = ""
    attempts: int = 1
    guided: bool = False
    """Whether the backend enforced the schema while decoding."""

    @property
    def ok(self) -> bool:
        return self.value is not None


@runtime_checkable
class Generator(Protocol):
    """What graphs need from an LLM backend. Implementations: ``evigraph.generators.*``."""

    name: str

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
        return asyncio.run(self.continue_transcript(transcript, params))

    async def aclose(self) -> None:  # noqa: B027 -- optional hook; most backends hold nothing to release
        """Release backend resources (engines, HTTP clients). Safe to call twice."""
