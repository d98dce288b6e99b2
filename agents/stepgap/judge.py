"""The LLM half of the checker (specs/stepgap.md §2.3, §2.4, §2.7): stages A–C as one structured call per step,
or (``judge_mode="per_stage"``) as one call per stage with early exit.

A stage's confidence is the probability the judge gave the value token of its deciding boolean, located in the
reply's JSON by token offsets; 1.0 where the backend returns no token ids or logprobs (§9 #9). Invalid JSON gets
the structured-output layer's one repair turn; a second failure is a typed :class:`JudgeFailure`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from evigraph.agents.stepgap.claims import local_evidence
from evigraph.agents.stepgap.decoding import judgement_schema
from evigraph.agents.stepgap.labels import Stage, StepKind
from evigraph.agents.stepgap.prompts import judge_prompt, stage_prompt
from evigraph.agents.stepgap.routing import is_abstention_answer
from evigraph.agents.stepgap.schemas import (
    AbstentionJudgement,
    AlignmentJudgement,
    QuoteJudgement,
    StepGapConfig,
    StepJudgement,
    Trace,
)
from evigraph.generators.base import Generator
from evigraph.generators.types import Guide, SamplingParams, StructuredResult
from evigraph.tokens import TokenOffsets, token_decoder, token_probability_at
from evigraph.trajectory import Evidence, Segment

__all__ = (
    "JudgeFailure",
    "JudgeOutcome",
    "StepView",
    "deciding_field",
    "judge_step",
    "judgement_json",
    "single_prompt",
    "step_views",
    "value_probability",
)


@dataclass(frozen=True, slots=True)
class StepView:
    """What the judge is shown about one step."""

    question: str
    kind: StepKind
    text: str
    previous: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    global_evidence: tuple[Evidence, ...] = ()
    abstaining: bool = False
    """A conclusion answering N/A: never off-target, so stage A cannot end a per-stage walk."""


@dataclass(frozen=True, slots=True)
class JudgeFailure:
    """The judge gave no valid object after the repair turn."""

    stage: str
    kind: str
    message: str
    raw: str


@dataclass(frozen=True, slots=True)
class JudgeOutcome:
    """The judgements the walk needs (``None`` for stages not asked in per-stage mode) and their confidences."""

    alignment: AlignmentJudgement | None = None
    abstention: AbstentionJudgement | None = None
    quote: QuoteJudgement | None = None
    confidences: dict[Stage, float] = field(default_factory=dict)
    failure: JudgeFailure | None = None
    calls: int = 0


def deciding_field(stage: Stage, judgement: BaseModel) -> str:
    """The boolean whose value decides ``stage`` (§2.7): A ``is_off_target``; B ``abstention_is_accurate`` for an
    abstention, else ``is_abstention_step``; C ``found_quote`` when the entity matched, else ``entity_match``."""
    if stage == "A":
        return "is_off_target"
    if stage == "B":
        assert isinstance(judgement, AbstentionJudgement)
        return "abstention_is_accurate" if judgement.is_abstention_step else "is_abstention_step"
    assert isinstance(judgement, QuoteJudgement)
    return "found_quote" if judgement.entity_match else "entity_match"


def value_probability(result: StructuredResult, key: str, decode: object | None) -> float:
    """The probability of the value token of ``"key": true|false`` in the reply (the last such pair: the object
    the structured layer accepted comes last in a repaired reply); 1.0 without token ids, logprobs or a match."""
    continuation = result.continuation
    if continuation is None or continuation.token_ids is None or continuation.logprobs is None or decode is None:
        return 1.0
    offsets = TokenOffsets(continuation.token_ids, decode)  # type: ignore[arg-type]
    matches = list(re.finditer(rf'"{re.escape(key)}"\s*:\s*(true|false)', offsets.text))
    if not matches:
        return 1.0
    probability = token_probability_at(offsets, continuation.logprobs, matches[-1].start(1))
    return 1.0 if probability is None else probability


def _decode(generator: Generator) -> object | None:
    # token_decoder covers text backends that return ids too (vLLM behind its OpenAI API), so confidences are real.
    return token_decoder(generator)


async def _ask(generator: Generator, prompt: str, schema: type[BaseModel], params: SamplingParams) -> StructuredResult:
    return await generator.structured([Segment(origin="prompt", role="user", text=prompt)], schema, params)


def judgement_json(outcome: JudgeOutcome) -> dict[str, object] | None:
    """The judge's reply as the JSON of the single-call schema (the sections it answered; ``None`` if none), what
    a distilled student learns to write."""
    sections = {
        "step_minus1_alignment": outcome.alignment,
        "step_0_abstention_check": outcome.abstention,
        "step_1_quote_search": outcome.quote,
    }
    answered = {k: v.model_dump(mode="json") for k, v in sections.items() if v is not None}
    return answered or None


def step_views(trace: Trace, config: StepGapConfig) -> list[StepView]:
    """What the judge is shown about each step of ``trace``: the step, up to ``config.previous_steps`` earlier
    steps, its local evidence and, for a conclusion, every earlier step's evidence."""
    views = []
    for i, step in enumerate(trace.steps):
        earlier = trace.steps[max(0, i - config.previous_steps) : i]
        global_evidence = [e for s in trace.steps[:i] for e in s.evidence] if step.kind == "conclusion" else []
        views.append(
            StepView(
                question=trace.question,
                kind=step.kind,
                text=step.shown(),
                previous=tuple(" ".join(s.shown().split())[:300] for s in earlier),
                evidence=tuple(local_evidence(trace, i)),
                global_evidence=tuple(global_evidence),
                abstaining=step.kind == "conclusion" and is_abstention_answer(step.answer or ""),
            )
        )
    return views


def single_prompt(view: StepView, *, max_chars: int) -> str:
    """The single-call prompt (stages A-C) for one step's view."""
    return judge_prompt(
        question=view.question,
        kind=view.kind,
        step=view.text,
        previous=view.previous,
        evidence=view.evidence,
        global_evidence=view.global_evidence,
        max_chars=max_chars,
    )


def _guided(
    params: SamplingParams, view: StepView, stage: Stage | None, *, quote_words: tuple[int, int] | None, max_chars: int
) -> SamplingParams:
    """``params`` with the weak-model schema of this reply (``quote_words``: the quote's word bounds), or as they
    are (``None``: not in weak-model mode)."""
    if quote_words is None:
        return params
    low, high = quote_words
    schema = judgement_schema(view.evidence, stage=stage, max_chars=max_chars, min_words=low, max_words=high)
    return params.model_copy(update={"guide": Guide.json(schema)})


async def judge_step(
    generator: Generator,
    view: StepView,
    params: SamplingParams,
    *,
    mode: str = "single",
    disabled: Sequence[Stage] = (),
    max_chars: int = 600,
    quote_words: tuple[int, int] | None = None,
) -> JudgeOutcome:
    """Stages A–C for one step. ``single``: one call returns all three sections. ``per_stage``: A, then B (only if
    A did not fire), then C (only if neither fired), each prompt with only its stage's inputs; disabled stages
    are not asked. ``quote_words`` (weak-model mode: the quote's ``(min, max)`` words) decodes each reply under
    :func:`~evigraph.agents.stepgap.decoding.judgement_schema`: the quote is one of the evidence's sentences."""
    decode = _decode(generator)
    if mode == "single":
        prompt = single_prompt(view, max_chars=max_chars)
        result = await _ask(
            generator, prompt, StepJudgement, _guided(params, view, None, quote_words=quote_words, max_chars=max_chars)
        )
        if result.value is None:
            return _failed("A-C", result)
        value: StepJudgement = result.value
        parts: dict[Stage, BaseModel] = {
            "A": value.step_minus1_alignment,
            "B": value.step_0_abstention_check,
            "C": value.step_1_quote_search,
        }
        confidences = {s: value_probability(result, deciding_field(s, j), decode) for s, j in parts.items()}
        return JudgeOutcome(
            alignment=value.step_minus1_alignment,
            abstention=value.step_0_abstention_check,
            quote=value.step_1_quote_search,
            confidences=confidences,
            calls=1,
        )
    return await _judge_per_stage(
        generator, view, params, disabled=disabled, decode=decode, max_chars=max_chars, quote_words=quote_words
    )


async def _judge_per_stage(
    generator: Generator,
    view: StepView,
    params: SamplingParams,
    *,
    disabled: Sequence[Stage],
    decode: object | None,
    max_chars: int,
    quote_words: tuple[int, int] | None,
) -> JudgeOutcome:
    schemas: dict[Stage, type[BaseModel]] = {"A": AlignmentJudgement, "B": AbstentionJudgement, "C": QuoteJudgement}
    found: dict[Stage, BaseModel] = {}
    confidences: dict[Stage, float] = {}
    calls = 0
    for stage in ("A", "B", "C"):
        if stage in disabled:
            continue
        prompt = stage_prompt(
            stage,
            question=view.question,
            kind=view.kind,
            step=view.text,
            evidence=view.evidence,
            global_evidence=view.global_evidence,
            max_chars=max_chars,
        )
        guided = _guided(params, view, stage, quote_words=quote_words, max_chars=max_chars)
        result = await _ask(generator, prompt, schemas[stage], guided)
        calls += 1
        if result.value is None:
            return _failed(stage, result, calls=calls)
        found[stage] = result.value
        confidences[stage] = value_probability(result, deciding_field(stage, result.value), decode)
        if _fires(result.value, abstaining=view.abstaining):
            break
    return JudgeOutcome(
        alignment=found.get("A"),  # type: ignore[arg-type]
        abstention=found.get("B"),  # type: ignore[arg-type]
        quote=found.get("C"),  # type: ignore[arg-type]
        confidences=confidences,
        calls=calls,
    )


def _fires(judgement: BaseModel, *, abstaining: bool) -> bool:
    """Whether a per-stage reply ends the walk (so later stages are not asked)."""
    if isinstance(judgement, AlignmentJudgement):
        return judgement.is_off_target and not abstaining
    if isinstance(judgement, AbstentionJudgement):
        return judgement.is_abstention_step
    return False


def _failed(stage: str, result: StructuredResult, *, calls: int = 1) -> JudgeOutcome:
    error = result.error
    failure = JudgeFailure(
        stage=stage,
        kind=error.kind if error is not None else "unknown",
        message=error.message if error is not None else "no value",
        raw=result.raw[-400:],
    )
    return JudgeOutcome(failure=failure, calls=calls)
