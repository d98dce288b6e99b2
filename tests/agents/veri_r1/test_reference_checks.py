"""Deterministic checks on the shared Veri-R1 eval files (research notes §8 #1, #2): constant predictors and
the gold oracle, in compat mode (the reference evaluator's numbers) and in clean mode (our own definitions)."""

from __future__ import annotations

from functools import cache

import pytest

from evigraph.agents.veri_r1.gold import GoldRecord, gold_evidence, read_gold
from evigraph.agents.veri_r1.metrics import VeriR1Report, aggregate, prediction_from_response, score_instance
from tests.markers import shared_data

DATA = shared_data("veri-r1-claim-verification")
DATASETS = ("fever", "feverous", "exfever", "hover", "scifact")

# The gold label in the predicted vocabulary; for HoVer NOT_SUPPORTED the reference accepts any
# non-SUPPORT answer and clean mode accepts REFUTE or NEI, so REFUTE serves both.
ANSWER_LABEL = {
    "SUPPORT": "SUPPORT",
    "REFUTE": "REFUTE",
    "NOT ENOUGH INFO": "NOT ENOUGH INFO",
    "NOT SUPPORTED": "REFUTE",
}


@cache
def gold(dataset: str) -> tuple[GoldRecord, ...]:
    path = DATA / f"eval_{dataset}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return tuple(read_gold(path).values())


def constant(label: str):
    return lambda record, compat: f"<answer>Label: {label}\nEvidence: </answer>"


def oracle(record: GoldRecord, compat: bool) -> str:
    # The ids the evaluator compares against (HoVer cut to page titles, as the reference serves them).
    ids = ", ".join(f"[[{i}]]" for i in sorted(gold_evidence(record, compat=compat)))
    return f"<answer>Label: {ANSWER_LABEL[record.label]}\nEvidence: {ids}</answer>"


def report(dataset: str, respond, *, compat: bool) -> VeriR1Report:
    scores = [
        score_instance(prediction_from_response(r.id, respond(r, compat), compat=compat), r, compat=compat)
        for r in gold(dataset)
    ]
    return aggregate(scores, mode="compat" if compat else "clean")


def pct(x: float) -> float:
    return round(100 * x, 2)


@pytest.mark.parametrize("dataset", DATASETS)
def test_sizes_and_balance(dataset: str) -> None:
    records = gold(dataset)
    sizes = {"fever": 900, "feverous": 882, "exfever": 789, "hover": 1000, "scifact": 711}
    assert len(records) == sizes[dataset]
    counts = {}
    for r in records:
        counts[r.label] = counts.get(r.label, 0) + 1
    assert len(set(counts.values())) == 1


@pytest.mark.parametrize("dataset", DATASETS)
def test_always_nei_compat(dataset: str) -> None:
    r = report(dataset, constant("NOT ENOUGH INFO"), compat=True)
    expected = 50.0 if dataset == "hover" else 33.33
    assert pct(r.label_accuracy) == pct(r.verification_accuracy) == pct(r.joint_accuracy) == expected
    assert r.evidence_score == 0.0
    assert round(r.mean_reward, 4) == (2.0 if dataset == "hover" else 1.6667)


@pytest.mark.parametrize("dataset", DATASETS)
def test_always_support_without_evidence_compat(dataset: str) -> None:
    r = report(dataset, constant("SUPPORT"), compat=True)
    assert pct(r.label_accuracy) == (50.0 if dataset == "hover" else 33.33)
    assert r.verification_accuracy == r.joint_accuracy == 0.0


@pytest.mark.parametrize(
    ("dataset", "veri", "evidence"),
    [
        ("fever", 99.56, 0.6626),
        ("feverous", 96.94, 0.9543),
        ("exfever", 99.87, 0.9992),
        ("hover", 100.0, 1.0),
        ("scifact", 100.0, 0.6667),
    ],
)
def test_oracle_compat_reproduces_the_reference(dataset: str, veri: float, evidence: float) -> None:
    r = report(dataset, oracle, compat=True)
    assert pct(r.label_accuracy) == 100.0
    assert pct(r.verification_accuracy) == pct(r.joint_accuracy) == veri  # the NFD quirk
    assert round(r.evidence_score, 4) == evidence
    assert r.format_rate == 1.0


@pytest.mark.parametrize("dataset", DATASETS)
def test_oracle_clean_is_perfect(dataset: str) -> None:
    # Clean mode composes both sides (no NFD misses) and scores an empty/empty evidence pair as 1.0, so the
    # oracle is perfect everywhere. Its format fails (no <plan>), so the reward is 2 + 1 + 0 = 3.
    r = report(dataset, oracle, compat=False)
    assert r.label_accuracy == r.verification_accuracy == r.joint_accuracy == 1.0
    assert r.evidence_score == 1.0 and r.evidence_cover_rate == 1.0
    assert r.format_rate == 0.0 and r.mean_reward == 3.0


@pytest.mark.parametrize("dataset", DATASETS)
def test_constant_predictors_clean(dataset: str) -> None:
    # Always NEI: label = veri = joint = the NEI share (HoVer: NOT SUPPORTED accepts NEI). Evidence 1.0 only on
    # gold NEI rows without gold ids (FEVER, SciFact: a third of the rows), else 0. Reward = 2 · accuracy + evidence
    # (format fails: no plan).
    nei = report(dataset, constant("NOT ENOUGH INFO"), compat=False)
    share = 0.5 if dataset == "hover" else 1 / 3
    empty_nei = 1 / 3 if dataset in ("fever", "scifact") else 0.0
    assert nei.label_accuracy == nei.verification_accuracy == nei.joint_accuracy == pytest.approx(share)
    assert nei.evidence_score == pytest.approx(empty_nei)
    assert nei.mean_reward == pytest.approx(2 * share + empty_nei)
    support = report(dataset, constant("SUPPORT"), compat=False)
    assert support.label_accuracy == pytest.approx(share)
    assert support.verification_accuracy == support.joint_accuracy == 0.0
    assert support.per_class["SUPPORT"].recall == 1.0
