"""StepGap's checker-evaluation metrics (specs/stepgap.md §4, reported as in §7.3–§7.5; §8 pitfall 5; §9 #15–#17).

Step level: precision, recall, F1 and balanced accuracy of the binary ``has_gap`` view, Cohen's κ on the 4-way
labels, typed F1 over CC/IE/MB. Question level: Q-precision/recall/F1 with "wrong answer" as the positive class
and "≥ 1 flagged step" as the prediction, next to the flag-everything baseline ``2w/(1+w)`` (never read Q-F1
alone, §8 pitfall 5). Diagnostics: label distribution, first-gap type, the degenerate-checker flag. Confidence
intervals: percentile bootstrap over steps for step metrics and over questions for Q-F1 (§9 #15).

Every rate is a fraction in [0, 1] (the spec prints percentages: its ``[100, 100]`` is ``(1.0, 1.0)`` here).
Standard definitions throughout (Known inconsistencies #7, #9), from :mod:`evigraph.metrics`, whose conventions
for empty denominators are the spec's: precision = 0 when nothing is flagged (§4); F1 = 2TP/(2TP+FP+FN), so a
no-gap predictor scores 0 and flag-everything 2g/(1+g); balanced accuracy over the classes present in the gold;
κ = 1.0 when both raters used one same label throughout; a metric over zero units is 0.0 and its bootstrap
interval that value twice. Typed F1 scores the three fixed gap types: one absent from both gold and prediction
has F1 0 and still counts in the macro average (§9 #17).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evigraph.agents.search_r1.answers import token_f1
from evigraph.agents.stepgap.labels import GAP_LABELS, GAP_TYPES, GapLabel, has_gap
from evigraph.metrics import (
    BinaryCounts,
    Interval,
    balanced_accuracy,
    binary_counts,
    bootstrap_cis,
    cohen_kappa,
    confusion,
    f1,
    macro_f1,
    mean,
    per_class_f1,
    precision,
    recall,
)

__all__ = (
    "COLLAPSED_SHARE",
    "DEGENERATE_IE_SHARE",
    "FirstGap",
    "LabeledQuestion",
    "QuestionMetrics",
    "StepGapReport",
    "StepMetrics",
    "TypedF1",
    "answer_token_f1",
    "checker_report",
    "first_gap_distribution",
    "flag_everything_q_f1",
    "is_degenerate",
    "label_distribution",
    "question_counts",
    "step_counts",
    "typed_f1",
)

DEGENERATE_IE_SHARE = 0.70
"""§4: a checker that labels more than this share of steps IE, with CC and MB collapsed, is degenerate."""
COLLAPSED_SHARE = 0.15
"""CC and MB count as collapsed when their shares add up to less than this. The spec's two degenerate variants
sit at 0.0 (Single-LLM-XL) and 0.116 (NER-Quote), StepGap's healthy distribution at 0.21 (§7.3)."""


def step_counts(gold: Sequence[GapLabel], pred: Sequence[GapLabel]) -> BinaryCounts:
    """The ``has_gap`` table over parallel step labels (positive = any gap type)."""
    return binary_counts([has_gap(g) for g in gold], [has_gap(p) for p in pred])


class TypedF1(BaseModel):
    """Per-class F1 of CC, IE and MB (no-gap only ever a negative) and their macro average (§9 #17)."""

    model_config = ConfigDict(frozen=True)

    CC: float
    IE: float
    MB: float
    macro: float


def typed_f1(gold: Sequence[GapLabel], pred: Sequence[GapLabel]) -> TypedF1:
    """One-vs-rest F1 for each gap type over parallel step labels, macro-averaged over the three types."""
    per_class = per_class_f1(confusion(gold, pred), GAP_TYPES)
    return TypedF1(**per_class, macro=macro_f1(per_class))


def flag_everything_q_f1(w: float) -> float:
    """Q-F1 of a checker that flags every question: precision w, recall 1 → 2w/(1+w) (§4 Q-F1 trap).

    Args:
        w: the wrong-answer rate, in [0, 1].

    Example (§4 M-9):
        >>> [round(flag_everything_q_f1(w), 4) for w in (0.55, 0.68, 0.76, 0.90)]
        [0.7097, 0.8095, 0.8636, 0.9474]
    """
    if not 0.0 <= w <= 1.0:
        raise ValueError(f"w is a wrong-answer rate in [0, 1], got {w}")
    return 2 * w / (1 + w)


def label_distribution(labels: Sequence[GapLabel]) -> dict[GapLabel, float]:
    """Share of steps per label, keyed no-gap, CC, IE, MB in that order; all 0 for no steps."""
    counts = Counter(labels)
    return {label: counts[label] / len(labels) if labels else 0.0 for label in GAP_LABELS}


def is_degenerate(distribution: Mapping[GapLabel, float]) -> bool:
    """Whether a predicted distribution is the §4 collapse: IE > 70% with CC and MB (together) under 15%.

    Example (§7.3 rows: StepGap, then Single-LLM-XL):
        >>> is_degenerate({"no-gap": 0.409, "IE": 0.381, "CC": 0.149, "MB": 0.061})
        False
        >>> is_degenerate({"no-gap": 0.122, "IE": 0.878, "CC": 0.0, "MB": 0.0})
        True
    """
    collapsed = distribution.get("CC", 0.0) + distribution.get("MB", 0.0) < COLLAPSED_SHARE
    return distribution.get("IE", 0.0) > DEGENERATE_IE_SHARE and collapsed


class FirstGap(BaseModel):
    """Type of the first flagged step, as shares of the ``n`` questions with at least one flag."""

    model_config = ConfigDict(frozen=True)

    CC: float
    IE: float
    MB: float
    n: int
    """Questions with ≥ 1 flagged step (the denominator); 0 leaves every share 0."""


def first_gap_distribution(traces: Sequence[Sequence[GapLabel]]) -> FirstGap:
    """First-gap type over traces (give the predicted labels of the wrong-answer questions, §4).

    Example (§4 M-8):
        >>> first_gap_distribution([["no-gap", "IE", "CC"], ["MB"], ["no-gap", "no-gap"], ["CC", "IE"]])
        FirstGap(CC=0.333..., IE=0.333..., MB=0.333..., n=3)
    """
    firsts = Counter(next(label for label in trace if has_gap(label)) for trace in traces if any(map(has_gap, trace)))
    n = sum(firsts.values())
    return FirstGap(**{t: firsts[t] / n if n else 0.0 for t in GAP_TYPES}, n=n)


def answer_token_f1(prediction: str, golds: Sequence[str]) -> float:
    """Answer token-F1: the best SQuAD token F1 of the prediction against any gold alias; 0 for no alias.

    >>> round(answer_token_f1("Damien Chazelle", ["Chazelle", "Justin Hurwitz"]), 4)
    0.6667
    """
    return max((token_f1(prediction, gold) for gold in golds), default=0.0)


class LabeledQuestion(BaseModel):
    """One benchmark question: gold and predicted label of each step, gold answer correctness, optional extras."""

    model_config = ConfigDict(frozen=True)

    id: str
    gold: tuple[GapLabel, ...]
    """Human (adjudicated) label per step."""
    pred: tuple[GapLabel, ...]
    """The checker's label per step; as many as ``gold``."""
    answer_correct: bool
    """Whether the generator's final answer is right (gold); wrong answers are Q-F1's positive class."""
    answer_f1: float | None = Field(default=None, ge=0.0, le=1.0)
    """Answer token-F1 (:func:`answer_token_f1`), when known."""
    searches: int | None = Field(default=None, ge=0)
    """Search calls the generator made, when known."""
    answer_supported: bool | None = None
    """Whether NLI found an entailing retrieved quote for the final-answer claim, when known."""

    @model_validator(mode="after")
    def _same_step_count(self) -> LabeledQuestion:
        if len(self.pred) != len(self.gold):
            raise ValueError(f"question {self.id!r}: {len(self.pred)} predicted labels for {len(self.gold)} gold steps")
        return self


def question_counts(questions: Sequence[LabeledQuestion]) -> BinaryCounts:
    """Q-level table: positive = wrong answer, predicted positive = at least one flagged step (§4)."""
    return binary_counts([not q.answer_correct for q in questions], [any(map(has_gap, q.pred)) for q in questions])


class StepMetrics(BaseModel):
    """Binary ``has_gap`` metrics over all steps, 4-way κ, and bootstrap intervals over steps."""

    model_config = ConfigDict(frozen=True)

    precision: float
    recall: float
    f1: float
    balanced_accuracy: float
    kappa: float
    """Cohen's κ on the 4-way labels (§9 #16)."""
    ci: dict[str, Interval]
    """Keyed precision, recall, f1, balanced_accuracy, kappa."""
    counts: BinaryCounts


class QuestionMetrics(BaseModel):
    """Question-level metrics; read ``f1`` against ``flag_all_f1`` (§8 pitfall 5)."""

    model_config = ConfigDict(frozen=True)

    precision: float
    recall: float
    f1: float
    ci: dict[str, Interval]
    """Keyed f1; questions are the bootstrap unit (§9 #15)."""
    counts: BinaryCounts
    wrong_rate: float
    """w, the share of wrong-answer questions."""
    flag_all_f1: float
    """Q-F1 a flag-everything checker would get here, 2w/(1+w)."""


class StepGapReport(BaseModel):
    """The checker-evaluation report (§7.1, §7.3, §7.4); ``model_dump(mode="json")`` is the printed JSON."""

    model_config = ConfigDict(frozen=True)

    n_steps: int
    n_questions: int
    flag_rate: float
    """Share of steps the checker flagged (any gap type)."""
    step: StepMetrics
    question: QuestionMetrics
    typed_f1: TypedF1
    distribution: dict[GapLabel, float]
    """Share of *predicted* labels per class."""
    gold_distribution: dict[GapLabel, float]
    first_gap: FirstGap
    """From the predictions on gold-wrong questions."""
    degenerate: bool
    """The predicted distribution is the §4 IE collapse (:func:`is_degenerate`)."""
    answer_f1: float | None
    """Mean answer token-F1 over the questions that carry one; ``None`` when none does (likewise below)."""
    support_rate: float | None
    mean_searches: float | None


def checker_report(
    questions: Sequence[LabeledQuestion], *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> StepGapReport:
    """Evaluate a checker's step labels against the gold ones, with bootstrap intervals (see the module doc)."""
    steps = [(g, p) for q in questions for g, p in zip(q.gold, q.pred, strict=True)]
    gold = [g for g, _ in steps]
    pred = [p for _, p in steps]
    counts = step_counts(gold, pred)

    def on_steps(metric: Callable[[BinaryCounts], float]) -> Callable[[Sequence[tuple[GapLabel, GapLabel]]], float]:
        return lambda draw: metric(step_counts([g for g, _ in draw], [p for _, p in draw]))

    step_metrics: dict[str, Callable[[Sequence[tuple[GapLabel, GapLabel]]], float]] = {
        "precision": on_steps(precision),
        "recall": on_steps(recall),
        "f1": on_steps(f1),
        "balanced_accuracy": on_steps(balanced_accuracy),
        "kappa": lambda draw: cohen_kappa([g for g, _ in draw], [p for _, p in draw]),
    }
    q_counts = question_counts(questions)
    wrong_rate = mean([not q.answer_correct for q in questions])
    distribution = label_distribution(pred)

    def carried(values: list[float | int | bool | None]) -> float | None:
        known = [v for v in values if v is not None]
        return mean(known) if known else None

    return StepGapReport(
        n_steps=len(steps),
        n_questions=len(questions),
        flag_rate=mean([has_gap(p) for p in pred]),
        step=StepMetrics(
            precision=precision(counts),
            recall=recall(counts),
            f1=f1(counts),
            balanced_accuracy=balanced_accuracy(counts),
            kappa=cohen_kappa(gold, pred),
            ci=bootstrap_cis(steps, step_metrics, resamples=resamples, seed=seed, level=level),
            counts=counts,
        ),
        question=QuestionMetrics(
            precision=precision(q_counts),
            recall=recall(q_counts),
            f1=f1(q_counts),
            ci=bootstrap_cis(
                questions, {"f1": lambda draw: f1(question_counts(draw))}, resamples=resamples, seed=seed, level=level
            ),
            counts=q_counts,
            wrong_rate=wrong_rate,
            flag_all_f1=flag_everything_q_f1(wrong_rate),
        ),
        typed_f1=typed_f1(gold, pred),
        distribution=distribution,
        gold_distribution=label_distribution(gold),
        first_gap=first_gap_distribution([q.pred for q in questions if not q.answer_correct]),
        degenerate=is_degenerate(distribution),
        answer_f1=carried([q.answer_f1 for q in questions]),
        support_rate=carried([q.answer_supported for q in questions]),
        mean_searches=carried([q.searches for q in questions]),
    )
