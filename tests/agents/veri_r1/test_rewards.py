"""Reward worked examples (spec §3.2–§3.5) and the reference reward cases (research notes §1.3, §1.4, §8 #3)."""

from __future__ import annotations

import pytest

from evigraph.agents.veri_r1.rewards import (
    compat_eval_reward,
    compat_training_reward,
    evidence_iou,
    final_reward,
    gold_hit_rate,
    label_reward,
    validity_weight,
)

S, R, N = "SUPPORT", "REFUTE", "NOT ENOUGH INFO"


def ids(text: str) -> list[str]:
    return list(text)


@pytest.mark.parametrize(
    ("name", "pred", "gold", "expected"),
    [
        ("E-a", "AB", "AB", 1.0),
        ("E-b", "ABC", "AB", 2 / 3),
        ("E-c", "A", "AB", 0.5),
        ("E-d", "", "A", 0.0),
        ("E-e", "XY", "AB", 0.0),
        ("E-f", "ABCXY", "ABCD", 0.5),
        ("E-g", "AAB", "AB", 1.0),
        ("E-h", "", "", 1.0),
    ],
)
def test_evidence_iou(name: str, pred: str, gold: str, expected: float) -> None:
    assert evidence_iou(ids(pred), set(gold)) == pytest.approx(expected, abs=1e-4), name


def test_gold_hit_rate() -> None:
    assert gold_hit_rate(["A", "X"], {"A", "B"}) == 0.5
    assert gold_hit_rate(["A"], set()) == 1.0  # nothing to cite


@pytest.mark.parametrize(
    ("name", "pred", "gold", "expected"),
    [("L-a", S, S, 2), ("L-b", R, R, 2), ("L-c", N, N, 2), ("L-d", S, R, 0), ("L-e", N, S, 0), ("L-f", None, R, 0)],
)
def test_label_reward(name: str, pred: str | None, gold: str, expected: float) -> None:
    assert label_reward(pred, gold) == expected, name


def test_label_reward_hover() -> None:
    assert label_reward(R, "NOT SUPPORTED") == label_reward(N, "NOT SUPPORTED") == 2
    assert label_reward(S, "NOT SUPPORTED") == label_reward(None, "NOT SUPPORTED") == 0


@pytest.mark.parametrize(
    ("name", "gold_label", "pred", "gold", "expected"),
    [
        ("W-a", S, "AB", "AB", 1.0),
        ("W-b", R, "ABCXY", "ABCD", 0.5),
        ("W-c", R, "AB", "ABC", 0.5),
        ("W-d", S, "A", "AB", 0.0),
        ("W-e", S, "X", "AB", 0.0),
        ("W-f", N, "", "A", 1.0),
        ("W-g", S, "ABC", "ABCDE", 0.5),
    ],
)
def test_validity_weight(name: str, gold_label: str, pred: str, gold: str, expected: float) -> None:
    assert validity_weight(gold_label, ids(pred), ids(gold)) == expected, name
    assert validity_weight("NOT SUPPORTED", [], ["A"]) == 1.0


@pytest.mark.parametrize(
    ("name", "pred_label", "gold_label", "pred", "gold", "fmt", "weighted", "evidence", "total"),
    [
        ("R-1", S, S, "AB", "AB", True, 2, 1.0, 4.0),
        ("R-2", S, S, "ABC", "AB", True, 2, 0.6667, 3.6667),
        ("R-3", R, R, "AB", "ABC", True, 1, 0.6667, 2.6667),
        ("R-4", S, S, "A", "AB", True, 0, 0.5, 1.5),
        ("R-5", N, N, "", "A", True, 2, 0.0, 3.0),
        ("R-6", R, S, "AB", "AB", True, 0, 1.0, 2.0),
        ("R-7", S, S, "AB", "AB", False, 2, 1.0, 3.0),
        ("R-8", R, R, "ABCXY", "ABCD", True, 1, 0.5, 2.5),
        ("R-9", None, S, "", "AB", False, 0, 0.0, 0.0),
        ("R-10", N, N, "", "", True, 2, 1.0, 4.0),
        ("R-11", N, N, "A", "", True, 2, 0.0, 3.0),
        ("R-12", S, N, "A", "AB", True, 0, 0.5, 1.5),
    ],
)
def test_final_reward(
    name: str,
    pred_label: str | None,
    gold_label: str,
    pred: str,
    gold: str,
    fmt: bool,
    weighted: float,
    evidence: float,
    total: float,
) -> None:
    r = final_reward(
        pred_label=pred_label, pred_evidence=ids(pred), gold_label=gold_label, gold_evidence=ids(gold), format_ok=fmt
    )
    assert r.label * r.validity == weighted, name
    assert r.evidence == pytest.approx(evidence, abs=1e-4)
    assert r.format == (1.0 if fmt else 0.0)
    assert r.total == pytest.approx(total, abs=1e-4)
    components = {c.type: c.value for c in r.components()}
    assert list(components) == ["label", "validity", "evidence", "format", "total"]
    assert components["total"] == r.total


@pytest.mark.parametrize(
    ("pred", "gold", "validity"),
    [("ABC", "ABC", 1.0), ("AB", "ABC", 0.5), ("A", "ABC", 0.0), ("A", "AB", 0.5), ("", "AB", 0.0)],
)
def test_compat_training_validity_cases(pred: str, gold: str, validity: float) -> None:
    r = compat_training_reward(
        pred_label=S, pred_evidence=ids(pred), gold_label=S, gold_evidence=ids(gold), format_ok=True
    )
    assert r.validity == validity
    assert r.total == pytest.approx(2 * validity + evidence_iou(ids(pred), ids(gold)) + 1)


def test_compat_training_full_marks_nfc_both_sides_and_nei() -> None:
    full = compat_training_reward(
        pred_label=S, pred_evidence=["A", "B", "C"], gold_label=S, gold_evidence=["A", "B", "C"], format_ok=True
    )
    assert full.total == 4.0
    nfd = compat_training_reward(
        pred_label=R, pred_evidence=["Mon\u00e1e"], gold_label=R, gold_evidence=["Mona\u0301e "], format_ok=False
    )
    assert nfd.validity == 1.0 and nfd.evidence == 1.0 and nfd.total == 3.0
    # NEI: no validity gate; IoU is added even when the label is wrong; empty gold gives IoU 0.
    assert (
        compat_training_reward(pred_label=N, pred_evidence=[], gold_label=N, gold_evidence=["A"], format_ok=True).total
        == 3.0
    )
    wrong = compat_training_reward(pred_label=S, pred_evidence=["A"], gold_label=N, gold_evidence=["A"], format_ok=True)
    assert wrong.total == 2.0
    assert (
        compat_training_reward(pred_label=N, pred_evidence=[], gold_label=N, gold_evidence=[], format_ok=True).total
        == 3.0
    )


def test_compat_eval_reward() -> None:
    right = compat_eval_reward(pred_label=S, pred_evidence=["A"], gold_label=S, gold_evidence=["A", "B"])
    assert right.total == pytest.approx(2 + 0.5 + 1) and right.format == 1.0
    wrong = compat_eval_reward(pred_label=R, pred_evidence=["A", "B"], gold_label=S, gold_evidence=["A", "B"])
    assert wrong.evidence == 1.0 and wrong.total == 1.0  # IoU only counts with a correct label
    none = compat_eval_reward(pred_label=None, pred_evidence=[], gold_label="NOT SUPPORTED", gold_evidence=["A"])
    assert none.label == 2.0 and none.format == 0.0 and none.total == 2.0  # HoVer: no label is "not SUPPORT"
    empty_gold = compat_eval_reward(pred_label=N, pred_evidence=[], gold_label=N, gold_evidence=[])
    assert empty_gold.evidence == 0.0 and empty_gold.total == 3.0
    # Ids are compared as given: a decomposed gold id never matches a composed prediction.
    nfd = compat_eval_reward(pred_label=S, pred_evidence=["Mon\u00e1e"], gold_label=S, gold_evidence=["Mona\u0301e"])
    assert nfd.evidence == 0.0
