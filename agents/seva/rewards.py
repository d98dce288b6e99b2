"""SEVA's process reward (specs/seva.md §3) as pure functions of the reply's parsed JSON and the gold label.

``R = w_f·R_f + w_a·R_a + w_c·R_c + w_l·R_l + w_d·R_d + calibration`` with the default weights
0.10/0.30/0.30/0.15/0.15, the calibration term ``+0.15·γ`` when the label is right and ``−0.10·γ`` when it is
wrong or missing, and 0 for a reply that does not parse. Lengths are Python ``len`` of the raw strings; a
missing or non-string field counts as empty; ``status`` and ``judgment`` compare after ``strip().lower()``,
``error_type`` exactly (the spec lower-cases only those two).

Beyond the paper: the ablation variants of §3.11 (binary reward, other process/outcome splits) and an optional
label-conditional normalisation of the outcome part (:func:`normalize_outcome`) that removes the tilt towards
"Not Attributable" worked out in §3.12.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evigraph.agents.seva.labels import normalize_label
from evigraph.agents.seva.schemas import (
    ALIGNMENT_STATUSES,
    ATTRIBUTABLE,
    ERROR_TYPES,
    JUDGMENTS,
    NOT_ATTRIBUTABLE,
    Label,
)

__all__ = (
    "REQUIRED_FIELDS",
    "RewardWeights",
    "SevaRewardParts",
    "alignment_entry_score",
    "alignment_score",
    "binary_reward",
    "break_even_probability",
    "calibration",
    "chain_score",
    "chain_step_score",
    "confidence_of",
    "diagnosis_score",
    "error_present",
    "format_score",
    "label_score",
    "normalize_outcome",
    "process_reward",
    "stated_confidence",
)

REQUIRED_FIELDS = ("evidence_alignment", "reasoning_chain", "label", "confidence")
_NO_ERROR = frozenset({"none", "null", "n/a"})
# R_d on a gold-Attributable item when the reply names an error type anyway (§3.6's "consolation").
_CONSOLATION = 0.3


class RewardWeights(BaseModel):
    """Component weights and the calibration coefficients (defaults: the paper's 70/30 split)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: float = Field(0.10, ge=0)
    alignment: float = Field(0.30, ge=0)
    chain: float = Field(0.30, ge=0)
    label: float = Field(0.15, ge=0)
    diagnosis: float = Field(0.15, ge=0)
    bonus: float = Field(0.15, ge=0)
    """``+bonus·γ`` when the label is right."""
    penalty: float = Field(0.10, ge=0)
    """``−penalty·γ`` when the label is wrong or missing."""

    @classmethod
    def split(cls, process: float) -> RewardWeights:
        """The §3.11 ablation splits: ``process`` of the weight on format/alignment/chain (kept 1:3:3), the rest
        shared equally by label and diagnosis; calibration unchanged. ``split(0.7)`` is the default."""
        if not 0.0 <= process <= 1.0:
            raise ValueError(f"the process share must lie in [0, 1], got {process}")
        outcome = (1.0 - process) / 2
        return cls(
            format=process / 7, alignment=3 * process / 7, chain=3 * process / 7, label=outcome, diagnosis=outcome
        )

    @property
    def process_share(self) -> float:
        return self.format + self.alignment + self.chain


class SevaRewardParts(BaseModel):
    """Every component of one reply's reward (for logs and reports) and the total."""

    model_config = ConfigDict(frozen=True)

    parse_ok: bool
    format: float = 0.0
    alignment: float = 0.0
    chain: float = 0.0
    label: float = 0.0
    diagnosis: float = 0.0
    confidence: float = 0.0
    calibration: float = 0.0
    total: float = 0.0

    @model_validator(mode="after")
    def _finite(self) -> SevaRewardParts:
        if not math.isfinite(self.total):
            raise ValueError("the reward is not finite")
        return self


def _text(value: object) -> str:
    """A field's string value; anything else counts as empty (§2.2 rule 4)."""
    return value if isinstance(value, str) else ""


def _number(value: object) -> float | None:
    """A JSON number or numeric string as a float (booleans are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def stated_confidence(reply: Mapping[str, Any]) -> float | None:
    """The ``confidence`` the reply states when it is a number (or numeric string) in [0, 1], else ``None``."""
    number = _number(reply.get("confidence"))
    return number if number is not None and 0.0 <= number <= 1.0 else None


def confidence_of(reply: Mapping[str, Any]) -> float:
    """γ: the ``confidence`` when it is a number (or numeric string) in [0, 1], else 0 (§3.7, O5)."""
    stated = stated_confidence(reply)
    return 0.0 if stated is None else stated


def format_score(value: object) -> float:
    """R_f (§3.2): 0 for a non-object, 0.2 when a required field is missing, 0.5 when one is malformed, else 1."""
    if not isinstance(value, Mapping):
        return 0.0
    if any(key not in value for key in REQUIRED_FIELDS):
        return 0.2
    confidence = _number(value["confidence"])
    well_typed = (
        isinstance(value["evidence_alignment"], list)
        and isinstance(value["reasoning_chain"], list)
        and normalize_label(value["label"]) is not None
        and confidence is not None
        and 0.0 <= confidence <= 1.0
    )
    return 1.0 if well_typed else 0.5


def alignment_entry_score(entry: object) -> float:
    """R_a of one alignment entry (§3.3); a non-object entry scores 0."""
    if not isinstance(entry, Mapping):
        return 0.0
    claim, source = _text(entry.get("claim_span")), _text(entry.get("source_span"))
    status = _text(entry.get("status")).strip().lower()
    return (
        0.3 * (len(claim) > 0)
        + 0.3 * (len(source) > 0 or status == "not_found")
        + 0.2 * (status in ALIGNMENT_STATUSES)
        + 0.1 * (3 <= len(claim) <= 200)
        + 0.1 * (3 <= len(source) <= 500)
    )


def alignment_score(alignments: object) -> float:
    """R_a (§3.3): the mean entry score, capped at 1; 0 for a missing, non-list or empty list."""
    if not isinstance(alignments, list) or not alignments:
        return 0.0
    return min(1.0, sum(alignment_entry_score(a) for a in alignments) / len(alignments))


def chain_step_score(step: object) -> float:
    """R_c of one reasoning step (§3.4); a non-object step scores 0."""
    if not isinstance(step, Mapping):
        return 0.0
    judgment = _text(step.get("judgment")).strip().lower()
    return (
        0.3 * (judgment in JUDGMENTS)
        + 0.3 * (len(_text(step.get("explanation"))) >= 10)
        + 0.2 * (len(_text(step.get("source_evidence"))) >= 5)
        + 0.2 * (len(_text(step.get("claim_part"))) > 0)
    )


def chain_score(chain: object) -> float:
    """R_c (§3.4): the mean step score plus ``0.2·min(|C|/3, 1)``, capped at 1 (O2); 0 for a missing, non-list
    or empty chain."""
    if not isinstance(chain, list) or not chain:
        return 0.0
    mean = sum(chain_step_score(s) for s in chain) / len(chain)
    return min(1.0, mean + 0.2 * min(len(chain) / 3, 1.0))


def label_score(predicted: Label | None, gold: Label) -> float:
    """R_l: 1 when the normalised label equals gold (``None`` never does)."""
    return 1.0 if predicted == gold else 0.0


def error_present(reply: Mapping[str, Any]) -> bool:
    """The reply names an error: ``error_type`` is a non-empty string other than none/null/n/a (O4)."""
    value = reply.get("error_type")
    return isinstance(value, str) and value.strip() != "" and value.strip().lower() not in _NO_ERROR


def diagnosis_score(reply: Mapping[str, Any], gold: Label) -> float:
    """R_d (§3.6), conditioned on the gold label: 0 when the reply's label is missing or unknown; on gold
    Attributable 1 without an error type and 0.3 with one; on gold Not Attributable 0.6 for a type from the
    taxonomy plus 0.4 for a fix of at least 10 characters. It never checks that the type is the right one."""
    if normalize_label(reply.get("label")) is None:
        return 0.0
    if gold == ATTRIBUTABLE:
        return _CONSOLATION if error_present(reply) else 1.0
    in_taxonomy = reply.get("error_type") in ERROR_TYPES
    return 0.6 * in_taxonomy + 0.4 * (len(_text(reply.get("fix_suggestion"))) >= 10)


def calibration(confidence: float, correct: bool, weights: RewardWeights | None = None) -> float:
    """``+bonus·γ`` for a right label, ``−penalty·γ`` otherwise (§3.7)."""
    weights = weights or RewardWeights()
    return weights.bonus * confidence if correct else -weights.penalty * confidence


def process_reward(
    reply: Mapping[str, Any] | None,
    gold: Label,
    weights: RewardWeights | None = None,
    *,
    label_normalized: bool = False,
) -> SevaRewardParts:
    """The whole reward of one reply (``None``: it did not parse → 0). ``label_normalized`` applies
    :func:`normalize_outcome` to the outcome part (label, diagnosis, calibration)."""
    if reply is None:
        return SevaRewardParts(parse_ok=False)
    weights = weights or RewardWeights()
    predicted = normalize_label(reply.get("label"))
    correct = predicted == gold
    gamma = confidence_of(reply)
    parts = {
        "format": format_score(reply),
        "alignment": alignment_score(reply.get("evidence_alignment")),
        "chain": chain_score(reply.get("reasoning_chain")),
        "label": label_score(predicted, gold),
        "diagnosis": diagnosis_score(reply, gold),
    }
    cal = calibration(gamma, correct, weights)
    process = weights.format * parts["format"] + weights.alignment * parts["alignment"] + weights.chain * parts["chain"]
    outcome = weights.label * parts["label"] + weights.diagnosis * parts["diagnosis"] + cal
    if label_normalized:
        outcome = normalize_outcome(outcome, gold, gamma, weights)
    return SevaRewardParts(parse_ok=True, **parts, confidence=gamma, calibration=cal, total=process + outcome)


def binary_reward(reply: Mapping[str, Any] | None, gold: Label) -> float:
    """The §3.11 binary ablation: 1 for the right label, else 0 (an unparseable reply too); no calibration."""
    return 0.0 if reply is None else label_score(normalize_label(reply.get("label")), gold)


def _outcome_range(gold: Label, gamma: float, weights: RewardWeights) -> tuple[float, float]:
    """The outcome part's span on a gold class at confidence γ: a right verdict with a full diagnosis (top), and
    the wrong verdict as §3.12 writes it (bottom): "Not Attributable" with a diagnosis on a gold-Attributable
    item, "Attributable" without one on a gold-Not-Attributable item."""
    top = weights.label + weights.diagnosis + weights.bonus * gamma
    consolation = weights.diagnosis * _CONSOLATION if gold == ATTRIBUTABLE else 0.0
    return consolation - weights.penalty * gamma, top


def normalize_outcome(outcome: float, gold: Label, gamma: float, weights: RewardWeights | None = None) -> float:
    """Label-conditional normalisation (beyond the paper; the fix §3.12 suggests): the outcome part of a gold
    class is mapped affinely so that its span (:func:`_outcome_range`) equals the Not-Attributable class's.
    A right verdict then gains as much over the wrong one on either class, so the expected-reward break-even
    moves to p = 0.5 at every confidence. Gold-Not-Attributable outcomes are unchanged."""
    weights = weights or RewardWeights()
    low, high = _outcome_range(gold, gamma, weights)
    ref_low, ref_high = _outcome_range(NOT_ATTRIBUTABLE, gamma, weights)
    if high == low:
        return outcome
    return ref_low + (outcome - low) * (ref_high - ref_low) / (high - low)


def break_even_probability(
    gamma: float, weights: RewardWeights | None = None, *, label_normalized: bool = False
) -> float:
    """The prior P(gold = Attributable) at which a policy with perfect process fields gains the same expected
    reward by saying "Attributable" (no diagnosis) as by saying "Not Attributable" (with a valid one): §3.12's
    analysis, computed through :func:`process_reward` on such replies rather than from its closed form."""
    weights = weights or RewardWeights()
    step = {"claim_part": "the claim", "source_evidence": "the source", "judgment": "supported",
            "explanation": "the source says so"}  # fmt: skip
    base = {"evidence_alignment": [{"claim_span": "the claim", "source_span": "the source", "status": "match"}],
            "reasoning_chain": [step, step, step], "confidence": gamma}  # fmt: skip
    say_a = {**base, "label": ATTRIBUTABLE}
    say_na = {**base, "label": NOT_ATTRIBUTABLE, "error_type": "fabrication", "fix_suggestion": "Drop the claim."}

    def value(reply: dict[str, Any], gold: Label) -> float:
        return process_reward(reply, gold, weights, label_normalized=label_normalized).total

    # E[A] - E[NA] is linear in p: p·(a_A - na_A) + (1 - p)·(a_NA - na_NA) = 0.
    gain_on_a = value(say_a, ATTRIBUTABLE) - value(say_na, ATTRIBUTABLE)
    loss_on_na = value(say_na, NOT_ATTRIBUTABLE) - value(say_a, NOT_ATTRIBUTABLE)
    return loss_on_na / (gain_on_a + loss_on_na)
