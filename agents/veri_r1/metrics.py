"""Veri-R1 evaluation metrics (spec §4): per-instance scores and the aggregate report.

Two modes:

- ``clean`` (default): spec §4. Ids NFC-composed on both sides; gold NEI and HoVer NOT SUPPORTED drop the
  evidence condition; joint accuracy needs the exact gold set; the per-instance reward is :func:`final_reward`.
- ``compat``: the reference evaluator (research notes §1.2–§1.4), to reproduce its numbers: label read
  leniently from text, gold ids raw (the NFD quirk), HoVer NOT SUPPORTED accepts any non-SUPPORT answer
  including none, IoU 0 for an empty gold set, reward :func:`compat_eval_reward`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evigraph.agents.veri_r1.confidence import HIGH_CONFIDENCE, LOW_CONFIDENCE, confidence_tier
from evigraph.agents.veri_r1.format_rules import (
    FormatOptions,
    check_format,
    information_ids,
    split_response,
)
from evigraph.agents.veri_r1.gold import GoldRecord, gold_evidence
from evigraph.agents.veri_r1.labels import GOLD_LABELS, GoldLabel, Label, label_matches, normalize_id, relaxes_evidence
from evigraph.agents.veri_r1.parsing import parse_answer, parse_answer_compat, scored_text
from evigraph.agents.veri_r1.rewards import compat_eval_reward, compat_label_correct, evidence_iou, final_reward
from evigraph.metrics import confusion, mean

__all__ = (
    "CONFIDENCE_BINS",
    "HIGH_CONFIDENCE",
    "LOW_CONFIDENCE",
    "ClassMetrics",
    "ConfidenceBin",
    "ConfidenceReport",
    "ConfidenceTier",
    "InstanceScore",
    "Mode",
    "Prediction",
    "VeriR1Report",
    "aggregate",
    "prediction_from_response",
    "score_instance",
)

Mode = Literal["clean", "compat"]
CONFIDENCE_BINS = 10
NO_LABEL = "NONE"
"""The confusion-matrix column for answers without a parseable label."""


class Prediction(BaseModel):
    """What a system concluded for one claim."""

    model_config = ConfigDict(frozen=True)

    id: str
    label: Label | None
    evidence: tuple[str, ...] = ()
    format_ok: bool = False
    retrieved_ids: tuple[str, ...] | None = None
    """Ids the model was shown; ``None`` when unknown."""
    confidence: float | None = None
    """Probability of the predicted label's first token (spec §9 #14)."""


def prediction_from_response(
    id: str, response: str, *, compat: bool = False, options: FormatOptions | None = None
) -> Prediction:
    """Read a prediction from a flat response string (policy text with information blocks inline).

    Anything up to a Qwen assistant preamble is dropped first (decoded prompt + response). Clean mode splits
    the text into policy and environment segments, parses the answer from policy text only, judges F1–F8 and
    collects the ids shown in information blocks. Compat mode reads the text as the reference evaluator does;
    ``format_ok`` then means "a label was parsed". Never raises on any text.
    """
    text = scored_text(response)
    if compat:
        answer = parse_answer_compat(text)
        return Prediction(id=id, label=answer.label, evidence=answer.evidence, format_ok=answer.label is not None)
    segments = split_response(text)
    policy = "".join(s.reply for s in segments if s.origin == "policy")
    answer = parse_answer(policy)
    return Prediction(
        id=id,
        label=answer.label,
        evidence=answer.evidence,
        format_ok=check_format(segments, options).ok,
        retrieved_ids=tuple(normalize_id(i) for i in information_ids(segments)),
    )


class InstanceScore(BaseModel):
    """One prediction scored against its gold record."""

    model_config = ConfigDict(frozen=True)

    id: str
    dataset: str | None
    gold_label: GoldLabel
    pred_label: Label | None
    label_correct: bool
    verified: bool
    """Label correct and every gold id cited (dropped for NEI-like gold)."""
    joint: bool
    """Label correct and exactly the gold ids cited (dropped for NEI-like gold)."""
    evidence_iou: float
    covers_gold: bool
    """Every gold id cited, whatever the labels (the training cover-rate diagnostic; no relaxation)."""
    format_ok: bool
    n_cited: int
    n_cited_unretrieved: int | None
    """Cited ids no information block showed; ``None`` when the shown ids are unknown."""
    confidence: float | None
    reward: float


def score_instance(pred: Prediction, gold: GoldRecord, *, compat: bool = False) -> InstanceScore:
    """Score one prediction (see the module docstring for the two modes)."""
    gold_ids = gold_evidence(gold, compat=compat)
    pred_ids = frozenset(normalize_id(i) for i in pred.evidence)
    covers = gold_ids <= pred_ids
    if compat:
        correct = compat_label_correct(pred.label, gold.label)
        reward = compat_eval_reward(
            pred_label=pred.label, pred_evidence=pred_ids, gold_label=gold.label, gold_evidence=gold_ids
        )
        iou = reward.evidence
        total = reward.total
    else:
        correct = label_matches(pred.label, gold.label)
        iou = evidence_iou(pred_ids, gold_ids)
        total = final_reward(
            pred_label=pred.label,
            pred_evidence=pred_ids,
            gold_label=gold.label,
            gold_evidence=gold_ids,
            format_ok=pred.format_ok,
        ).total
    relaxed = relaxes_evidence(gold.label)
    unretrieved = None
    if pred.retrieved_ids is not None:
        unretrieved = len(pred_ids - {normalize_id(i) for i in pred.retrieved_ids})
    return InstanceScore(
        id=pred.id,
        dataset=gold.dataset,
        gold_label=gold.label,
        pred_label=pred.label,
        label_correct=correct,
        verified=correct and (relaxed or covers),
        joint=correct and (relaxed or pred_ids == gold_ids),
        evidence_iou=iou,
        covers_gold=covers,
        format_ok=pred.format_ok,
        n_cited=len(pred_ids),
        n_cited_unretrieved=unretrieved,
        confidence=pred.confidence,
        reward=total,
    )


class Accuracies(BaseModel):
    """The headline metrics over a set of instances; every rate is a fraction in [0, 1]."""

    model_config = ConfigDict(frozen=True)

    n: int
    label_accuracy: float
    verification_accuracy: float
    joint_accuracy: float
    evidence_score: float
    evidence_cover_rate: float
    format_rate: float


class ClassMetrics(Accuracies):
    """The metrics restricted to one gold label, plus precision of predicting it."""

    precision: float | None
    """Share of instances predicted as this class (an answer that would be right for it) whose gold is this
    class; ``None`` when it was never predicted."""
    recall: float
    """Share of this class's instances answered correctly (equals ``label_accuracy``)."""


class ConfidenceTier(BaseModel):
    """Accuracy of the predictions of one label within one confidence tier."""

    model_config = ConfigDict(frozen=True)

    tier: Literal["low", "mid", "high"]
    label: Label
    n: int
    accuracy: float | None


class ConfidenceBin(BaseModel):
    """One equal-width reliability bin ``[lower, upper)`` (the last bin includes 1.0)."""

    model_config = ConfigDict(frozen=True)

    lower: float
    upper: float
    n: int
    mean_confidence: float | None
    accuracy: float | None


class ConfidenceReport(BaseModel):
    """Confidence analysis (spec §4): tiers low < 0.85 ≤ mid ≤ 0.95 < high, per predicted label, and bins."""

    model_config = ConfigDict(frozen=True)

    n: int
    """Instances with a confidence."""
    tiers: list[ConfidenceTier]
    bins: list[ConfidenceBin]


class VeriR1Report(Accuracies):
    """Aggregate metrics over all instances, per gold class, and by confidence."""

    mode: Mode
    unretrieved_citation_rate: float | None
    """Share of cited ids never shown, over instances where the shown ids are known."""
    mean_reward: float
    per_class: dict[str, ClassMetrics]
    """Keyed by gold label."""
    confusion: dict[str, dict[str, int]]
    """Gold label → predicted label (``NONE`` for no label) → count."""
    confidence: ConfidenceReport | None


def _predicts(score: InstanceScore, label: GoldLabel, mode: Mode) -> bool:
    # "Predicted as class c" = the answer would have been correct had the gold been c.
    if mode == "compat":
        return compat_label_correct(score.pred_label, label)
    return label_matches(score.pred_label, label)


def _class_metrics(
    label: GoldLabel, scores: Sequence[InstanceScore], everything: Sequence[InstanceScore], mode: Mode
) -> ClassMetrics:
    predicted = [s for s in everything if _predicts(s, label, mode)]
    accuracy = mean([s.label_correct for s in scores])
    return ClassMetrics(
        n=len(scores),
        label_accuracy=accuracy,
        verification_accuracy=mean([s.verified for s in scores]),
        joint_accuracy=mean([s.joint for s in scores]),
        evidence_score=mean([s.evidence_iou for s in scores]),
        evidence_cover_rate=mean([s.covers_gold for s in scores]),
        format_rate=mean([s.format_ok for s in scores]),
        precision=mean([s.gold_label == label for s in predicted]) if predicted else None,
        recall=accuracy,
    )


def _confidence_report(scores: Sequence[InstanceScore]) -> ConfidenceReport | None:
    known = [s for s in scores if s.confidence is not None and s.pred_label is not None]
    if not known:
        return None
    tiers = []
    for label in dict.fromkeys(s.pred_label for s in known):
        for tier in ("low", "mid", "high"):
            members = [s for s in known if s.pred_label == label and confidence_tier(s.confidence or 0.0) == tier]
            accuracy = mean([s.label_correct for s in members]) if members else None
            tiers.append(ConfidenceTier(tier=tier, label=label, n=len(members), accuracy=accuracy))  # type: ignore[arg-type]
    bins = []
    for k in range(CONFIDENCE_BINS):
        lower, upper = k / CONFIDENCE_BINS, (k + 1) / CONFIDENCE_BINS
        members = [
            s for s in known if min(int((s.confidence or 0.0) * CONFIDENCE_BINS), CONFIDENCE_BINS - 1) == max(k, 0)
        ]
        bins.append(
            ConfidenceBin(
                lower=lower,
                upper=upper,
                n=len(members),
                mean_confidence=mean([s.confidence or 0.0 for s in members]) if members else None,
                accuracy=mean([s.label_correct for s in members]) if members else None,
            )
        )
    return ConfidenceReport(n=len(known), tiers=tiers, bins=bins)


def aggregate(scores: Sequence[InstanceScore], *, mode: Mode = "clean") -> VeriR1Report:
    """The report over ``scores`` (overall, per gold class, confusion, confidence)."""
    known = [s for s in scores if s.n_cited_unretrieved is not None]
    cited = sum(s.n_cited for s in known)
    unretrieved_rate = sum(s.n_cited_unretrieved or 0 for s in known) / cited if cited else None
    order = {label: k for k, label in enumerate(GOLD_LABELS)}
    golds = sorted({s.gold_label for s in scores}, key=lambda g: (order.get(g, len(order)), g))
    per_class = {g: _class_metrics(g, [s for s in scores if s.gold_label == g], scores, mode) for g in golds}
    return VeriR1Report(
        mode=mode,
        n=len(scores),
        label_accuracy=mean([s.label_correct for s in scores]),
        verification_accuracy=mean([s.verified for s in scores]),
        joint_accuracy=mean([s.joint for s in scores]),
        evidence_score=mean([s.evidence_iou for s in scores]),
        evidence_cover_rate=mean([s.covers_gold for s in scores]),
        format_rate=mean([s.format_ok for s in scores]),
        unretrieved_citation_rate=unretrieved_rate,
        mean_reward=mean([s.reward for s in scores]),
        per_class=per_class,
        confusion=confusion([s.gold_label for s in scores], [s.pred_label for s in scores], missing=NO_LABEL),
        confidence=_confidence_report(scores),
    )
