"""RLSeek boundary types (specs/rlseek.md §1, §2.3): the run config, the graph's input and result, the parsed
detection (spans, steps, quotes) and the gold spans."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Required

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from evigraph.inputs import NOT_BLANK, NonBlank
from evigraph.trajectory import Trajectory

__all__ = (
    "RAGTRUTH_TASKS",
    "TASKS",
    "DetectedSpan",
    "PromptVariant",
    "QuoteCheck",
    "RLSeekConfig",
    "RLSeekGold",
    "RLSeekInputs",
    "RLSeekOutput",
    "RLSeekResult",
    "ReasoningStep",
    "Span",
    "TaskName",
    "TaskType",
    "task_variant",
)

TaskType = Literal["summary", "qa", "data-to-text", "claim"]
"""The four prompt variants (§2.1): RAGTruth's Summary, QA and Data2txt, and the claim (NewsSum) variant."""
TASKS: tuple[TaskType, ...] = ("summary", "qa", "data-to-text", "claim")
RAGTRUTH_TASKS: Mapping[str, TaskType] = {"Summary": "summary", "QA": "qa", "Data2txt": "data-to-text"}
"""RAGTruth's ``task_type`` names → our prompt variant."""
_VARIANTS: Mapping[str, TaskType] = {
    **{t: t for t in TASKS},
    **{name.lower(): variant for name, variant in RAGTRUTH_TASKS.items()},
}

TaskName = Annotated[str, Field(min_length=1)]
"""A task as a data file names it (any non-empty string: ``QA``, ``summary``, another set's own names). Scores
are reported per name as given; only a run maps it to a prompt variant (:func:`task_variant`)."""


def task_variant(name: str) -> TaskType:
    """The prompt variant a run uses for the task ``name``: ours or RAGTruth's names, in any letter case.

    Raises:
        ValueError: an unknown name; the message lists the known ones.
    """
    variant = _VARIANTS.get(name.lower())
    if variant is None:
        known = ", ".join([*TASKS, *RAGTRUTH_TASKS])
        raise ValueError(f"unknown task {name!r} for a run: expected one of {known} (any letter case)")
    return variant


PromptVariant = Literal["seek", "cot"]
"""``seek``: every verification step quotes the source first (RLSeek); ``cot``: the plain step-by-step
baseline (RL4HS-style), same layout without the quoting instruction."""


def _ordered(span: tuple[int, int]) -> tuple[int, int]:
    if not 0 <= span[0] <= span[1]:
        raise ValueError(f"a span needs 0 <= start <= end, got [{span[0]}, {span[1]}]")
    return span


Span = Annotated[tuple[int, int], AfterValidator(_ordered)]
"""Half-open ``[start, end)`` character offsets into the response (checked ``0 <= start <= end`` in models)."""

_FROZEN = ConfigDict(frozen=True)


class RLSeekConfig(BaseModel):
    """Knobs of one RLSeek run; each scalar field is a flag of the agent's commands and a key of
    ``[agents.rlseek]``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    inherit_from_generator: ClassVar[Mapping[str, str]] = {"max_new_tokens": "max_new_tokens"}

    max_new_tokens: int = Field(1024, ge=1)
    """Token cap of the detector's turn (the paper trains with 4,096, spec O7)."""
    variant: PromptVariant = "seek"
    """Prompt variant: seek (quote, then judge) or cot (the baseline without quoting)."""
    requote: bool = False
    """Beyond the paper, inference only: when some quote is not in the source, ask once more for verbatim
    quotes. Such a run carries no reward, and strict (training) runs never re-quote."""
    max_requotes: int = Field(1, ge=1, le=3)
    """Re-quote turns at most (with --requote)."""
    constrained: bool | None = None
    """Guide the turn with a grammar of the step layout (weak models, inference only); default: the generator's
    weak-model mode (on for the embedded model)."""
    demonstration: bool | None = None
    """Show a worked detection in the prompt (small models follow examples); default: with constrained decoding."""


class RLSeekInputs(TypedDict, total=False):
    """What the graph's ``ainvoke`` takes. ``source`` is a JSON object for data-to-text (rendered
    deterministically, spec O5) and text otherwise; ``question`` is the QA variant's; ``gold``
    (``{"spans": [[start, end], ...]}``) makes the run carry its reward."""

    id: str
    task: Required[TaskType]
    source: Required[Annotated[str | dict[str, Any], NOT_BLANK]]
    response: Required[NonBlank]
    question: str | None
    gold: dict[str, Any] | None


class QuoteCheck(BaseModel):
    """One ``<quote>`` of a step, checked against the rendered source."""

    model_config = _FROZEN

    step: int
    """Index of the step it belongs to."""
    text: str
    """The quote, whitespace-stripped (P4)."""
    start: int | None = None
    """Where the shared quote matcher found it in the source (``None``: not found)."""
    end: int | None = None
    rule: Literal["exact", "normalized"] | None = None
    """``exact``: verbatim; ``normalized``: only up to whitespace and letter case."""
    lcs: int
    """Longest common substring with the source, in characters, whitespace runs collapsed (spec O3)."""
    length: int
    """The quote's length under the same whitespace collapsing."""

    @property
    def found(self) -> bool:
        return self.start is not None

    @property
    def overlap(self) -> float:
        """``LCS / |Q|`` (1.0 = verbatim up to whitespace runs); 0.0 for an empty quote."""
        return self.lcs / self.length if self.length else 0.0


class ReasoningStep(BaseModel):
    """One ``## Step N`` block of the completion (P3), by character offsets into the completion."""

    model_config = _FROZEN

    index: int
    header: str
    start: int
    end: int
    quotes: tuple[int, ...] = ()
    """Indices into :attr:`RLSeekOutput.quotes`."""
    problems: tuple[str, ...] = ()
    """Why the step makes the quotation set invalid: ``no_quote``, ``empty_quote``, ``unbalanced_tag``."""
    implicit: bool = False
    """The completion had no step header: the whole reasoning region is this one step."""


class DetectedSpan(BaseModel):
    """A predicted hallucinated span of the response and the quotes of the steps that named it."""

    model_config = _FROZEN

    start: int
    end: int
    text: str
    """``response[start:end]``."""
    quotes: tuple[int, ...] = ()
    """Indices into :attr:`RLSeekOutput.quotes`: the quotes of every step whose text names this span."""
    steps: tuple[int, ...] | None = None
    """Positions in :attr:`RLSeekOutput.steps` of the steps whose text names this span: empty when none does (the
    final list flags what the reasoning never discussed); ``None`` in outputs written before it was recorded."""


class RLSeekOutput(BaseModel):
    """What one detection concluded (spec §1's output record, with the checks behind it)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    task: TaskType
    spans: tuple[DetectedSpan, ...] = ()
    """Matched spans in order of their first mention; overlaps are kept here and counted once by metrics."""
    raw_list: tuple[str, ...] = ()
    """The final list as the model wrote it."""
    unmatched: tuple[str, ...] = ()
    """Listed strings found nowhere in the response: each counts its length as false-positive characters."""
    steps: tuple[ReasoningStep, ...] = ()
    quotes: tuple[QuoteCheck, ...] = ()
    parse_ok: bool = False
    """A final list was found and is a list of strings (P1-P2)."""
    parse_error: str | None = None
    quotes_valid: bool = False
    """Every step has at least one non-empty quote and every quote tag is balanced (§3.2)."""
    requotes: int = 0
    """Re-quote turns taken (``--requote``)."""

    @property
    def phantom_chars(self) -> int:
        return sum(len(s) for s in self.unmatched)

    @property
    def predicted_positive(self) -> bool:
        """The sample is flagged: the parsed list holds a non-blank string (§4.2)."""
        return self.parse_ok and any(s.strip() for s in self.raw_list)


class RLSeekGold(BaseModel):
    """Gold hallucinated spans of one response: half-open character offsets, overlaps counted once."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    spans: tuple[Span, ...] = ()


class RLSeekResult(TypedDict):
    """What the graph returns."""

    output: RLSeekOutput
    trajectory: Trajectory
