"""RAG-Zeval meta-evaluation against the worked examples of specs/rag-zeval.md §4.1 and §4.2, the published
RAGChecker numbers on the shared release, and the readers' error paths."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from evigraph.agents.rag_zeval.correlation import Correlation, correlation, minmax_normalise, pair_with_annotators
from evigraph.agents.rag_zeval.ragchecker import (
    HumanJudgement,
    SystemScores,
    dataset_family,
    meta_evaluate,
    meta_evaluate_files,
    read_human_labels,
    read_system_scores,
)
from evigraph.agents.rag_zeval.wikieval import exact_score, load_wikieval, pairwise_agreement
from evigraph.errors import ConfigError, InputDataError, MissingDependencyError
from tests.markers import shared_data

RELEASE = shared_data("ragchecker-meta-eval")

# §4.2 worked example
H1 = [2, 1, 0, -1, -2, 1]
H2 = [2, 2, 0, -1, -1, 1]
E_R1 = [0.5, 0.6, 0.8, 1.0, 1.0, 0.25]
E_R2 = [1.0, 0.75, 0.8, 0.5, 0.0, 0.5]


def _close(got: Correlation, pearson: float, spearman: float, kendall: float, n: int) -> None:
    assert got.n == n
    assert (got.pearson, got.spearman, got.kendall) == pytest.approx((pearson, spearman, kendall), abs=5e-7)


def _differences() -> list[float]:
    return [b - a for a, b in zip(E_R1, E_R2, strict=True)]


# -- §4.2 ---------------------------------------------------------------------------------------------------
def test_minmax_matches_the_spec_example() -> None:
    assert _differences() == pytest.approx([0.5, 0.15, 0.0, -0.5, -1.0, 0.25])
    expected = [2.0, 1.066667, 0.666667, -0.666667, -2.0, 1.333333]
    assert minmax_normalise(_differences()) == pytest.approx(expected, abs=5e-7)


def test_correlations_of_the_spec_example_one_annotator() -> None:
    _close(correlation(minmax_normalise(_differences()), H1), 0.984111, 0.985611, 0.966092, 6)


def test_raw_differences_give_identical_coefficients() -> None:
    _close(correlation(_differences(), H1), 0.984111, 0.985611, 0.966092, 6)


def test_second_annotator_duplicates_each_score() -> None:
    system, human = pair_with_annotators(minmax_normalise(_differences()), list(zip(H1, H2, strict=True)))
    assert len(system) == len(human) == 12
    assert human[:4] == [2, 2, 1, 2]
    assert system[0] == system[1]
    _close(correlation(system, human), 0.925768, 0.925933, 0.862582, 12)


def test_meta_evaluate_on_the_spec_example_rows() -> None:
    human = [
        HumanJudgement(instance_id=str(i), dataset="d", annotator=k + 1, labels={"correctness": labels[i]})
        for i in range(6)
        for k, labels in enumerate((H1, H2))
    ]
    system = [
        SystemScores(instance_id=str(i), response1={"correctness": E_R1[i]}, response2={"correctness": E_R2[i]})
        for i in range(6)
    ]
    report = meta_evaluate(human, system)
    assert report.aspects == ("correctness",)
    assert (report.instances, report.judgements) == (6, 12)
    _close(report.correlations["correctness"], 0.925768, 0.925933, 0.862582, 12)
    raw = meta_evaluate(human, system, normalise=False)
    _close(raw.correlations["correctness"], 0.925768, 0.925933, 0.862582, 12)


def test_kendall_is_tau_b_with_ties() -> None:
    # By hand: 4 concordant, 0 discordant, one pair tied only in x, one only in y -> 4 / sqrt(5 * 5).
    assert correlation([1, 2, 2, 3], [1, 2, 3, 3]).kendall == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        ([1.0], [2.0], "at least 2 points"),
        ([], [], "at least 2 points"),
        ([0.5, 0.5, 0.5], [1, 2, 3], "x is constant"),
        ([1, 2, 3], [0, 0, 0], "y is constant"),
        ([1, 2, 3], [1, 2], "x has 3 values but y has 2"),
        ([1, float("nan")], [1, 2], "x[1] is nan"),
    ],
)
def test_correlation_rejects_degenerate_input(x: list[float], y: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        correlation(x, y)


def test_minmax_rejects_constant_and_bad_bounds() -> None:
    with pytest.raises(ValueError, match=r"every value is 0\.3"):
        minmax_normalise([0.3, 0.3])
    with pytest.raises(ValueError, match="low must be below high"):
        minmax_normalise([0, 1], low=1, high=1)
    assert minmax_normalise([0, 0.5, 1], low=0, high=1) == [0, 0.5, 1]


# -- §4.1 ---------------------------------------------------------------------------------------------------
def test_pairwise_agreement_of_the_spec_example() -> None:
    report = pairwise_agreement([(1.0, 0.5), (0.8, 0.8), (0.6, 0.9), (1.0, 0.0), (0.5, 0.5)])
    assert (report.best, report.middle, report.worst, report.n) == (0.8, 0.6, 0.4, 5)
    assert (report.wins, report.ties) == (2, 2)


def test_pairwise_ties_are_exact() -> None:
    # 1/3 and 2/6 tie exactly; as claim counts, Fractions or identically computed floats.
    report = pairwise_agreement([((1, 3), (2, 6)), (Fraction(2, 6), Fraction(1, 3)), (1 / 3, 2 / 6)])
    assert (report.ties, report.best, report.worst, report.middle) == (3, 1.0, 0.0, 0.5)
    # Floats are read as their shortest decimal form: 0.1 + 0.2 is not 0.3.
    assert pairwise_agreement([(0.1 + 0.2, 0.3)]).wins == 1
    assert exact_score(0.8) == Fraction(4, 5)
    assert exact_score((3, 4)) == Fraction(3, 4)


@pytest.mark.parametrize("bad", [True, float("nan"), (3, 2), (1, 0), (-1, 2), (0.5, 1), "0.5"])
def test_exact_score_rejects(bad: Any) -> None:
    with pytest.raises(ValueError):
        exact_score(bad)


def test_pairwise_needs_pairs() -> None:
    with pytest.raises(ValueError, match="at least one pair"):
        pairwise_agreement([])


# -- the shared RAGChecker release -------------------------------------------------------------------------
needs_release = pytest.mark.skipif(
    not (RELEASE / "human_labeled_data.json").is_file(),
    reason=f"RAGChecker meta-evaluation release not found at {RELEASE}",
)


def _x100(value: float) -> float:
    return round(value * 100, 2)


@needs_release
def test_reproduces_ragchecker_published_correlations() -> None:
    report = meta_evaluate_files(RELEASE / "human_labeled_data.json", RELEASE / "baseline_ragchecker.json")
    assert report.aspects == ("correctness", "completeness", "overall")
    assert (report.instances, report.judgements) == (280, 560)
    published = {"correctness": (49.66, 46.95), "completeness": (60.67, 58.11), "overall": (61.93, 60.90)}
    for aspect, (pearson, spearman) in published.items():
        got = report.correlations[aspect]
        assert got.n == 560
        assert (_x100(got.pearson), _x100(got.spearman)) == (pearson, spearman), aspect
    agreement = report.agreement["correctness"]
    assert agreement is not None and agreement.n == 280
    assert (_x100(agreement.pearson), _x100(agreement.spearman)) == (63.67, 59.19)


@needs_release
def test_release_breakdown_by_dataset() -> None:
    human = read_human_labels(RELEASE / "human_labeled_data.json")
    system = read_system_scores(RELEASE / "baseline_ragchecker.json", score_key="ragchecker")
    per_dataset = meta_evaluate(human, system, group_by=lambda d: d).by_group
    assert len(per_dataset) == 10
    assert all(c["correctness"] is not None and c["correctness"].n == 56 for c in per_dataset.values())
    families = meta_evaluate(human, system, group_by=dataset_family).by_group
    assert sorted(families) == ["clapnq", "kiwi", "novelqa", "robustqa"]
    assert families["robustqa"]["correctness"].n == 392  # type: ignore[union-attr]


# -- readers' error paths ----------------------------------------------------------------------------------
def _human_row(instance: int, label: int, dataset: str = "kiwi") -> dict[str, Any]:
    return {
        "instance_id": instance,
        "dataset": dataset,
        "query": "q",
        "gt_answer": "a",
        "model1": {"model_name": "m1", "response": "r1"},
        "model2": {"model_name": "m2", "response": "r2"},
        "correctness_label": label,
        "completeness_label": 0,
        "overall_label": label,
    }


def _system_row(instance: int, first: float, second: float, key: str = "rag_zeval") -> dict[str, Any]:
    return {
        "instance_id": instance,
        "dataset": "kiwi",
        "model1": {"model_name": "m1", key: {"correctness_label": first}},
        "model2": {"model_name": "m2", key: {"correctness_label": second}},
    }


def _write_list(path: Path, rows: list[Any]) -> Path:
    """One row per line after the opening bracket: row i starts on line i + 2."""
    path.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n", encoding="utf-8")
    return path


@pytest.fixture
def small_release() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    human = [_human_row(i, label) for i in range(3) for label in (i - 1, i - 1)]
    system = [_system_row(i, 0.5, 0.25 * (i + 1)) for i in range(3)]
    return human, system


def test_small_release_reports_only_the_scored_aspect(tmp_path: Path, small_release: Any) -> None:
    human, system = small_release
    human_path = _write_list(tmp_path / "human.json", human)
    system_path = _write_list(tmp_path / "ours.json", system)
    report = meta_evaluate_files(human_path, system_path)  # auto-detects the "rag_zeval" block
    assert report.aspects == ("correctness",)
    assert report.correlations["correctness"].n == 6
    assert report.agreement["correctness"] is not None


def test_missing_instance_names_the_file_row_and_field(tmp_path: Path, small_release: Any) -> None:
    human, system = small_release
    human_path = _write_list(tmp_path / "human.json", human)
    system_path = _write_list(tmp_path / "ours.json", system[:2])
    with pytest.raises(InputDataError) as caught:
        meta_evaluate_files(human_path, system_path)
    message = str(caught.value)
    assert message.startswith(f"{human_path}:6: row [4]: field instance_id")
    assert "instance 2 is missing from" in message and "ours.json" in message
    subset = meta_evaluate_files(human_path, system_path, require_all=False)
    assert subset.instances == 2


def test_label_outside_the_scale(tmp_path: Path, small_release: Any) -> None:
    human, _ = small_release
    human[1]["correctness_label"] = 3
    path = _write_list(tmp_path / "human.json", human)
    with pytest.raises(InputDataError, match=r"human\.json:3: row \[1\]: field correctness_label: 3 is not"):
        read_human_labels(path)
    human[1]["correctness_label"] = True
    with pytest.raises(InputDataError, match="field correctness_label: True"):
        read_human_labels(_write_list(path, human))


def test_missing_score_names_the_field(tmp_path: Path, small_release: Any) -> None:
    _, system = small_release
    del system[2]["model2"]["rag_zeval"]["correctness_label"]
    path = _write_list(tmp_path / "ours.json", system)
    with pytest.raises(InputDataError, match=r"ours\.json:4: row \[2\]: field model2\.rag_zeval\.correctness_label"):
        read_system_scores(path)
    system[2]["model2"] = {"model_name": "m2"}
    with pytest.raises(InputDataError, match=r"row \[2\]: field model2\.rag_zeval: missing"):
        read_system_scores(_write_list(path, system))


def test_score_key_detection(tmp_path: Path, small_release: Any) -> None:
    _, system = small_release
    both = copy.deepcopy(system)
    both[0]["model1"]["ragchecker"] = {"correctness_label": 0.1}
    path = _write_list(tmp_path / "both.json", both)
    with pytest.raises(InputDataError, match=r"several: \['rag_zeval', 'ragchecker'\]"):
        read_system_scores(path)
    assert read_system_scores(path, score_key="rag_zeval")[0].response1 == {"correctness": 0.5}
    with pytest.raises(InputDataError, match="found none"):
        read_system_scores(_write_list(tmp_path / "none.json", [_human_row(0, 1)]))


def test_duplicate_and_unlabelled_instances(tmp_path: Path, small_release: Any) -> None:
    human, system = small_release
    path = _write_list(tmp_path / "ours.json", [*system, system[0]])
    with pytest.raises(InputDataError, match=r"row \[3\]: field instance_id: instance 0 again \(first at row \[0\]\)"):
        read_system_scores(path)
    extra = _write_list(tmp_path / "extra.json", [*system, _system_row(9, 0.1, 0.2)])
    with pytest.raises(InputDataError, match=r"extra\.json:5: row \[3\]: field instance_id: instance 9 has no human"):
        meta_evaluate_files(_write_list(tmp_path / "human.json", human), extra)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ('[\n  {"instance_id": 0,\n   "dataset": "kiwi",\n', 4, "not valid JSON"),
        ('[\n {"instance_id": 0}\n {"instance_id": 1}\n]', 3, "expected ',' or ']'"),
        ('[\n {"instance_id": 0},\n]', 3, "not valid JSON"),
        ('[{"instance_id": 0}]\n[]', 1, "extra data"),
        ('{"rows": []}', 1, "expected a JSON list"),
        ("[]", 1, "no rows"),
        ("[1]", 1, "row [0]: expected a JSON object, got int"),
    ],
)
def test_malformed_files_name_the_file(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = tmp_path / "broken_release.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputDataError) as caught:
        read_human_labels(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert problem in str(caught.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such input file"):
        read_system_scores(tmp_path / "absent.json")


# -- WikiEval loader ---------------------------------------------------------------------------------------
def _wikieval_row(i: int, **change: Any) -> dict[str, Any]:
    row = {
        "question": f"question {i}?",
        "context_v1": [f"Passage {i} one.", f"Passage {i} two."],
        "context_v2": ["other"],
        "answer": f"good {i}",
        "poor_answer": f"partial {i}",
        "ungrounded_answer": f"ungrounded {i}",
        "source": f"Page_{i}",
    }
    row.update(change)
    return row


def test_wikieval_jsonl_joins_context_passages(tmp_path: Path) -> None:
    path = tmp_path / "wikieval.jsonl"
    rows = [_wikieval_row(0), _wikieval_row(1, context_v1="A single string context.")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pairs = load_wikieval(path)
    assert [p.id for p in pairs] == ["wikieval-0", "wikieval-1"]
    assert pairs[0].context == "Passage 0 one.\n\nPassage 0 two."
    assert (pairs[0].good, pairs[0].poor) == ("good 0", "ungrounded 0")  # not poor_answer
    assert pairs[1].context == "A single string context."


def test_wikieval_json_list_and_grounded_answer_column(tmp_path: Path) -> None:
    row = _wikieval_row(0, id="w-7")
    row["grounded_answer"] = row.pop("answer")
    pairs = load_wikieval(_write_list(tmp_path / "wikieval.json", [row]))
    assert (pairs[0].id, pairs[0].good) == ("w-7", "good 0")
    poor = load_wikieval(tmp_path / "wikieval.json", poor_field="poor_answer")
    assert poor[0].poor == "partial 0"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"ungrounded_answer": ""}, "field ungrounded_answer: expected a non-empty string"),
        ({"answer": None}, "field answer: expected a non-empty string"),
        ({"context_v1": []}, "field context_v1: empty context"),
        ({"context_v1": [1, 2]}, "field context_v1: expected a string or a list of strings"),
    ],
)
def test_wikieval_bad_row_names_file_line_field(tmp_path: Path, change: dict[str, Any], problem: str) -> None:
    path = tmp_path / "wikieval.jsonl"
    lines = [json.dumps(_wikieval_row(0)), "", json.dumps(_wikieval_row(1, **change))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputDataError) as caught:
        load_wikieval(path)
    assert str(caught.value).startswith(f"{path}:3: row [1]: {problem}")


def test_wikieval_duplicate_id_and_bad_suffix(tmp_path: Path) -> None:
    path = _write_list(tmp_path / "wikieval.json", [_wikieval_row(0, id="x"), _wikieval_row(1, id="x")])
    with pytest.raises(InputDataError, match=r"row \[1\]: field id: duplicate id 'x'"):
        load_wikieval(path)
    other = tmp_path / "wikieval.csv"
    other.write_text("question\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"expected \.json"):
        load_wikieval(other)


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is not None for m in ("pyarrow", "fastparquet")),
    reason="a parquet engine is installed; this checks the message given without one",
)
def test_wikieval_parquet_without_engine_says_convert(tmp_path: Path) -> None:
    path = tmp_path / "train.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(MissingDependencyError, match="convert the file to JSONL"):
        load_wikieval(path)
