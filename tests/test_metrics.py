"""The shared metrics toolkit against textbook values, its empty-denominator conventions and the bootstrap."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evigraph.metrics import (
    BinaryCounts,
    accuracy,
    balanced_accuracy,
    binary_counts,
    bootstrap_ci,
    bootstrap_cis,
    cohen_kappa,
    confusion,
    f1,
    false_negative_rate,
    false_positive_rate,
    harmonic_f1,
    macro_f1,
    mean,
    one_vs_rest,
    per_class_f1,
    precision,
    ratio,
    recall,
)

# Wikipedia, "Sensitivity and specificity", worked example: 30 diseased (20 detected), 2000 healthy (180 flagged).
SCREENING = BinaryCounts(tp=20, fp=180, fn=10, tn=1820)


def test_rates_of_the_screening_example() -> None:
    assert precision(SCREENING) == pytest.approx(0.1)
    assert recall(SCREENING) == pytest.approx(2 / 3)
    assert false_positive_rate(SCREENING) == pytest.approx(0.09)  # 1 − specificity 0.91
    assert false_negative_rate(SCREENING) == pytest.approx(1 / 3)
    assert f1(SCREENING) == pytest.approx(40 / 230)
    assert harmonic_f1(precision(SCREENING), recall(SCREENING)) == pytest.approx(f1(SCREENING))
    assert balanced_accuracy(SCREENING) == pytest.approx((2 / 3 + 0.91) / 2)


def test_empty_denominators_score_zero() -> None:
    nothing = BinaryCounts(tp=0, fp=0, fn=0, tn=0)
    assert (precision(nothing), recall(nothing), f1(nothing), balanced_accuracy(nothing)) == (0.0, 0.0, 0.0, 0.0)
    assert (false_positive_rate(nothing), false_negative_rate(nothing)) == (0.0, 0.0)
    missed = BinaryCounts(tp=0, fp=3, fn=2, tn=1)
    assert (precision(missed), recall(missed), f1(missed)) == (0.0, 0.0, 0.0)
    assert harmonic_f1(0.0, 0.0) == 0.0
    assert (ratio(1, 0), mean([]), mean(iter([2, 4]))) == (0.0, 0.0, 3.0)
    assert cohen_kappa([], []) == 0.0


def test_binary_counts_and_length_mismatch() -> None:
    assert binary_counts([True, True, False], [True, False, True]) == BinaryCounts(tp=1, fp=1, fn=1, tn=0)
    with pytest.raises(ValueError, match="1 predictions for 2 gold items"):
        binary_counts([True, False], [True])


def test_balanced_accuracy_of_scikit_learns_example() -> None:
    # scikit-learn's balanced_accuracy_score docs: y_true [0,1,0,0,1,0], y_pred [0,1,0,0,0,1] → 0.625.
    counts = binary_counts([bool(y) for y in (0, 1, 0, 0, 1, 0)], [bool(y) for y in (0, 1, 0, 0, 0, 1)])
    assert balanced_accuracy(counts) == pytest.approx(0.625)
    # Only one class in the gold: its recall alone (TNR here).
    assert balanced_accuracy(BinaryCounts(tp=0, fp=1, fn=0, tn=3)) == 0.75


def test_kappa_of_the_textbook_two_by_two_table() -> None:
    # Wikipedia, "Cohen's kappa": 50 items, both yes 20, A yes/B no 5, A no/B yes 10, both no 15.
    # p_o = 35/50 = 0.7; p_e = 0.5·0.6 + 0.5·0.4 = 0.5; κ = (0.7 − 0.5)/(1 − 0.5) = 0.4.
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(b, a) == pytest.approx(0.4)  # symmetric
    assert cohen_kappa(a, a) == 1.0
    assert cohen_kappa(["no"] * 3, ["no"] * 3) == 1.0  # p_e = 1 with full agreement
    assert cohen_kappa(["yes", "no"], ["no", "yes"]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="3 labels from the second rater for 2"):
        cohen_kappa(["a", "b"], ["a", "b", "c"])


def test_per_class_and_macro_f1_of_scikit_learns_example() -> None:
    # scikit-learn's f1_score docs: y_true [0,1,2,0,1,2], y_pred [0,2,1,0,0,1] → per class [0.8, 0, 0], macro 0.267.
    matrix = confusion(list("012012"), list("021001"))
    per_class = per_class_f1(matrix, ["0", "1", "2"])
    assert per_class == pytest.approx({"0": 0.8, "1": 0.0, "2": 0.0})
    assert macro_f1(per_class) == pytest.approx(0.8 / 3)
    assert accuracy(matrix) == pytest.approx(2 / 6)
    # A fixed class nobody used still counts in the macro average.
    assert macro_f1(per_class_f1(confusion(["a"], ["a"]), ["a", "b"])) == 0.5


def test_confusion_rows_columns_and_missing_predictions() -> None:
    matrix = confusion(["A", "B", "A", "C"], ["A", None, "B", "A"], rows=["A", "B"], columns=["A", "B"], missing="-")
    assert matrix == {"A": {"A": 1, "B": 1}, "B": {"A": 0, "B": 0, "-": 1}, "C": {"A": 1, "B": 0}}
    assert list(matrix) == ["A", "B", "C"] and list(matrix["B"]) == ["A", "B", "-"]
    # A missing label lowers recall of its gold class and is nobody's false positive.
    assert one_vs_rest(matrix, "B") == BinaryCounts(tp=0, fp=1, fn=1, tn=2)
    assert accuracy(matrix) == 0.25
    assert confusion([], []) == {} and accuracy({}) == 0.0
    with pytest.raises(ValueError, match="1 predicted labels for 2 gold labels"):
        confusion(["A", "B"], ["A"])


@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), max_size=40))
def test_one_vs_rest_matches_the_binary_view(pairs: list[tuple[str, str]]) -> None:
    gold, pred = [g for g, _ in pairs], [p for _, p in pairs]
    matrix = confusion(gold, pred)
    for label in "abc":
        counts = one_vs_rest(matrix, label)
        assert counts == binary_counts([g == label for g in gold], [p == label for p in pred])
        assert f1(counts) == pytest.approx(harmonic_f1(precision(counts), recall(counts)))


def test_bootstrap_is_deterministic_per_seed_and_brackets_the_estimate() -> None:
    units = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2, 0.4, 0.8]
    first = bootstrap_ci(units, mean, resamples=500, seed=7)
    assert first == bootstrap_ci(units, mean, resamples=500, seed=7)
    assert first != bootstrap_ci(units, mean, resamples=500, seed=8)
    lo, hi = first
    assert lo < mean(units) < hi
    narrow_lo, narrow_hi = bootstrap_ci(units, mean, resamples=500, seed=7, level=0.5)
    assert lo <= narrow_lo <= narrow_hi <= hi


@pytest.mark.parametrize(
    ("replicates", "level", "expected"),
    [
        # Sorted 0, 10, 20, 30 (n = 4), level 0.5: the 0.25 and 0.75 percentiles sit at positions 0.25 * 3 = 0.75
        # and 0.75 * 3 = 2.25, so 0 + 0.75 * (10 - 0) = 7.5 and 20 + 0.25 * (30 - 20) = 22.5 (nearest rank: 10, 20).
        ([30.0, 0.0, 20.0, 10.0], 0.5, (7.5, 22.5)),
        # Sorted 1, 2, 4 (n = 3), level 0.95: positions 0.025 * 2 = 0.05 and 0.975 * 2 = 1.95, so
        # 1 + 0.05 * (2 - 1) = 1.05 and 2 + 0.95 * (4 - 2) = 3.9 (nearest rank: 1, 4).
        ([4.0, 1.0, 2.0], 0.95, (1.05, 3.9)),
    ],
)
def test_bootstrap_interval_interpolates_between_order_statistics(
    replicates: list[float], level: float, expected: tuple[float, float]
) -> None:
    # The metric ignores its draw and returns the next planned replicate, so the interval's inputs are known.
    planned = iter(replicates)
    lo, hi = bootstrap_ci([0.0], lambda _draw: next(planned), resamples=len(replicates), level=level)
    assert (lo, hi) == pytest.approx(expected)


def test_bootstrap_cis_share_the_resamples() -> None:
    pairs = [(True, True), (True, False), (False, False), (False, True), (True, True), (False, False)]

    def f1_of(draw):
        return f1(binary_counts([g for g, _ in draw], [p for _, p in draw]))

    both = bootstrap_cis(pairs, {"f1": f1_of, "again": f1_of}, resamples=200, seed=1)
    assert both["f1"] == both["again"] == bootstrap_ci(pairs, f1_of, resamples=200, seed=1)
    assert bootstrap_ci([], mean) == (0.0, 0.0)  # no units: the metric of nothing, twice
    with pytest.raises(ValueError, match="resamples must be >= 1, got 0"):
        bootstrap_ci(pairs, f1_of, resamples=0)
    with pytest.raises(ValueError, match="level must be in"):
        bootstrap_ci(pairs, f1_of, level=0.0)
