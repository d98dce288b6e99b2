"""Search-R1 boundary types: the generator's config, the graph's input and result, and what a run produced."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from evigraph.trajectory import Trajectory

__all__ = ("SearchR1Config", "SearchR1Inputs", "SearchR1Output", "SearchR1Result", "TraceStepRecord")


class SearchR1Config(BaseModel):
    """The generator's limits (specs/stepgap.md §2.1, §9 #1)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    max_searches: int = Field(4, ge=0)
    """Searches per question; then the next turn must answer."""
    top_k: int = Field(5, ge=1)
    """Passages per search."""
    max_new_tokens: int = Field(1024, ge=1)
    """Per-turn token cap."""
    max_information_tokens: int = Field(768, ge=16)
    """Cap on one rendered information block."""
    logprobs: bool = True
    """Ask the backend for logprobs (training and confidence need them)."""
    constrained: bool | None = None
    """Guide each turn with a grammar built from the question (weak models, inference only); default: the
    generator's weak-model mode."""

    @property
    def turns(self) -> int:
        """Generation turns: every search plus the answer turn."""
        return self.max_searches + 1


class SearchR1Inputs(TypedDict, total=False):
    """What the graph's ``ainvoke`` takes: ``question`` (required), ``id``, ``golds`` (answer aliases)."""

    question: str
    id: str
    golds: list[str]


class TraceStepRecord(BaseModel):
    """One step of a finished run, as StepGap reads it (``evigraph.agents.stepgap.schemas.TraceStep``'s fields)."""

    model_config = ConfigDict(frozen=True)

    reasoning: str
    query: str | None = None
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    answer: str | None = None
    text: str
    segment_index: int
    char_span: tuple[int, int]


class SearchR1Output(BaseModel):
    """What a run produced: the final answer (``None`` without one), its steps and searches."""

    model_config = ConfigDict(frozen=True)

    question: str
    answer: str | None
    steps: list[TraceStepRecord]
    queries: list[str]
    n_searches: int
    n_turns: int
    format_ok: bool
    em: int | None = None
    """Exact match against the run's gold aliases, when given."""


class SearchR1Result(TypedDict):
    output: SearchR1Output
    trajectory: Trajectory
