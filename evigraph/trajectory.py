"""The records every graph returns, the trainer consumes and the evaluation runner stores.

A :class:`Trajectory` is a run of one agent on one input: the transcript as :class:`Segment`\\ s (who wrote
each piece: the prompt, the policy model or the environment), the agent's :class:`Step`\\ s with their token
spans and typed rewards, the final output, and -- if the run failed -- the error. A failed rollout is data,
not a crash: ``error`` is set and the other fields hold whatever was produced before the failure.

All models round-trip through JSON (``model_dump_json`` / ``model_validate_json``); see
:mod:`evigraph.jsonl` for files.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = (
    "EOS_MARKER",
    "Evidence",
    "Origin",
    "RewardComponent",
    "Segment",
    "Step",
    "Timing",
    "Trajectory",
    "TrajectoryError",
    "flat_response",
    "last_policy_turn",
    "segment_spans",
    "strip_eos",
)

Origin = Literal["prompt", "policy", "environment"]
"""Who wrote a segment. Only ``policy`` tokens are trained on; the rest are masked."""


EOS_MARKER = re.compile(r"(?:<\|[A-Za-z0-9_]+\|>|</s>|<eos>)[ \t\r\n]*\Z")
"""One end-of-sequence marker at the end of a text (Qwen ``<|im_end|>``, Llama ``<|eot_id|>``, ``</s>``...)."""


def strip_eos(text: str) -> str:
    """``text`` without one trailing end-of-sequence marker (and whitespace after it)."""
    return EOS_MARKER.sub("", text)


def last_policy_turn(segments: Sequence[Segment]) -> Segment | None:
    """The last policy segment (``None`` before the first turn or when generation failed): the reply a
    one-turn agent's parser and reward read (its :attr:`Segment.reply`)."""
    return next((s for s in reversed(segments) if s.origin == "policy"), None)


def segment_spans(segments: Sequence[Segment]) -> list[tuple[int, int]] | None:
    """Each segment's half-open token range in the whole sequence, or ``None`` if some segment has no ids."""
    spans, position = [], 0
    for segment in segments:
        if segment.token_ids is None:
            return None
        spans.append((position, position + len(segment.token_ids)))
        position += len(segment.token_ids)
    return spans


def flat_response(segments: Sequence[Segment]) -> str:
    """Policy and environment text in order, after the prompt: the ``response`` string other systems' records
    store (and what flat-text evaluators read)."""
    return "".join(s.text for s in segments if s.origin != "prompt")


class Evidence(BaseModel):
    """One retrieved entry, exactly as the corpus stores it (ids are what agents cite)."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    title: str | None = None
    """The title of the document the entry belongs to, where the corpus knows one."""
    source: str | None = None
    """Corpus name or path the entry came from."""
    score: float | None = None
    """Retrieval score (BM25 etc.); ``None`` when the evidence was given, not retrieved."""


class Segment(BaseModel):
    """A contiguous piece of the transcript written by one party.

    ``text`` is the content as the model saw it (environment text already escaped). ``token_ids`` are the
    exact ids the model consumed or produced for this piece, including the chat-template wrapping of
    environment turns, so the concatenation over all segments is the exact training sequence. Prompt
    messages render jointly through the chat template, so their ids sit on the last prompt segment.
    """

    origin: Origin
    text: str
    role: Literal["system", "user"] | None = None
    """Chat role of a prompt segment; policy segments are assistant turns, environment segments user turns."""
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    """Per-token log-probabilities of policy tokens, aligned with ``token_ids``."""
    finish_reason: Literal["stop", "eos", "length"] | None = None
    """How a policy segment ended: a stop string, the end-of-sequence token, or the token cap."""

    @model_validator(mode="after")
    def _check(self) -> Segment:
        if self.origin == "prompt" and self.role is None:
            raise ValueError("a prompt segment needs role 'system' or 'user'")
        if self.origin != "prompt" and self.role is not None:
            raise ValueError(f"role is only set on prompt segments, not on {self.origin!r} segments")
        if self.logprobs is not None and (self.token_ids is None or len(self.logprobs) != len(self.token_ids)):
            raise ValueError("logprobs must align one-to-one with token_ids")
        return self

    @property
    def reply(self) -> str:
        """What the model wrote: ``text`` without the end-of-sequence token's text when the turn ended on it (a
        policy turn's text is the decoding of its ids, that token included; a parser must not see it)."""
        return strip_eos(self.text) if self.finish_reason == "eos" else self.text

    @property
    def chat_role(self) -> Literal["system", "user", "assistant"]:
        """The chat role this segment renders as (the single transcript convention)."""
        if self.origin == "policy":
            return "assistant"
        if self.origin == "environment":
            return "user"
        assert self.role is not None
        return self.role


class RewardComponent(BaseModel):
    """One named reward value; the name is its log key (e.g. ``evidence_iou``)."""

    model_config = ConfigDict(frozen=True)

    type: str
    value: float


class Step(BaseModel):
    """One agent step (a turn, a ``## Step N`` block, a checker stage ...).

    ``segment_index`` points at the policy segment the step came from and ``char_span`` (when the step is a
    part of that segment, e.g. one ``## Step N`` block) at its characters there; ``token_span`` is the
    half-open ``[start, end)`` range of the step's tokens in the full sequence (filled once token ids are
    known, see :func:`evigraph.graphs.kit.assembly.assemble_trajectory`). ``payload`` holds the agent's typed
    step record (dumped to a dict at this boundary).
    """

    index: int
    kind: str
    text: str
    segment_index: int | None = None
    char_span: tuple[int, int] | None = None
    """Half-open character range of the step inside its segment's text; ``None`` = the whole segment."""
    token_span: tuple[int, int] | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    rewards: list[RewardComponent] = Field(default_factory=list)


class Timing(BaseModel):
    """Wall-clock accounting of one run, in seconds."""

    started_at: float | None = None
    """Unix time the run started."""
    wall_s: float = 0.0
    generate_s: float = 0.0
    tools_s: float = 0.0
    generated_tokens: int = 0


class TrajectoryError(BaseModel):
    """Why a run failed; ``where`` names the node or boundary (``generate``, ``search`` ...)."""

    type: str
    message: str
    where: str | None = None


class Trajectory(BaseModel):
    """One run of one agent on one input."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    agent: str
    input: dict[str, Any]
    segments: list[Segment] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    output: dict[str, Any] | None = None
    rewards: list[RewardComponent] = Field(default_factory=list)
    reward_scalar: str | None = None
    """Which of ``rewards`` the trainer optimises (the agent's reward declares it); ``None`` when unscored."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    timing: Timing = Field(default_factory=Timing)
    error: TrajectoryError | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def policy_text(self) -> str:
        """Everything the policy wrote, in order (what format rewards read)."""
        return "".join(s.text for s in self.segments if s.origin == "policy")

    @property
    def response(self) -> str:
        """:func:`flat_response` of the segments."""
        return flat_response(self.segments)

    def reward(self, type: str) -> float | None:
        """The value of the reward component named ``type``, or ``None`` if absent."""
        for component in self.rewards:
            if component.type == type:
                return component.value
        return None

    def token_ids(self) -> list[int] | None:
        """The exact token sequence, or ``None`` if some segment has no ids (a text-only backend)."""
        ids: list[int] = []
        for segment in self.segments:
            if segment.token_ids is None:
                return None
            ids.extend(segment.token_ids)
        return ids

    def action_ranges(self) -> list[tuple[int, int]] | None:
        """Half-open token ranges of policy segments in :meth:`token_ids` coordinates (the loss mask)."""
        spans = segment_spans(self.segments)
        if spans is None:
            return None
        return [span for span, segment in zip(spans, self.segments, strict=True) if segment.origin == "policy"]
