"""SEVA boundary types (specs/seva.md §1, §2): the taxonomy, the run config, the graph's input and result, the
structured verdict (for guided decoding and teacher data), the parsed output and the gold label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Required

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import TypedDict

# The labels are defined beside their aliases and re-exported here, where the rest of the schema vocabulary is.
from evigraph.agents.seva.labels import ATTRIBUTABLE, LABELS, NOT_ATTRIBUTABLE, Label, normalize_label
from evigraph.inputs import NonBlank
from evigraph.trajectory import Trajectory

__all__ = (
    "ALIGNMENT_STATUSES",
    "ATTRIBUTABLE",
    "ERROR_TYPES",
    "JUDGMENTS",
    "LABELS",
    "NOT_ATTRIBUTABLE",
    "Alignment",
    "ChainStep",
    "ErrorType",
    "Label",
    "SevaConfig",
    "SevaGold",
    "SevaInputs",
    "SevaOutput",
    "SevaResult",
    "SourceSpanCheck",
    "Verdict",
)

ErrorType = Literal[
    "numerical_exaggeration", "negation_flip", "scope_inflation", "temporal_shift", "entity_substitution", "fabrication"
]
ERROR_TYPES: tuple[ErrorType, ...] = (
    "numerical_exaggeration",
    "negation_flip",
    "scope_inflation",
    "temporal_shift",
    "entity_substitution",
    "fabrication",
)
"""The six error types in the taxonomy order of §1 (largest-remainder ties follow it)."""

ALIGNMENT_STATUSES = ("match", "mismatch", "not_found")
JUDGMENTS = ("supported", "not_supported", "partially_supported")


class Alignment(BaseModel):
    """One evidence alignment: a piece of the claim, the source text it lines up with, and how."""

    claim_span: str = Field(min_length=1, max_length=60)
    source_span: str = Field(max_length=100)
    status: Literal["match", "mismatch", "not_found"]


class ChainStep(BaseModel):
    """One reasoning step: a part of the claim, the source evidence for it, the judgment and why."""

    claim_part: str = Field(min_length=1, max_length=60)
    source_evidence: str = Field(max_length=100)
    judgment: Literal["supported", "not_supported", "partially_supported"]
    explanation: str = Field(min_length=10, max_length=100)


class Verdict(BaseModel):
    """The structured verdict of §1 with its value sets. Guided decoding (weak-model mode, inference only) uses
    it narrowed to one claim and source (:func:`~evigraph.agents.seva.decoding.verdict_schema`). The bounds --
    short strings within the rubric's lengths, two alignments, two steps -- keep a small model, which tends to
    repeat itself until a limit stops it, well inside the token cap. Rewards never use this model: they read the
    raw JSON leniently (§2.2)."""

    evidence_alignment: list[Alignment] = Field(min_length=1, max_length=2)
    reasoning_chain: list[ChainStep] = Field(min_length=2, max_length=2)
    label: Label
    confidence: float = Field(ge=0.0, le=1.0)
    error_type: ErrorType | None = None
    fix_suggestion: str | None = Field(None, max_length=100)


class SevaConfig(BaseModel):
    """Knobs of one SEVA run; each scalar field is a flag of the agent's commands and a key of ``[agents.seva]``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    inherit_from_generator: ClassVar[Mapping[str, str]] = {"max_new_tokens": "max_new_tokens"}

    max_new_tokens: int = Field(1024, ge=1)
    """Token cap of the verdict turn (the paper: 512 in training, 1,024 at inference)."""
    guided: bool | None = None
    """Decode the verdict under its JSON schema where the backend can (inference only); default: the
    generator's weak-model mode."""
    repair: bool = True
    """Beyond the paper, inference only: one more turn when the reply is not valid JSON. Never in strict
    (training) runs or runs given their gold label, whose reward must see the first reply."""


class SevaInputs(TypedDict, total=False):
    """What the graph's ``ainvoke`` takes: ``claim``, ``source`` and optionally ``id`` and ``gold``
    (``{"label": "Attributable" | "Not Attributable"}``), which makes the run carry its reward."""

    id: str
    claim: Required[NonBlank]
    source: Required[NonBlank]
    gold: dict[str, Any]


class SourceSpanCheck(BaseModel):
    """Whether one quoted ``source_span`` / ``source_evidence`` really occurs in the source (beyond the paper;
    spec §8 notes the rubric never checks it)."""

    model_config = ConfigDict(frozen=True)

    field: Literal["evidence_alignment", "reasoning_chain"]
    index: int
    text: str
    found: bool
    start: int | None = None
    end: int | None = None


class SevaOutput(BaseModel):
    """What one SEVA run concluded: the raw reply, its parse (§2.2), the normalised label and diagnosis, and
    where the quoted source spans are."""

    model_config = ConfigDict(frozen=True)

    raw: str
    parse_ok: bool
    parse_error: str | None = None
    parsed: dict[str, Any] | None = None
    """The reply's JSON object as written (rewards read it leniently)."""
    label: Label | None = None
    """``None``: missing or not in the alias table (counted as wrong)."""
    confidence: float | None = None
    """The confidence the reply states; ``None`` when it states no number in [0, 1]. The confidence reward reads
    the reply itself (0 then, §3.7): here a missing value stays missing, so no output shows an invented 0.00."""
    error_type: str | None = None
    fix_suggestion: str | None = None
    format_score: float = 0.0
    """R_f of the reply (1.0 = every field present and well-typed)."""
    truncated: bool = False
    repaired: bool = False
    """The verdict came from the repair turn (inference only)."""
    source_spans: tuple[SourceSpanCheck, ...] = ()

    @property
    def grounded_share(self) -> float | None:
        """Share of non-empty quoted source spans that occur in the source (``None`` when none were quoted)."""
        if not self.source_spans:
            return None
        return sum(c.found for c in self.source_spans) / len(self.source_spans)


class SevaResult(TypedDict):
    """What the graph returns."""

    output: SevaOutput
    trajectory: Trajectory


class SevaGold(BaseModel):
    """A gold answer: the label (aliases of §3.5 accepted), and for generated probes the error category."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    label: Label
    category: ErrorType | None = None
    """The error type a probe was made with (Reflect's detection accuracy needs it)."""

    @field_validator("label", mode="before")
    @classmethod
    def _alias(cls, value: object) -> object:
        return normalize_label(value) or value  # an unknown label fails with the two accepted ones listed
