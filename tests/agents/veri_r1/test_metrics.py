"""Metrics (spec §4 worked examples), prediction reading, gold records and their id normalisation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evigraph.agents.veri_r1.gold import GoldRecord, gold_evidence, read_gold
from evigraph.agents.veri_r1.metrics import Prediction, aggregate, prediction_from_response, score_instance
from evigraph.errors import InputDataError
from tests.agents.veri_r1.fragments import PROTOCOL_TEXT

S, R, N = "SUPPORT", "REFUTE", "NOT ENOUGH INFO"


def gold(i: str, label: str, evidence: str, dataset: str | None = None) -> GoldRecord:
    return GoldRecord(id=i, label=label, raw_label=label, evidence=tuple(evidence), dataset=dataset)


def pred(i: str, label: str | None, evidence: str, **kwargs) -> Prediction:
    return Prediction(id=i, label=label, evidence=tuple(evidence), format_ok=True, **kwargs)


# Spec §4 worked example: (gold label, gold ids, predicted label, predicted ids, label, veri, joint, IoU).
SIX = [
    (S, "AB", S, "AB", 1, 1, 1, 1.0),
    (S, "AB", S, "ABC", 1, 1, 0, 0.6667),
    (R, "C", R, "D", 1, 0, 0, 0.0),
    (N, "E", N, "", 1, 1, 1, 0.0),
    (N, "E", S, "E", 0, 0, 0, 1.0),
    (R, "FG", N, "FG", 0, 0, 0, 1.0),
]


def six_scores():
    return [score_instance(pred(str(i), p, pe), gold(str(i), g, ge)) for i, (g, ge, p, pe, *_) in enumerate(SIX)]


def test_six_instance_example_per_instance() -> None:
    for score, (*_, label, veri, joint, iou) in zip(six_scores(), SIX, strict=True):
        assert (score.label_correct, score.verified, score.joint) == (bool(label), bool(veri), bool(joint))
        assert score.evidence_iou == pytest.approx(iou, abs=1e-4)


def test_six_instance_example_overall_and_class_wise() -> None:
    report = aggregate(six_scores(), mode="clean")
    assert report.n == 6 and report.mode == "clean"
    assert report.label_accuracy == pytest.approx(4 / 6)
    assert report.verification_accuracy == pytest.approx(3 / 6)
    assert report.joint_accuracy == pytest.approx(2 / 6)
    assert report.evidence_score == pytest.approx(0.6111, abs=1e-4)
    assert report.evidence_cover_rate == pytest.approx(4 / 6)  # instances 1, 2, 5, 6
    expected = {S: (1.0, 1.0, 0.5), R: (0.5, 0.0, 0.0), N: (0.5, 0.5, 0.5)}
    for label, (acc, veri, joint) in expected.items():
        c = report.per_class[label]
        assert (c.n, c.label_accuracy, c.verification_accuracy, c.joint_accuracy) == (2, acc, veri, joint)
    classes = report.per_class.values()
    assert sum(c.label_accuracy for c in classes) / 3 == pytest.approx(report.label_accuracy)
    assert sum(c.verification_accuracy for c in classes) / 3 == pytest.approx(report.verification_accuracy)
    assert sum(c.joint_accuracy for c in classes) / 3 == pytest.approx(report.joint_accuracy)
    assert report.confusion == {S: {S: 2}, R: {R: 1, N: 1}, N: {N: 1, S: 1}}
    # Precision: SUPPORT predicted 3 times (2 right); NEI predicted twice (1 right); REFUTE once (right).
    assert report.per_class[S].precision == pytest.approx(2 / 3)
    assert report.per_class[N].precision == pytest.approx(1 / 2)
    assert report.per_class[R].precision == 1.0 and report.per_class[R].recall == 0.5
    assert report.confidence is None and report.unretrieved_citation_rate is None


def test_hover_example() -> None:
    negative = score_instance(pred("1", R, "XYZ"), gold("1", "NOT SUPPORTED", "AB", "hover"))
    assert negative.label_correct and negative.verified and negative.joint
    positive = score_instance(pred("2", S, "ABC"), gold("2", S, "AB", "hover"))
    assert positive.label_correct and positive.verified and not positive.joint
    assert not score_instance(pred("3", None, ""), gold("3", "NOT SUPPORTED", "A")).label_correct
    # Compat: the reference accepts any non-SUPPORT answer for NOT_SUPPORTED, no label included.
    assert score_instance(pred("3", None, ""), gold("3", "NOT SUPPORTED", "A"), compat=True).label_correct


def test_clean_vs_compat_ids_and_empty_gold() -> None:
    nfd = GoldRecord(id="1", label=S, raw_label="SUPPORTS", evidence=("Janelle_Mona\u0301e_sentence_0",))
    p = Prediction(id="1", label=S, evidence=("Janelle_Mon\u00e1e_sentence_0",), format_ok=True)
    assert score_instance(p, nfd).verified
    compat = score_instance(p, nfd, compat=True)
    assert compat.label_correct and not compat.verified and compat.evidence_iou == 0.0
    empty = gold("2", N, "")
    assert score_instance(pred("2", N, ""), empty).evidence_iou == 1.0
    assert score_instance(pred("2", N, ""), empty, compat=True).evidence_iou == 0.0


def test_reward_and_unretrieved_counts() -> None:
    s = score_instance(pred("1", S, "AB", retrieved_ids=("A", "C")), gold("1", S, "AB"))
    assert s.reward == 4.0 and s.n_cited == 2 and s.n_cited_unretrieved == 1
    other = score_instance(pred("2", S, "A", retrieved_ids=("A",)), gold("2", S, "A"))
    report = aggregate([s, other], mode="clean")
    assert report.unretrieved_citation_rate == pytest.approx(1 / 3)
    assert report.mean_reward == 4.0


def test_confidence_tiers_and_bins() -> None:
    cases = [(S, S, 0.99), (S, R, 0.97), (S, S, 0.5), (N, N, 0.9), (R, R, None)]
    scores = [
        score_instance(pred(str(i), p, "", confidence=c), gold(str(i), g, "")) for i, (p, g, c) in enumerate(cases)
    ]
    confidence = aggregate(scores, mode="clean").confidence
    assert confidence is not None and confidence.n == 4
    tiers = {(t.label, t.tier): (t.n, t.accuracy) for t in confidence.tiers}
    assert tiers[(S, "high")] == (2, 0.5) and tiers[(S, "low")] == (1, 1.0) and tiers[(S, "mid")] == (0, None)
    assert tiers[(N, "mid")] == (1, 1.0)
    assert len(confidence.bins) == 10 and sum(b.n for b in confidence.bins) == 4
    top = confidence.bins[-1]
    assert (top.lower, top.upper, top.n, top.accuracy) == (0.9, 1.0, 3, pytest.approx(2 / 3))
    assert confidence.bins[5].n == 1 and confidence.bins[0].accuracy is None


def test_prediction_from_response_clean_and_compat() -> None:
    response = (
        "<|im_start|>user\nprompt <answer>Label: REFUTE</answer><|im_end|>\n<|im_start|>assistant\n"
        "<plan>p</plan><search>q</search>\n\n<information>\n[[A]]:a\n[[B]]: b\n</information>\n\n"
        "<think>A says so</think><answer>Label: SUPPORT\nEvidence: [[A]], [[Guess]]</answer><|im_end|>"
    )
    clean = prediction_from_response("1", response)
    assert clean.label == S and clean.evidence == ("A", "Guess") and clean.format_ok
    assert clean.retrieved_ids == ("A", "B")
    compat = prediction_from_response("1", response, compat=True)
    assert compat.label == S and compat.format_ok and compat.retrieved_ids is None
    lenient = prediction_from_response("2", "<answer>Label: SUPPORTS\nEvidence: e_1</answer>", compat=True)
    assert lenient.label == S and lenient.format_ok
    strict = prediction_from_response("2", "<answer>Label: SUPPORTS\nEvidence: e_1</answer>")
    assert strict.label is None and not strict.format_ok


@settings(max_examples=200, deadline=None)
@given(PROTOCOL_TEXT, st.booleans())
def test_prediction_from_response_never_raises(text: str, compat: bool) -> None:
    p = prediction_from_response("x", text, compat=compat)
    score = score_instance(p, gold("x", S, "a"), compat=compat)
    assert 0.0 <= score.evidence_iou <= 1.0 and 0.0 <= score.reward <= 4.0


# -- gold records -------------------------------------------------------------------------------------


def test_gold_from_shared_and_native_schemas() -> None:
    shared = GoldRecord.from_mapping(
        {
            "id": 972,
            "question": "c",
            "golden_answers": {"evidence": ["x"], "label": "CONTRADICT"},
            "data_source": "scifact",
            "prompt": [],
        }
    )
    assert (shared.id, shared.claim, shared.label, shared.raw_label, shared.dataset) == (
        "972",
        "c",
        R,
        "CONTRADICT",
        "scifact",
    )
    via_reward_model = GoldRecord.from_mapping(
        {"id": "a", "reward_model": {"ground_truth": {"evidence": [], "label": "SUPPORTS"}}}
    )
    assert via_reward_model.label == S and via_reward_model.evidence == ()
    native = GoldRecord.from_mapping(
        {"id": "n", "claim": "c", "label": "NOT_SUPPORTED", "evidence": ["T_sentence_1"], "dataset": "hover"}
    )
    assert native.label == "NOT SUPPORTED"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"label": S, "evidence": []}, "field id"),
        ({"id": "1", "evidence": []}, "field label"),
        ({"id": "1", "label": "TRUE", "evidence": []}, "field label"),
        ({"id": "1", "label": S}, "field evidence"),
        ({"id": "1", "golden_answers": {"label": S, "evidence": [3]}}, "field golden_answers.evidence.0"),
    ],
)
def test_gold_from_mapping_errors_name_the_field(data: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        GoldRecord.from_mapping(data)


def test_read_gold_errors_carry_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    good = {"id": "1", "label": S, "evidence": ["A"]}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({"id": "2", "label": "nope", "evidence": []}) + "\n")
    with pytest.raises(InputDataError, match=r"gold.jsonl:3: field label"):
        read_gold(path)
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(InputDataError, match=r":2: field id: duplicate id '1' \(lines 1 and 2\)"):
        read_gold(path)
    path.write_text("{not json\n")
    with pytest.raises(InputDataError, match=":1: not valid JSON"):
        read_gold(path)
    path.write_text(json.dumps(good) + "\n")
    assert read_gold(path)["1"].evidence == ("A",)


def test_gold_evidence_modes() -> None:
    hover = GoldRecord(
        id="h",
        label=S,
        raw_label="SUPPORTED",
        evidence=("Twisted Fortune_sentence_0", "Twisted Fortune_sentence_2", " Mona\u0301e_sentence_1"),
        dataset="hover",
    )
    assert gold_evidence(hover, compat=False) == {"Twisted Fortune", "Mon\u00e1e"}
    assert gold_evidence(hover, compat=True) == {"Twisted Fortune", " Mona\u0301e"}
    assert "Twisted Fortune_sentence_0" in gold_evidence(hover, compat=False, hover_titles=False)
    fever = GoldRecord(id="f", label=S, raw_label="SUPPORTS", evidence=("X_sentence_6",), dataset="fever")
    assert gold_evidence(fever, compat=True) == {"X_sentence_6"}
