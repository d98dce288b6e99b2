"""StepGap checker metrics: the spec's §4 worked examples M-1…M-10, typed F1, the report and its plot.

Every rate is a fraction in [0, 1]; the spec's percentages (e.g. M-10's ``[100, 100]``) are read as fractions.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evigraph.agents.stepgap.labels import GAP_LABELS, GapLabel
from evigraph.agents.stepgap.metrics import (
    LabeledQuestion,
    answer_token_f1,
    checker_report,
    first_gap_distribution,
    flag_everything_q_f1,
    is_degenerate,
    label_distribution,
    question_counts,
    step_counts,
    typed_f1,
)
from evigraph.agents.stepgap.plots import gap_distribution_plot
from evigraph.metrics import BinaryCounts, balanced_accuracy, bootstrap_ci, cohen_kappa, f1, mean, precision, recall

G: GapLabel = "IE"  # any gap type: the binary step metrics only read has_gap
N: GapLabel = "no-gap"


def question(i: int | str, gold: list[GapLabel], pred: list[GapLabel], *, correct: bool, **extras) -> LabeledQuestion:
    return LabeledQuestion(id=str(i), gold=tuple(gold), pred=tuple(pred), answer_correct=correct, **extras)


def benchmark(pred_for_gold) -> list[LabeledQuestion]:
    """The 181-step benchmark's shape (107 gap / 74 no-gap steps, 82 questions, 69 wrong) with a chosen checker.

    Question q holds steps q, q+82, q+164 (2–3 steps each); ``pred_for_gold(step_index, gold_label)`` labels a step.
    """
    gold: list[GapLabel] = [("CC", "IE", "MB")[k % 3] if k < 107 else N for k in range(181)]
    random.Random(7).shuffle(gold)
    return [
        question(
            q,
            [gold[k] for k in range(q, 181, 82)],
            [pred_for_gold(k, gold[k]) for k in range(q, 181, 82)],
            correct=q >= 69,
        )
        for q in range(82)
    ]


def test_stepgap_4_m1_step_metrics() -> None:
    counts = step_counts([G] * 6 + [N] * 4, [G, G, G, G, N, N, G, N, N, N])
    assert counts == BinaryCounts(tp=4, fn=2, fp=1, tn=3)
    assert precision(counts) == pytest.approx(0.8)
    assert recall(counts) == pytest.approx(0.6667, abs=1e-4)
    assert f1(counts) == pytest.approx(0.7273, abs=1e-4)
    assert balanced_accuracy(counts) == pytest.approx((0.6667 + 0.75) / 2, abs=1e-4)
    assert balanced_accuracy(counts) == pytest.approx(0.7083, abs=1e-4)


def test_stepgap_4_m2_flag_everything_beats_stepgap_on_sf1() -> None:
    report = checker_report(benchmark(lambda _k, _g: "IE"), resamples=50)
    assert (report.n_steps, report.step.counts) == (181, BinaryCounts(tp=107, fp=74, fn=0, tn=0))
    assert report.step.precision == pytest.approx(0.5912, abs=1e-4)
    assert report.step.recall == 1.0
    assert report.step.f1 == pytest.approx(0.7431, abs=1e-4)  # above StepGap's 72.0
    assert report.step.balanced_accuracy == 0.5
    assert report.flag_rate == 1.0


def test_stepgap_4_m3_flag_nothing() -> None:
    report = checker_report(benchmark(lambda _k, _g: N), resamples=50)
    step = report.step
    assert (step.precision, step.recall, step.f1, step.balanced_accuracy) == (0.0, 0.0, 0.0, 0.5)
    assert report.flag_rate == 0.0
    assert report.question.f1 == 0.0  # no question flagged


@pytest.mark.parametrize(
    ("counts", "tpr_tnr_mean"),
    [
        (BinaryCounts(tp=0, fp=0, fn=0, tn=5), 1.0),  # no gold gap: TNR alone
        (BinaryCounts(tp=0, fp=5, fn=0, tn=0), 0.0),  # no gold gap, everything flagged: TNR = 0
        (BinaryCounts(tp=3, fp=0, fn=1, tn=0), 0.75),  # only gold gaps: TPR alone
        (BinaryCounts(tp=0, fp=0, fn=0, tn=0), 0.0),  # no units at all
    ],
)
def test_balanced_accuracy_with_an_absent_class(counts: BinaryCounts, tpr_tnr_mean: float) -> None:
    assert balanced_accuracy(counts) == tpr_tnr_mean


def test_stepgap_4_m4_table_9_counts() -> None:
    # §7.4: 69 wrong (56 flagged), 13 correct (12 flagged).
    questions = [question(k, [G], [G if k < 56 else N], correct=False) for k in range(69)]
    questions += [question(69 + k, [N], [G if k < 12 else N], correct=True) for k in range(13)]
    counts = question_counts(questions)
    assert counts == BinaryCounts(tp=56, fn=13, fp=12, tn=1)
    assert precision(counts) == pytest.approx(0.8235, abs=1e-4)
    assert recall(counts) == pytest.approx(0.8116, abs=1e-4)
    assert f1(counts) == pytest.approx(112 / 137) == pytest.approx(0.8175, abs=1e-4)
    report = checker_report(questions, resamples=50)
    assert report.question.f1 == pytest.approx(0.8175, abs=1e-4)
    assert report.question.counts == counts


def test_stepgap_4_m5_flag_everything_on_82_questions() -> None:
    report = checker_report(benchmark(lambda _k, _g: "CC"), resamples=50)
    assert report.question.counts == BinaryCounts(tp=69, fp=13, fn=0, tn=0)
    assert report.question.wrong_rate == pytest.approx(0.8415, abs=1e-4)
    assert report.question.f1 == pytest.approx(138 / 151) == pytest.approx(0.9139, abs=1e-4)
    assert report.question.flag_all_f1 == pytest.approx(report.question.f1)


def test_stepgap_4_m6_five_questions() -> None:
    questions = [
        question(1, [G], [G], correct=False),
        question(2, [G, N], [N, G], correct=False),
        question(3, [G], [N], correct=False),
        question(4, [N], [G], correct=True),
        question(5, [N], [N], correct=True),
    ]
    counts = question_counts(questions)
    assert (counts.tp, counts.fn, counts.fp) == (2, 1, 1)
    assert f1(counts) == pytest.approx(0.6667, abs=1e-4)


def test_stepgap_4_m7_kappa() -> None:
    first = [True] * 5 + [False] * 3 + [True, False]
    second = [True] * 5 + [False] * 3 + [False, True]
    assert cohen_kappa(first, second) == pytest.approx((0.80 - 0.52) / (1 - 0.52))
    assert cohen_kappa(first, second) == pytest.approx(0.5833, abs=1e-4)


def test_kappa_four_way_and_edge_cases() -> None:
    gold: list[GapLabel] = ["CC", "IE", "MB", N]
    # Swapped MB/no-gap: p_o = 2/4; every label once per rater → p_e = 4 · (1/4 · 1/4) = 1/4.
    assert cohen_kappa(gold, ["CC", "IE", N, "MB"]) == pytest.approx((0.5 - 0.25) / (1 - 0.25))
    # One miss (no-gap read as MB): p_o = 3/4; p_e = (1·1 + 1·1 + 1·2 + 1·0)/16 = 1/4.
    assert cohen_kappa(gold, ["CC", "IE", "MB", "MB"]) == pytest.approx((0.75 - 0.25) / (1 - 0.25))
    assert cohen_kappa(gold, gold) == 1.0
    assert cohen_kappa([N, N], [N, N]) == 1.0  # p_e = 1 with full agreement
    assert cohen_kappa([], []) == 0.0
    with pytest.raises(ValueError, match="2 labels from the second rater for 1"):
        cohen_kappa([N], [N, N])


def test_stepgap_4_m8_first_gap_thirds() -> None:
    first = first_gap_distribution([["no-gap", "IE", "CC"], ["MB"], ["no-gap", "no-gap"], ["CC", "IE"]])
    assert first.model_dump() == pytest.approx({"CC": 1 / 3, "IE": 1 / 3, "MB": 1 / 3, "n": 3})
    assert first_gap_distribution([[N, N], []]).model_dump() == {"CC": 0.0, "IE": 0.0, "MB": 0.0, "n": 0}


def test_report_first_gap_reads_predictions_on_gold_wrong_questions_only() -> None:
    questions = [
        question("w1", [G, G], [N, "MB"], correct=False),
        question("w2", [G], ["CC"], correct=False),
        question("right", [G], ["IE"], correct=True),  # correct answer: ignored
    ]
    first = checker_report(questions, resamples=10).first_gap
    assert (first.CC, first.IE, first.MB, first.n) == (0.5, 0.0, 0.5, 2)


@pytest.mark.parametrize(("w", "expected"), [(0.55, 0.7097), (0.68, 0.8095), (0.76, 0.8636), (0.90, 0.9474)])
def test_stepgap_4_m9_closed_form_and_a_real_flag_everything_checker(w: float, expected: float) -> None:
    assert flag_everything_q_f1(w) == pytest.approx(expected, abs=1e-4)
    wrong = round(100 * w)
    questions = [question(k, [N, G], [G, G], correct=k >= wrong) for k in range(100)]
    report = checker_report(questions, resamples=10)
    assert report.question.f1 == pytest.approx(expected, abs=1e-4)
    assert report.question.flag_all_f1 == pytest.approx(report.question.f1)


def test_flag_everything_closed_form_spec_strata() -> None:
    assert [round(flag_everything_q_f1(w), 3) for w in (0.50, 0.65, 0.84)] == [0.667, 0.788, 0.913]
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        flag_everything_q_f1(1.2)


@given(wrong=st.integers(0, 60), right=st.integers(0, 60))
def test_flag_everything_q_f1_equals_2w_over_1_plus_w(wrong: int, right: int) -> None:
    questions = [question(k, [G], [G], correct=k >= wrong) for k in range(wrong + right)]
    w = wrong / (wrong + right) if questions else 0.0
    assert f1(question_counts(questions)) == pytest.approx(flag_everything_q_f1(w))


def test_stepgap_4_m10_perfect_checker_interval_is_one_one() -> None:
    report = checker_report(benchmark(lambda _k, g: g))
    assert set(report.step.ci) == {"precision", "recall", "f1", "balanced_accuracy", "kappa"}
    for name, interval in report.step.ci.items():
        assert interval == (1.0, 1.0), name
    assert report.typed_f1.macro == 1.0


def test_stepgap_4_m10_bootstrap_is_deterministic_per_seed() -> None:
    # An imperfect checker: every fifth step's label flipped between gap and no-gap.
    def imperfect(k: int, g: GapLabel) -> GapLabel:
        return g if k % 5 else ("IE" if g == N else N)

    questions = benchmark(imperfect)
    first, again = checker_report(questions, seed=3), checker_report(questions, seed=3)
    assert first == again
    other = checker_report(questions, seed=4)
    assert other.step.ci != first.step.ci  # a different seed draws other resamples
    lo, hi = first.step.ci["f1"]
    assert lo < first.step.f1 < hi


def test_bootstrap_ci_is_the_numpy_percentile_of_the_resampled_metric() -> None:
    units = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2]
    rng = random.Random(11)
    values = [mean(rng.choices(units, k=len(units))) for _ in range(300)]
    expected = tuple(np.percentile(values, [5.0, 95.0]))
    assert bootstrap_ci(units, mean, resamples=300, seed=11, level=0.90) == pytest.approx(expected)
    assert bootstrap_ci([], mean) == (0.0, 0.0)  # no units: the metric of nothing, twice
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci(units, mean, level=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci(units, mean, resamples=0)


def test_typed_f1_hand_computed() -> None:
    gold: list[GapLabel] = ["CC", "CC", "IE", "IE", "MB", N, N, "IE"]
    pred: list[GapLabel] = ["CC", "IE", "IE", "IE", N, "MB", N, "CC"]
    expected = {
        "CC": 2 / 4,  # TP 1 (step 1), FP 1 (step 8), FN 1 (step 2)
        "IE": 4 / 6,  # TP 2 (steps 3, 4), FP 1 (step 2), FN 1 (step 8)
        "MB": 0.0,  # the one MB step missed, one spurious MB
        "macro": (0.5 + 2 / 3 + 0.0) / 3,
    }
    assert typed_f1(gold, pred).model_dump() == pytest.approx(expected)
    assert expected["macro"] == pytest.approx(0.3889, abs=1e-4)
    # no-gap never counts as a class: a perfect checker on gold without MB still loses MB's third.
    assert typed_f1(["CC", "IE", N], ["CC", "IE", N]).macro == pytest.approx(2 / 3)


def test_a_step_count_mismatch_names_the_question() -> None:
    with pytest.raises(ValueError, match="question 'hotpot-17': 1 predicted labels for 2 gold steps"):
        question("hotpot-17", [G, N], [G], correct=False)


@pytest.mark.parametrize(
    ("variant", "distribution", "degenerate"),
    [
        # §7.3 rows, as fractions (no-gap, IE, CC, MB).
        ("LLM-Strict", (0.276, 0.409, 0.171, 0.144), False),
        ("LLM-Only", (0.409, 0.392, 0.149, 0.050), False),
        ("StepGap", (0.409, 0.381, 0.149, 0.061), False),
        ("Single-LLM-XL", (0.122, 0.878, 0.0, 0.0), True),
        ("NER-Quote", (0.144, 0.740, 0.105, 0.011), True),
        ("IE-heavy with healthy CC/MB", (0.0, 0.72, 0.14, 0.14), False),
    ],
)
def test_degenerate_flag_on_the_spec_distributions(variant: str, distribution: tuple, degenerate: bool) -> None:
    assert is_degenerate(dict(zip(("no-gap", "IE", "CC", "MB"), distribution, strict=True))) is degenerate, variant


def test_report_flags_an_ie_collapse() -> None:
    collapsed = checker_report(benchmark(lambda k, _g: "IE" if k % 8 else N), resamples=10)
    assert collapsed.distribution["IE"] > 0.7 and collapsed.degenerate
    assert not checker_report(benchmark(lambda _k, g: g), resamples=10).degenerate


def test_distributions_are_predicted_and_gold_shares() -> None:
    report = checker_report([question(1, ["CC", "IE", N, N], ["IE", "IE", "IE", N], correct=False)], resamples=10)
    assert report.distribution == {"no-gap": 0.25, "CC": 0.0, "IE": 0.75, "MB": 0.0}
    assert report.gold_distribution == {"no-gap": 0.5, "CC": 0.25, "IE": 0.25, "MB": 0.0}
    assert list(label_distribution([])) == list(GAP_LABELS) and set(label_distribution([]).values()) == {0.0}


def test_optional_extras_are_none_when_absent_and_averaged_when_given() -> None:
    bare = checker_report([question(1, [G], [G], correct=False)], resamples=10)
    assert (bare.answer_f1, bare.support_rate, bare.mean_searches) == (None, None, None)
    questions = [
        question(1, [G], [G], correct=False, answer_f1=0.5, searches=2, answer_supported=True),
        question(2, [G], [G], correct=True, answer_f1=1.0, searches=3, answer_supported=False),
        question(3, [G], [G], correct=True),  # carries none: left out of the means
    ]
    report = checker_report(questions, resamples=10)
    assert (report.answer_f1, report.support_rate, report.mean_searches) == (0.75, 0.5, 2.5)
    assert answer_token_f1("Damien Chazelle", ["Justin Hurwitz", "damien chazelle"]) == 1.0
    assert answer_token_f1("anything", []) == 0.0


def test_report_json_shape() -> None:
    dump = json.loads(json.dumps(checker_report(benchmark(lambda _k, g: g), resamples=10).model_dump(mode="json")))
    assert set(dump) == {
        "n_steps",
        "n_questions",
        "flag_rate",
        "step",
        "question",
        "typed_f1",
        "distribution",
        "gold_distribution",
        "first_gap",
        "degenerate",
        "answer_f1",
        "support_rate",
        "mean_searches",
    }
    assert set(dump["step"]) == {"precision", "recall", "f1", "balanced_accuracy", "kappa", "ci", "counts"}
    assert dump["step"]["ci"]["precision"] == [1.0, 1.0]
    assert dump["step"]["counts"] == {"tp": 107, "fp": 0, "fn": 0, "tn": 74}
    assert set(dump["question"]) == {"precision", "recall", "f1", "ci", "counts", "wrong_rate", "flag_all_f1"}
    assert set(dump["question"]["ci"]) == {"f1"}
    assert set(dump["typed_f1"]) == {"CC", "IE", "MB", "macro"}
    assert list(dump["distribution"]) == ["no-gap", "CC", "IE", "MB"]
    assert set(dump["first_gap"]) == {"CC", "IE", "MB", "n"}
    assert (dump["n_steps"], dump["n_questions"]) == (181, 82)


def test_gap_distribution_plot_writes_a_png(tmp_path) -> None:
    report = checker_report(benchmark(lambda k, g: g if k % 4 else "IE"), resamples=10)
    path = gap_distribution_plot(report.distribution, tmp_path / "plots" / "gaps.png", gold=report.gold_distribution)
    data = path.read_bytes()
    assert path == tmp_path / "plots" / "gaps.png"
    assert len(data) > 1000 and data.startswith(b"\x89PNG\r\n\x1a\n")
