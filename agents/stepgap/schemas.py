"""StepGap boundary types (specs/stepgap.md §1, §2.3, §2.6, §9): traces and steps, the judge's A–C JSON, one
step's check, the checker's config and the graphs' inputs and results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Required

from pydantic import BaseModel, ConfigDict, Field, computed_field
from typing_extensions import TypedDict

from evigraph.agents.stepgap.labels import REPAIR_ACTIONS, GapLabel, RepairAction, Stage, StepKind
from evigraph.inputs import NonBlank
from evigraph.trajectory import Evidence, Trajectory

__all__ = (
    "AbstentionJudgement",
    "AlignmentJudgement",
    "CheckerInputs",
    "CheckerPipeline",
    "CheckerResult",
    "EntailmentEngine",
    "JudgeMode",
    "QuoteJudgement",
    "QuoteSource",
    "StageDecision",
    "StepCheck",
    "StepGapConfig",
    "StepGapInputs",
    "StepGapOutput",
    "StepGapResult",
    "StepJudgement",
    "Trace",
    "TraceCheck",
    "TraceStep",
)

JudgeMode = Literal["single", "per_stage"]
CheckerPipeline = Literal["tree", "nli-only"]
"""``tree``: the A–E decision tree (§2.2); ``nli-only``: one NLI call per step, no LLM stages (§5)."""
EntailmentEngine = Literal["nli", "judge"]
"""Who decides entailment in stages D and E: the NLI engine, or the judge LLM (§5 LLM-Only / LLM-Strict)."""
QuoteSource = Literal["judge", "ner"]
"""Where Stage C's quote comes from: the judge's verbatim span, or spaCy NER + token overlap (§5 NER-Quote)."""

_STRICT = ConfigDict(frozen=True, extra="forbid")

Reasoning = Annotated[str, Field(max_length=300)]
"""A reasoning field: a sentence or two. The bound is in the JSON schema, so a guided judge (weak-model mode)
cannot spend its token cap inside one string and leave the object unclosed."""
Quote = Annotated[str, Field(max_length=250)]


# -- the judge's JSON (§2.3); field names are the schema's, so a student reproduces it verbatim ------------
class AlignmentJudgement(BaseModel):
    """Stage A: does the step aim at the entity and relation the question needs?"""

    model_config = _STRICT
    is_off_target: bool
    drift_type: Literal["none", "entity_drift", "relation_drift", "scope_drift"]
    alignment_reasoning: Reasoning


class AbstentionJudgement(BaseModel):
    """Stage B: does the step abstain ("cannot be determined"), and is that right given the evidence?"""

    model_config = _STRICT
    is_abstention_step: bool
    abstention_is_accurate: bool
    abstention_reasoning: Reasoning


class QuoteJudgement(BaseModel):
    """Stage C: is the evidence about the step's entity, and which 5–20-word span of it backs the claim?"""

    model_config = _STRICT
    entity_match: bool
    entity_match_reasoning: Reasoning
    found_quote: bool
    evidence_quote: Quote
    quote_search_reasoning: Reasoning


class StepJudgement(BaseModel):
    """The one structured reply covering stages A–C for one step."""

    model_config = _STRICT
    step_minus1_alignment: AlignmentJudgement
    step_0_abstention_check: AbstentionJudgement
    step_1_quote_search: QuoteJudgement


# -- traces (§1.1) ---------------------------------------------------------------------------------------
class TraceStep(BaseModel):
    """One step ``s_i = (c_i, q_i, e_i, a_i)`` of a search-interleaved trace.

    ``kind`` follows §1.1: a step with an answer is a conclusion step, any other step (a search, or neither tag)
    an inference step. The spans locate the step in the generator's output when it came from a rollout.
    """

    model_config = ConfigDict(frozen=True, extra="allow", use_attribute_docstrings=True)

    reasoning: str = ""
    """``c_i``: the step's own text outside the action tags (its ``<think>`` content)."""
    query: str | None = None
    """``q_i``: the ``<search>`` query, if any."""
    evidence: list[Evidence] = Field(default_factory=list)
    """``e_i``: what the query retrieved (top-k passages)."""
    answer: str | None = None
    """``a_i``: the ``<answer>`` body, if any."""
    text: str | None = None
    """The step's raw model text, tags included (rollouts and parsed transcripts)."""
    segment_index: int | None = None
    char_span: tuple[int, int] | None = None
    token_span: tuple[int, int] | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kind(self) -> StepKind:
        return "conclusion" if self.answer is not None else "inference"

    def shown(self) -> str:
        """The step as the judge reads it: the model text when known, else its parts."""
        if self.text:
            return self.text
        parts = [self.reasoning]
        if self.query is not None:
            parts.append(f"[search] {self.query}")
        if self.answer is not None:
            parts.append(f"[answer] {self.answer}")
        return "\n".join(p for p in parts if p)


class Trace(BaseModel):
    """A question and the steps a generator took to answer it (``evigraph check TRACE.json``)."""

    model_config = ConfigDict(frozen=True, extra="allow", use_attribute_docstrings=True)

    id: str | None = None
    question: str = Field(min_length=1)
    steps: list[TraceStep] = Field(min_length=1)
    golds: list[str] = Field(default_factory=list)
    """Gold answer aliases, when known (EM of the final answer)."""

    @property
    def answer(self) -> str | None:
        """The final answer: the last conclusion step's."""
        return next((s.answer for s in reversed(self.steps) if s.answer is not None), None)


# -- checker output (§1.2, §2.6, §2.7) ------------------------------------------------------------------
class StageDecision(BaseModel):
    """One visited stage: its decision (the ``pipeline_path`` vocabulary), confidence and the label it emitted."""

    model_config = ConfigDict(frozen=True)

    stage: Stage
    decision: str
    confidence: float = Field(ge=0.0, le=1.0)
    emits: GapLabel | None = None
    """The label this stage emitted (the last visited stage's); ``None`` when it handed off."""
    detail: str = ""
    """Reasoning text (LLM stages) or the NLI label and probabilities (NLI stages)."""

    @property
    def path_entry(self) -> str:
        return f"stage{self.stage}:{self.decision}"


class StepCheck(BaseModel):
    """``C(s_i, e_≤i) → (τ_i, confidence, rationale, pipeline_path)`` for one step, plus what produced it."""

    model_config = ConfigDict(frozen=True)

    index: int
    kind: StepKind
    label: GapLabel | None
    """``None`` when the step could not be checked (``error`` says why); such a step is never flagged."""
    confidence: float = Field(ge=0.0, le=1.0)
    """Geometric mean of the visited stages' confidences (§2.7)."""
    rationale: str
    pipeline_path: str
    stages: list[StageDecision] = Field(default_factory=list)
    claim: str = ""
    """The NLI hypothesis (§9 #2, #3)."""
    quote: str | None = None
    """The validated Stage-C quote, if any."""
    nli_engine: str | None = None
    """Which NLI ran stages D/E for this step (a cross-encoder, or the generator fallback)."""
    tree_label: GapLabel | None = None
    """The decision tree's label when ``flag_threshold`` overrode it (a gap below the threshold is reported as
    no-gap, §2.7); ``None`` when the label is the tree's own."""
    error: str | None = None
    token_span: tuple[int, int] | None = None
    judgement: dict[str, Any] | None = None
    """The judge's reply for stages A-C in the single-call schema (the sections it answered): what a distilled
    student checker learns to write (``evigraph export-sft stepgap --student``)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def repair(self) -> RepairAction:
        return REPAIR_ACTIONS[self.label] if self.label is not None else "none"


class TraceCheck(BaseModel):
    """Every step's check for one trace, and the engines that produced them."""

    model_config = ConfigDict(frozen=True)

    id: str | None = None
    question: str
    steps: list[StepCheck]
    judge: str
    """The LLM judge (generator name and mode)."""
    nli: str | None
    """The NLI engine, or ``None`` when no step reached stage D or E."""
    variant: str = "stepgap"
    """The checker variant that ran (a name of ``evigraph.agents.stepgap.variants.VARIANTS``, or ``custom(...)``
    listing the switches that differ from the default)."""
    binary: bool = False
    """The labels only say gap / no-gap (the NLI-only checker): their gap type is a fixed placeholder, so typed
    metrics and typed rewards must not read them (§5)."""


# -- configuration ---------------------------------------------------------------------------------------
class StepGapConfig(BaseModel):
    """Knobs of the checker and the Search-R1 generator (defaults: spec §2, §9). Scalar fields are flags of the
    agent's commands and keys of ``[agents.stepgap]``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    inherit_from_generator: ClassVar[Mapping[str, str]] = {"max_new_tokens": "max_new_tokens"}
    """The generator's per-turn cap follows ``--generator.max-new-tokens``, as every agent's turn cap does; the
    judge's reply cap is its own, ``judge_max_new_tokens``."""

    judge_mode: JudgeMode = "single"
    """``single``: one structured call answers stages A–C; ``per_stage``: A, B and C as separate calls, each
    seeing only what its stage reads."""
    disable_stages: frozenset[Stage] = frozenset()
    """Stages to skip (ablations, §7.2): a disabled stage hands off as if it had not fired; config file only."""
    # the decision tree of spec §2.2; nli-only is the baseline of §5
    pipeline: CheckerPipeline = "tree"
    """``tree``: the full check, judge stages A–C then entailment stages D–E. ``nli-only``: no judge call; one
    NLI call per step on (the step's whole local evidence, its claim), ENTAILMENT → no-gap, CONTRADICTION → CC,
    NEUTRAL → IE: binary labels."""
    entailment: EntailmentEngine = "nli"
    """Stages D/E: ``nli``, the graph's NLI engine (the judge's label-word fallback when none is given);
    ``judge``, always the judge LLM scoring the label words, even when an NLI engine is given (LLM-only)."""
    # ner is the NER-Quote baseline of spec §5
    quote_source: QuoteSource = "judge"
    """Stage C's quote: ``judge``, the judge's verbatim 5–20-word span; ``ner``, the evidence sentence that
    contains a named entity of the claim and overlaps it most (spaCy NER)."""
    # spec §2.7
    flag_threshold: float | None = Field(None, ge=0.0, le=1.0)
    """Report a gap only when the step's confidence is at least this (0.5 suits ``entailment = judge``, where
    the judge also decides stages D–E); a gap below it becomes no-gap, with the tree's label kept in
    ``StepCheck.tree_label``. ``None``: no threshold."""
    judge_max_new_tokens: int = Field(768, ge=16)
    """Token cap of one judge reply."""
    # spec §9 #9
    judge_logprobs: bool = True
    """Ask the judge backend for token logprobs, so the judge stages' confidences are measured (without them,
    each is 1.0)."""
    # spec §2.2, §9 #8
    quote_min_words: int = Field(5, ge=1)
    """A Stage-C quote must be a verbatim span of at least this many words."""
    quote_max_words: int = Field(20, ge=1)
    """A Stage-C quote may have at most this many words."""
    max_evidence_chars: int = Field(600, ge=50)
    """Characters of each passage shown to the judge (the title and lead sentences carry the entity)."""
    # spec §2.4
    previous_steps: int = Field(3, ge=0)
    """Summaries of at most this many preceding steps in the judge's context."""
    # spec §2.1, §9 #1
    max_searches: int = Field(4, ge=0)
    """Generator: searches per question; after the last one the next turn must answer."""
    top_k: int = Field(5, ge=1)
    """Generator: passages per search."""
    max_new_tokens: int = Field(1024, ge=1)
    """Generator: per-turn token cap; ``--generator.max-new-tokens`` sets it."""
    max_information_tokens: int = Field(768, ge=16)
    """Generator: cap on one rendered information block."""
    repair_budget: int = Field(2, ge=0)
    """Repair loop: how many checker-routed repairs one run may take."""


class StepGapOutput(BaseModel):
    """What a StepGap rollout concluded: the Search-R1 run's answer and every step with its check."""

    model_config = ConfigDict(frozen=True)

    question: str
    answer: str | None
    em: int | None = None
    """Exact match against the run's gold aliases, when given."""
    n_searches: int
    format_ok: bool
    trace: Trace | None
    """The run's steps as the checker read them; ``None`` when the run failed before its first step."""
    checks: TraceCheck
    repairs: int = 0
    """Repair notes the checker sent (repair loop only)."""

    @property
    def labels(self) -> list[GapLabel | None]:
        return [c.label for c in self.checks.steps]


# -- graph inputs and results ----------------------------------------------------------------------------
class CheckerInputs(TypedDict, total=False):
    """What the checker graph takes: a trace (or its dict form)."""

    trace: Required[Trace | dict[str, Any]]
    checked: list[StepCheck]
    """Checks of the trace's first steps from an earlier call (kept, not re-judged): a repair loop checks each
    new step once."""


class CheckerResult(TypedDict):
    """What the checker graph returns."""

    checks: TraceCheck
    trajectory: Trajectory


class StepGapInputs(TypedDict, total=False):
    """What the StepGap rollout graph takes: ``question`` (required), ``id``, ``golds`` (answer aliases) and
    ``gold`` (the reward's gold, e.g. ``{"golds": [...]}``: the run's trajectory then carries the reward)."""

    question: Required[NonBlank]
    id: str
    golds: list[str]
    gold: dict[str, Any]


class StepGapResult(TypedDict):
    output: StepGapOutput
    trajectory: Trajectory
