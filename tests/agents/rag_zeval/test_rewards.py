"""RAG-Zeval's reward components against the worked examples of specs/rag-zeval.md §3 (tables FR, EV, AR, §3.4,
C and the GRPO group), and the parser of §2.2 on hostile and malformed replies."""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evigraph.agents.rag_zeval.parsing import format_problems, read_evaluation, regex_counts, strict_json
from evigraph.agents.rag_zeval.rewards import (
    combined_reward,
    evidence_reward,
    format_reward,
    ranking_accuracy,
    regex_tokens,
    top1_accuracy,
)
from evigraph.group_norm import mean_std
from evigraph.training.advantages import Rollout, advantages
from evigraph.training.config import load_train_config

LETTERS = ("A", "B", "C")


def _claim(supported: bool = True, evidence: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    claim = {
        "claim": "The PS3 cost 499 dollars.",
        "is_supported": supported,
        "grounding_evidence": ["priced at US $499"] if evidence is None else evidence,
        "analysis": "The context states the price.",
    }
    return {**claim, **extra}


def _item(letter: str, *claims: dict[str, Any]) -> dict[str, Any]:
    return {"id": letter, "answer": f"answer {letter}", "atomic_claims": list(claims) or [_claim()]}


FR1 = [_item("A"), _item("B", _claim(), _claim(False, [])), _item("C", _claim(False, []))]


def _fr(text_or_value: Any) -> float:
    text = text_or_value if isinstance(text_or_value, str) else json.dumps(text_or_value)
    value, error = strict_json(text)
    return format_reward((error,) if error else format_problems(value, LETTERS))


def _without_analysis() -> list[dict[str, Any]]:
    broken = copy.deepcopy(FR1)
    del broken[1]["atomic_claims"][0]["analysis"]
    return broken


def _string_label() -> list[dict[str, Any]]:
    broken = copy.deepcopy(FR1)
    broken[0]["atomic_claims"][0]["is_supported"] = "true"
    return broken


@pytest.mark.parametrize(
    ("case", "reply", "expected"),
    [
        ("FR1", FR1, 0.0),
        ("FR2", json.dumps(FR1)[:-1] + ",]", -0.5),
        ("FR3", {item["id"]: item for item in FR1}, -0.5),
        ("FR4", FR1[:2], -0.5),
        ("FR5", [FR1[0], FR1[0], FR1[2]], -0.5),
        ("FR6", _without_analysis(), -0.5),
        ("FR7", [_item("A", _claim(True, [])), FR1[1], FR1[2]], -0.5),
        ("FR8", [_item("A", _claim(False, [])), FR1[1], FR1[2]], 0.0),
        ("FR9", _string_label(), -0.5),
        ("FR10", "```json\n" + json.dumps(FR1, indent=1) + "\n```", 0.0),
    ],
)
def test_format_reward_table_3_1(case: str, reply: Any, expected: float) -> None:
    assert _fr(reply) == expected, case


@pytest.mark.parametrize(
    "reply",
    [
        "Here is my evaluation:\n" + json.dumps(FR1),  # extra text (O4)
        "```json\n" + json.dumps(FR1) + "\n```\n```json\n[]\n```",  # two fences: not one surrounding fence
        json.dumps([_item("A"), _item("B"), _item("C", *[])]).replace(
            '"atomic_claims": [', '"atomic_claims": [], "x": ['
        ),
        json.dumps([_item("A"), _item("B"), {"id": "C", "answer": "c", "atomic_claims": []}]),  # O7: no claims
        json.dumps([_item("A"), _item("B"), _item("D")]),  # a letter that was not shown
        json.dumps([_item("A"), _item("B"), _item("C", _claim(evidence="priced at US $499"))]),  # O3: not a list
        json.dumps([_item("A"), _item("B"), _item("C", "a claim as a bare string")]),
        "",
        "null",
    ],
)
def test_format_gate_refuses_what_the_spec_calls_failures(reply: str) -> None:
    assert _fr(reply) == -0.5


C = (
    "PlayStation 3 had two hardware configurations announced: a 20 GB model and a 60 GB model, priced at US $499 "
    "and US $599. It was released in North America on November 17, 2006."
)
EV1 = (
    "PlayStation 3 had two hardware configurations announced: a 20 GB model and a 60 GB model, priced at US $499 "
    "and US $599."
)
EV2 = "a 20 GB model and a 60 GB model"
EV3 = "It was released in North America on November 17, 2006."
EV4 = "The PS3 had two hardware configurations: a 20 GB model and a 60 GB model, priced at $499 and $599."
EV5 = "playstation 3 had two hardware configurations announced: a 20 GB model"
EV6 = "The console was launched in Europe in March 2007 at a price of 599 euros."
EV7 = "a 20 GB model and a 60 GB model, priced"


def test_the_reference_is_40_tokens_and_the_examples_have_the_stated_lengths() -> None:
    assert len(regex_tokens(C)) == 40
    lengths = [len(regex_tokens(e)) for e in (EV1, EV2, EV3, EV4, EV5, EV6, EV7)]
    assert lengths == [28, 9, 12, 25, 12, 16, 11]


@pytest.mark.parametrize(
    ("evidence", "score"),
    [(EV1, 1.0), (EV2, 0.0), (EV3, 1.0), (EV4, 0.52), (EV5, 0.916667), (EV6, 0.0625), (EV7, 1.0)],
)
def test_evidence_scores_table_3_2(evidence: str, score: float) -> None:
    assert evidence_reward([evidence], C) == pytest.approx(score, abs=1e-6)


@pytest.mark.parametrize(
    ("evidence", "reward"),
    [
        ([EV1, EV2, EV3], 0.666667),
        ([EV4, EV5], 0.718333),
        ([EV2], 0.0),
        ([EV1, EV7], 1.0),
        ([EV6], 0.0625),
        ([], 0.0),
    ],
)
def test_trajectory_evidence_reward_3_2(evidence: list[str], reward: float) -> None:
    assert evidence_reward(evidence, C) == pytest.approx(reward, abs=1e-6)


def test_evidence_tokenizer_is_pluggable() -> None:
    # Characters as tokens: a 9-token evidence string of §3.2's tokenizer is long enough here.
    assert evidence_reward([EV2], C, tokenize=list) == 1.0


EV_AT_MIN = "a 20 GB model and a 60 GB model,"
"""Verbatim in C and exactly 10 tokens (a, 20, GB, model, and, a, 60, GB, model, ","): the §3.2 minimum."""


def test_evidence_exactly_at_the_minimum_length_counts_and_one_token_fewer_scores_zero() -> None:
    # |e| = 10 = MIN_EVIDENCE_TOKENS is not "shorter than" the minimum: LCSubstr 10 / 10 = 1.0. EV2 is the same
    # run one token shorter (9, no comma): below the minimum, 0.
    assert evidence_reward([EV_AT_MIN], C) == 1.0
    assert evidence_reward([EV2], C) == 0.0
    # The same boundary with an explicit minimum: "a 20 GB" is 3 verbatim tokens, "a 20" is 2.
    assert evidence_reward(["a 20 GB"], C, min_tokens=3) == 1.0
    assert evidence_reward(["a 20"], C, min_tokens=3) == 0.0


@pytest.mark.parametrize(
    ("case", "alphas", "scores", "full"),
    [
        ("AR1", [0, -1, -1.4], [1.0, 0.5, 0.0], 1),
        ("AR2", [0, -1, -1.4], [1.0, 1.0, 0.0], 0),
        ("AR3", [0, -1, -1.4], [0.5, 1.0, 0.0], 0),
        ("AR4", [0, -0.5, -1, -1.4], [1.0, 0.75, Fraction(1, 3), 0.0], 1),
        ("AR5", [0, -0.5, -1, -1.4], [1.0, 0.75, 0.0, 0.0], 0),
        ("AR6", [0, -0.5, -1, -1.4], [0.8, 0.6, 0.4, 0.5], 0),
        ("AR7", [0, -0.5], [Fraction(2, 3), 0.5], 1),
    ],
)
def test_ranking_accuracy_table_3_3(case: str, alphas: list[float], scores: list[Any], full: int) -> None:
    assert ranking_accuracy(scores, alphas) == full, case
    # The order the candidates are listed in does not matter, only their alphas.
    assert ranking_accuracy(scores[::-1], alphas[::-1]) == full, case


@pytest.mark.parametrize(
    ("alphas", "scores", "full", "best"),
    [
        ([0, -0.5, -1, -1.4], [1.0, 0.5, 0.5, 0.0], 0, 1),
        ([0, -0.5, -1, -1.4], [1.0, 1.0, 0.5, 0.0], 0, 0),
        ([0, -0.5, -1, -1.4], [0.9, 0.1, 0.2, 0.3], 0, 1),
        ([0, -1, -1.4], [0.5, 0.6, 0.0], 0, 0),
        ([0, -1, -1.4], [1.0, 0.5, 0.0], 1, 1),
        ([0, -0.5, -1, -1.4], [1.0, 0.75, 0.0, 0.0], 0, 1),
    ],
)
def test_simplified_accuracy_3_4(alphas: list[float], scores: list[float], full: int, best: int) -> None:
    assert (ranking_accuracy(scores, alphas), top1_accuracy(scores, alphas)) == (full, best)


def test_exact_fractions_make_equal_scores_tie() -> None:
    assert ranking_accuracy([Fraction(1, 3), Fraction(2, 6)], [0, -1]) == 0


def test_ranking_refuses_mismatched_or_tied_alphas() -> None:
    with pytest.raises(ValueError, match="2 scores for 3"):
        ranking_accuracy([1.0, 0.0], [0, -1, -2])
    with pytest.raises(ValueError, match="distinct"):
        top1_accuracy([1.0, 0.0], [0, 0])


@pytest.mark.parametrize(
    ("case", "r_f", "r_a", "r_e", "r"),
    [
        ("C1", 0.0, 1, 1.0, 1.5),
        ("C2", 0.0, 1, 0.666667, 1.333333),
        ("C3", 0.0, 1, 0.0, 1.0),
        ("C4", 0.0, 0, 0.9, 0.0),
        ("C5", -0.5, 1, 1.0, -0.5),
        ("C6", 0.0, 1, 0.718333, 1.359167),
    ],
)
def test_combined_reward_table_3_5(case: str, r_f: float, r_a: int, r_e: float, r: float) -> None:
    assert combined_reward(r_f, r_a, r_e) == pytest.approx(r, abs=1e-6), case


def test_grpo_group_example_3_5() -> None:
    # The 8 rollouts of one prompt scored by the combined reward (cases C1, C2, C4, C4, C5, C3, C4, C5), then the
    # trainer's advantages under the shipped rag-zeval config (GRPO, 8 samples per prompt) with the spec's ε.
    table = {"C1": (0.0, 1, 1.0), "C2": (0.0, 1, 0.666667), "C3": (0.0, 1, 0.0), "C4": (0.0, 0, 0.9),
             "C5": (-0.5, 1, 1.0)}  # fmt: skip
    group = [combined_reward(*table[case]) for case in ("C1", "C2", "C4", "C4", "C5", "C3", "C4", "C5")]
    assert group == pytest.approx([1.5, 1.333333, 0, 0, -0.5, 1.0, 0, -0.5], abs=1e-6)
    assert mean_std(group) == (pytest.approx(0.354167, abs=1e-6), pytest.approx(0.803946, abs=1e-6))
    shipped = load_train_config("rag-zeval")
    assert shipped.openrlhf["rollout.n_samples_per_prompt"] == len(group)
    config = shipped.advantage.model_copy(update={"eps": 1e-6})
    rollouts = [Rollout(group=0, outcome=r, action_mask=(0, 1, 1)) for r in group]
    result = advantages(rollouts, config)
    expected = [1.4253, 1.2179, -0.4405, -0.4405, -1.0625, 0.8033, -0.4405, -1.0625]
    assert [a[1] for a in result] == pytest.approx(expected, abs=1e-4)
    assert all(a[0] == 0.0 and a[1] == a[2] for a in result)  # the prompt token masked, every action token alike


def test_strict_reading_scores_each_candidate_by_its_letter() -> None:
    output = read_evaluation(json.dumps(FR1), ("B", "C", "A"))
    assert output.parse_mode == "strict" and output.format_ok
    # Candidate 0 was shown as B (one of two claims supported), candidate 1 as C, candidate 2 as A.
    assert [(c.id, c.supported, c.total) for c in output.candidates] == [("B", 1, 2), ("C", 0, 1), ("A", 1, 1)]
    assert output.scores == (0.5, 0.0, 1.0) and output.ranking == (2, 0, 1)


def test_ps3_case_study_scores_1_2() -> None:
    after_rl = [
        _item("A", _claim(False, [])),
        _item("B", _claim(), _claim(), _claim(), _claim(False, [])),
    ]
    output = read_evaluation(json.dumps(after_rl), ("A", "B"))
    assert output.scores == (0.0, 0.75) and output.ranking == (1, 0)


def test_lenient_fallback_counts_labels_per_id_2_2() -> None:
    broken = json.dumps(FR1)[:-1] + ",]"  # trailing comma: strict JSON fails
    assert regex_counts(broken) == {"A": (1, 1), "B": (1, 2), "C": (0, 1)}
    strict = read_evaluation(broken, LETTERS)
    assert strict.parse_mode == "failed" and strict.scores == (0.0, 0.0, 0.0) and not strict.format_ok
    lenient = read_evaluation(broken, LETTERS, lenient=True)
    assert lenient.parse_mode == "lenient" and lenient.scores == (1.0, 0.5, 0.0) and not lenient.format_ok
    assert read_evaluation("no ids at all", LETTERS, lenient=True).parse_mode == "failed"


def test_a_truncated_reply_is_a_parse_failure_even_if_a_prefix_parses() -> None:
    output = read_evaluation(json.dumps(FR1), LETTERS, truncated=True, lenient=True)
    assert output.parse_mode == "failed" and output.scores == (0.0, 0.0, 0.0)


def test_hostile_replies_never_raise() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert read_evaluation(deep, LETTERS, lenient=True).parse_mode == "failed"
    weird = json.dumps([{"id": ["A"], "atomic_claims": "x"}, 5, None, {"id": "A", "atomic_claims": [None, 3]}])
    output = read_evaluation(weird, LETTERS, lenient=True)
    assert output.parse_mode == "strict" and not output.format_ok and output.candidates[0].total == 2


@given(st.text(max_size=300))
def test_any_text_reads_without_raising(text: str) -> None:
    output = read_evaluation(text, LETTERS, lenient=True)
    assert len(output.candidates) == 3 and all(0.0 <= s <= 1.0 for s in output.scores)
