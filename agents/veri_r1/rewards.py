"""Veri-R1 outcome rewards (spec §3), as pure functions over already-parsed labels and id sets.

``final_reward`` is the spec's ``R = R_label · w_validity + R_evidence + R_format``. The two ``compat_*``
functions reproduce the reference code (research notes §1.3 training reward, §1.4 evaluation reward) so its
numbers can be checked; they differ in the half-credit threshold, the empty-gold IoU and the format term.

Ids are compared as given: normalise them first (:func:`~evigraph.agents.veri_r1.labels.normalize_id`,
:func:`~evigraph.agents.veri_r1.gold.gold_evidence`), except where a function says it normalises itself.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict

from evigraph.agents.veri_r1.labels import GoldLabel, Label, label_matches, relaxes_evidence
from evigraph.trajectory import RewardComponent

__all__ = (
    "LABEL_REWARD",
    "RewardBreakdown",
    "compat_eval_reward",
    "compat_label_correct",
    "compat_training_reward",
    "compat_validity",
    "evidence_iou",
    "final_reward",
    "gold_hit_rate",
    "label_reward",
    "validity_weight",
)

LABEL_REWARD = 2.0
"""A correct label is worth 2 so that it dominates the evidence and format terms (spec §3.3)."""


def evidence_iou(pred: Collection[str], gold: Collection[str]) -> float:
    """Jaccard overlap of the id *sets* (duplicates do not count twice).

    Both empty → 1.0 and exactly one empty → 0.0 (our convention, spec §3.2).
    """
    p, g = set(pred), set(gold)
    if not p and not g:
        return 1.0
    return len(p & g) / len(p | g)


def gold_hit_rate(pred: Collection[str], gold: Collection[str]) -> float:
    """Share of gold ids that were cited, ``|P ∩ G| / |G|``. An empty gold set counts as fully hit (1.0):
    there is nothing left to cite."""
    g = set(gold)
    if not g:
        return 1.0
    return len(set(pred) & g) / len(g)


def label_reward(pred: Label | None, gold: GoldLabel) -> float:
    """2 for a correct label (HoVer ``NOT SUPPORTED`` accepts REFUTE or NEI), else 0 (spec §3.3)."""
    return LABEL_REWARD if label_matches(pred, gold) else 0.0


def validity_weight(gold_label: GoldLabel, pred_evidence: Collection[str], gold_evidence: Collection[str]) -> float:
    """Share of the label reward that the cited evidence earns (spec §3.4).

    1 for NEI-like gold labels or when every gold id is cited; 0.5 when strictly more than half are cited
    (a 1-of-2 hit gets 0); 0 otherwise.
    """
    if relaxes_evidence(gold_label):
        return 1.0
    hit = gold_hit_rate(pred_evidence, gold_evidence)
    if hit == 1.0:
        return 1.0
    return 0.5 if hit > 0.5 else 0.0


class RewardBreakdown(BaseModel):
    """The reward terms of one trajectory; ``total`` is what the trainer optimises."""

    model_config = ConfigDict(frozen=True)

    label: float
    """``R_label`` before weighting (0 or 2)."""
    validity: float
    """The validity weight (1, 0.5 or 0)."""
    evidence: float
    format: float
    total: float

    def components(self) -> list[RewardComponent]:
        """The terms as trajectory reward components, named ``label``, ``validity``, ``evidence``, ``format``
        and ``total``."""
        return [
            RewardComponent(type=name, value=getattr(self, name))
            for name in ("label", "validity", "evidence", "format", "total")
        ]


def final_reward(
    *,
    pred_label: Label | None,
    pred_evidence: Collection[str],
    gold_label: GoldLabel,
    gold_evidence: Collection[str],
    format_ok: bool,
) -> RewardBreakdown:
    """``R = R_label · w_validity + R_evidence + R_format`` ∈ [0, 4] (spec §3.5)."""
    label = label_reward(pred_label, gold_label)
    validity = validity_weight(gold_label, pred_evidence, gold_evidence)
    evidence = evidence_iou(pred_evidence, gold_evidence)
    fmt = 1.0 if format_ok else 0.0
    return RewardBreakdown(
        label=label, validity=validity, evidence=evidence, format=fmt, total=label * validity + evidence + fmt
    )


def _nfc(ids: Collection[str]) -> set[str]:
    return {unicodedata.normalize("NFC", i.strip()) for i in ids}


def _reference_iou(pred: set[str], gold: set[str]) -> float:
    # The reference gives no evidence credit at all when the gold set is empty.
    return len(pred & gold) / len(pred | gold) if gold else 0.0


def compat_validity(pred: Collection[str], gold: Collection[str]) -> float:
    """The reference's validity: 1 if every gold id is cited, 0.5 if at least ``⌈|G|/2⌉`` are, else 0.

    Unlike :func:`validity_weight` half of the gold set is enough for 0.5 (1 of 2 → 0.5, 1 of 3 → 0).
    """
    p, g = set(pred), set(gold)
    if g <= p:
        return 1.0
    return 0.5 if len(p & g) >= math.ceil(len(g) / 2) else 0.0


def compat_training_reward(
    *,
    pred_label: Label | None,
    pred_evidence: Collection[str],
    gold_label: GoldLabel,
    gold_evidence: Collection[str],
    format_ok: bool,
) -> RewardBreakdown:
    """The reference *training* reward (research notes §1.3).

    Ids on both sides are stripped and NFC-composed here. IoU is 0 when the gold set is empty and is added
    whether or not the label is right. Gold SUPPORT/REFUTE: ``2·valid·label + IoU + format``; NEI-like gold
    (the reference knows only NEI; HoVer ``NOT SUPPORTED`` is treated the same way here): ``2·label + IoU +
    format``, reported with validity 1.
    """
    pred, gold = _nfc(pred_evidence), _nfc(gold_evidence)
    label = label_reward(pred_label, gold_label)
    validity = 1.0 if relaxes_evidence(gold_label) else compat_validity(pred, gold)
    evidence = _reference_iou(pred, gold)
    fmt = 1.0 if format_ok else 0.0
    return RewardBreakdown(
        label=label, validity=validity, evidence=evidence, format=fmt, total=label * validity + evidence + fmt
    )


def compat_label_correct(pred: Label | None, gold: GoldLabel) -> bool:
    """The reference evaluator's label rule: exact match, except that HoVer ``NOT SUPPORTED`` accepts every
    prediction other than SUPPORT -- no label included (research notes §1.4)."""
    if gold == "NOT SUPPORTED":
        return pred != "SUPPORT"
    return pred == gold


def compat_eval_reward(
    *,
    pred_label: Label | None,
    pred_evidence: Collection[str],
    gold_label: GoldLabel,
    gold_evidence: Collection[str],
    format_ok: bool | None = None,
) -> RewardBreakdown:
    """The reference *evaluation* reward (research notes §1.4).

    ``total = 2·label + IoU + format`` when the label is correct, else ``2·label + format`` (so just the
    format term). IoU is 0 for an empty gold set. The format term is 1 iff a label was parsed; pass
    ``format_ok`` only to override that. Ids are compared as given (the reference composes predicted ids
    only). ``validity`` is the reference's validity (what its verification accuracy uses); it is not part of
    this total.
    """
    pred, gold = set(pred_evidence), set(gold_evidence)
    correct = compat_label_correct(pred_label, gold_label)
    label = LABEL_REWARD if correct else 0.0
    evidence = _reference_iou(pred, gold)
    fmt = 1.0 if (pred_label is not None if format_ok is None else format_ok) else 0.0
    total = label + evidence + fmt if correct else label + fmt
    return RewardBreakdown(
        label=label, validity=compat_validity(pred, gold), evidence=evidence, format=fmt, total=total
    )
