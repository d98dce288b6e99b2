"""RAG-Zeval boundary types (specs/rag-zeval.md §1, §2.3, §6): the run config, the graph's input and result,
the parsed evaluation (claims per candidate), the gold order and the ranked candidate sets synthesis writes."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal, Required

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from typing_extensions import TypedDict

from evigraph.inputs import NOT_BLANK, NonBlank
from evigraph.trajectory import Trajectory

__all__ = (
    "LETTERS",
    "Claim",
    "ParseMode",
    "RagZevalConfig",
    "RagZevalGold",
    "RagZevalInputs",
    "RagZevalOutput",
    "RagZevalResult",
    "RankedCandidate",
    "RankedSet",
    "ReferenceKind",
    "ScoredCandidate",
)

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""Candidate ids in prompt order (§1: ``"A"``, ``"B"``, ...)."""

ReferenceKind = Literal["faithfulness", "correctness"]
"""What the reference is: retrieved passages (faithfulness) or the ground-truth answer (correctness), §1."""

ParseMode = Literal["strict", "lenient", "failed"]
"""How the reply was read (§2.2): strict JSON, the inference-only regex fallback, or not at all."""

_FROZEN = ConfigDict(frozen=True)


class RagZevalConfig(BaseModel):
    """Knobs of one RAG-Zeval run; each scalar field is a flag of the agent's commands and a key of
    ``[agents.rag-zeval]``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    inherit_from_generator: ClassVar[Mapping[str, str]] = {"max_new_tokens": "max_new_tokens"}

    max_new_tokens: int = Field(2048, ge=1)
    """Token cap of the evaluator's one turn (the paper allows 8,192, spec O11)."""
    # spec §8: always shuffle, with a seed fixed per evaluation run
    shuffle_seed: int = 0
    """Seed of the shuffle of candidate order and letters. Each record's id is mixed in, so every record gets
    its own order, the same on every run."""
    shuffle: bool = True
    """Shuffle candidate order and letters (turn off only to reproduce a given order)."""
    # the regex reading of spec §2.2
    lenient: bool = True
    """At inference, read a reply that is not valid JSON with a forgiving pattern match instead of failing
    (never in strict or training runs). Rewards always read the reply strictly, whatever this says."""
    guided: bool | None = None
    """Decode the reply under its JSON schema where the backend can (inference only); default: the generator's
    weak-model mode."""


class RankedCandidate(BaseModel):
    """One candidate response and its place in the known order (larger ``alpha`` = better, §2.4)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    alpha: float
    """The CAD weight it was decoded with; any number whose order is the quality order works."""

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("a candidate's text is empty")
        return text


class RankedSet(BaseModel):
    """One synthesised instance (§6): a question, its reference and candidates of known order.

    The line format of ``evigraph synthesize rag-zeval`` output, ``evigraph eval rag-zeval`` input and the
    training prompts. Candidates are stored best first; their letters are assigned per run (shuffled).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    question: str
    reference: str
    candidates: tuple[RankedCandidate, ...] = Field(min_length=2, max_length=len(LETTERS))
    kind: ReferenceKind = "faithfulness"
    source: str | None = None
    """Where the item came from (data set and its id), for audits."""

    @model_validator(mode="after")
    def _distinct(self) -> RankedSet:
        alphas = [c.alpha for c in self.candidates]
        if len(set(alphas)) != len(alphas):
            raise ValueError(f"field candidates: alphas must be distinct (a tie has no order), got {alphas}")
        texts = [c.text.strip() for c in self.candidates]
        if len(set(texts)) != len(texts):
            raise ValueError("field candidates: two candidates have the same text (§8: such a set cannot be ranked)")
        return self

    def best_first(self) -> tuple[RankedCandidate, ...]:
        return tuple(sorted(self.candidates, key=lambda c: -c.alpha))

    def subset(self, size: int, *, seed: int) -> RankedSet:
        """``size`` of the candidates, a seeded random choice per instance (spec O6: epoch 1 of the curriculum
        sees 3 of the 4), kept best first; the whole set when it has no more than ``size``."""
        if size < 2:
            raise ValueError(f"a ranked set needs at least 2 candidates, asked for {size}")
        if len(self.candidates) <= size:
            return self
        kept = random.Random(f"{seed}:{self.id}").sample(range(len(self.candidates)), size)
        chosen = tuple(self.best_first()[i] for i in sorted(kept))
        return self.model_copy(update={"candidates": chosen})


class RagZevalInputs(TypedDict, total=False):
    """What the graph's ``ainvoke`` takes. ``candidates`` are texts in the caller's order; ``gold`` (``{"alphas":
    [...]}``, one per candidate, larger is better) makes the run carry its reward."""

    id: str
    question: Required[NonBlank]
    reference: Required[NonBlank]
    candidates: Required[Annotated[list[str], NOT_BLANK]]
    kind: ReferenceKind
    gold: dict[str, object] | None


class Claim(BaseModel):
    """One atomic claim of a candidate (§1)."""

    model_config = _FROZEN

    claim: str
    is_supported: bool
    grounding_evidence: tuple[str, ...] = ()
    analysis: str = ""


class ScoredCandidate(BaseModel):
    """One candidate as the evaluator judged it."""

    model_config = _FROZEN

    id: str
    """Its letter in the prompt."""
    index: int
    """Its position in the caller's ``candidates`` list."""
    claims: tuple[Claim, ...] = ()
    """Empty when the reply was read by the regex fallback (it counts labels only)."""
    supported: int = 0
    total: int = 0

    @property
    def score(self) -> float:
        """``S(y)`` = supported / total (0.0 without claims, §2.2 / O7)."""
        return self.supported / self.total if self.total else 0.0


class RagZevalOutput(BaseModel):
    """What one evaluation concluded: per candidate its claims and score, and the ranking they imply."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: ReferenceKind = "faithfulness"
    letters: tuple[str, ...] = ()
    """``letters[i]`` is the letter candidate ``i`` (caller's order) was shown under."""
    candidates: tuple[ScoredCandidate, ...] = ()
    """In the caller's order."""
    parse_mode: ParseMode = "failed"
    parse_error: str | None = None
    format_ok: bool = False
    """The reply passes the format gate of §3.1 (strict JSON, the exact candidate set, every field typed)."""

    @property
    def scores(self) -> tuple[float, ...]:
        return tuple(c.score for c in self.candidates)

    @property
    def ranking(self) -> tuple[int, ...]:
        """Caller indices, best first (ties keep the caller's order)."""
        return tuple(sorted(range(len(self.candidates)), key=lambda i: -self.candidates[i].score))


class RagZevalGold(BaseModel):
    """The known quality of each candidate: one number per candidate in the caller's order, larger is better."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    alphas: tuple[float, ...] = Field(min_length=2)

    @field_validator("alphas")
    @classmethod
    def _distinct(cls, alphas: tuple[float, ...]) -> tuple[float, ...]:
        if len(set(alphas)) != len(alphas):
            raise ValueError(f"alphas must be distinct (a tie has no order), got {list(alphas)}")
        return alphas


class RagZevalResult(TypedDict):
    """What the graph returns."""

    output: RagZevalOutput
    trajectory: Trajectory
