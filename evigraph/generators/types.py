"""The value types of the generator interface: sampling parameters, decoding guides, continuations and
structured results.

They live apart from :mod:`evigraph.generators.base` (the interface and its shared behaviour) so that modules
the base class uses, such as :mod:`evigraph.generators.structured`, can import them without a cycle.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evigraph.trajectory import Segment

__all__ = (
    "Continuation",
    "FinishReason",
    "Guide",
    "SamplingParams",
    "SchemaT",
    "StructuredError",
    "StructuredResult",
)

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
    completion_tokens: int | None = None
    """How many tokens the server says it generated (text backends: ``usage.completion_tokens``)."""

    @property
    def generated_tokens(self) -> int:
        """Tokens generated: the exact ids where the backend returns them, else the server's count, else 0."""
        if self.token_ids is not None:
            return len(self.token_ids)
        return self.completion_tokens or 0

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
    continuation: Continuation | None = None
    """The last attempt's generation (its token ids and logprobs, where the backend gives them): what a caller
    needs to read the probability of one value in the JSON (StepGap's stage confidences)."""

    @property
    def ok(self) -> bool:
        return self.value is not None
