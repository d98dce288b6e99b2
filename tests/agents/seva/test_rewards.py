"""SEVA's reward against the spec's rubric lines and worked examples (specs/seva.md §3)."""

from __future__ import annotations

import json

import pytest

from evigraph.agents.seva.parsing import label_for_metrics, parse_reply
from evigraph.agents.seva.rewards import (
    RewardWeights,
    alignment_entry_score,
    alignment_score,
    binary_reward,
    break_even_probability,
    calibration,
    chain_score,
    chain_step_score,
    diagnosis_score,
    format_score,
    process_reward,
)
from evigraph.group_norm import mean_std
from evigraph.training.advantages import Rollout, advantages
from evigraph.training.config import load_train_config

A, NA = "Attributable", "Not Attributable"

# §3.3 alignment entries
a1 = {"claim_span": "60% of participants", "source_span": "60% of subjects", "status": "match"}
a2 = {"claim_span": "significantly improved", "source_span": "", "status": "not_found"}
a3 = {"claim_span": "it", "source_span": "x" * 600, "status": "partial"}
a4 = {"claim_span": "", "source_span": "", "status": "match"}
a5 = {"claim_span": "12 countries", "source_span": "NOT_FOUND", "status": "NOT_FOUND"}
a6 = {"claim_span": "ab", "source_span": "8 different nations", "status": "mismatch"}
a7 = "foo"

# §3.4 chain steps
c1 = {"claim_part": "60% of participants", "source_evidence": "60% of subjects", "judgment": "supported",
      "explanation": "percentage matches"}  # fmt: skip
c2 = {**c1, "judgment": "unclear"}
c3 = {"claim_part": "significantly improved", "source_evidence": "", "judgment": "not_supported",
      "explanation": "absent"}  # fmt: skip
c4 = {**c1, "source_evidence": "8"}
c5 = {**c1, "claim_part": ""}
c6 = {"claim_part": "", "source_evidence": "", "judgment": "", "explanation": ""}


@pytest.mark.parametrize(
    ("entry", "score"), [(a1, 1.0), (a2, 0.9), (a3, 0.6), (a4, 0.2), (a5, 1.0), (a6, 0.9), (a7, 0.0)]
)
def test_alignment_entries_section_3_3(entry: object, score: float) -> None:
    assert alignment_entry_score(entry) == pytest.approx(score)


@pytest.mark.parametrize(("entries", "score"), [([a1, a2, a3], 0.833333), ([a4, a7], 0.1), ([], 0.0)])
def test_alignment_lists_section_3_3(entries: list[object], score: float) -> None:
    assert alignment_score(entries) == pytest.approx(score, abs=1e-6)


def test_alignment_missing_or_not_a_list_scores_zero() -> None:
    assert alignment_score(None) == 0.0
    assert alignment_score("none") == 0.0
    assert alignment_score({"claim_span": "x"}) == 0.0


@pytest.mark.parametrize(("step", "score"), [(c1, 1.0), (c2, 0.7), (c3, 0.5), (c4, 0.8), (c5, 0.8), (c6, 0.0)])
def test_chain_steps_section_3_4(step: object, score: float) -> None:
    assert chain_step_score(step) == pytest.approx(score)


@pytest.mark.parametrize(
    ("chain", "score"),
    [([c1], 1.0), ([c3], 0.566667), ([c1, c3], 0.883333), ([c3, c3, c3], 0.7), ([c6], 0.066667),
     ([c2, c4, c5], 0.966667), ([], 0.0)],
)  # fmt: skip
def test_chains_section_3_4(chain: list[object], score: float) -> None:
    assert chain_score(chain) == pytest.approx(score, abs=1e-6)


def test_non_string_fields_count_as_empty() -> None:
    assert alignment_entry_score({"claim_span": 12345, "source_span": ["x"], "status": "match"}) == pytest.approx(0.2)
    assert chain_step_score(
        {"claim_part": None, "source_evidence": 8, "judgment": " Supported ", "explanation": 1}
    ) == (pytest.approx(0.3))


FULL = {"evidence_alignment": [], "reasoning_chain": [], "label": NA, "confidence": 0.5}


@pytest.mark.parametrize(
    ("value", "level"),
    [
        ([1, 2], 0.0),
        ({}, 0.2),
        ({"label": A, "confidence": 0.7}, 0.2),
        ({**FULL, "confidence": "high"}, 0.5),
        ({**FULL, "confidence": 1.5}, 0.5),
        ({**FULL, "label": "maybe"}, 0.5),
        ({**FULL, "evidence_alignment": "none"}, 0.5),
        ({**FULL, "confidence": True}, 0.5),
        ({**FULL, "confidence": "0.6"}, 1.0),
        (FULL, 1.0),
    ],
)
def test_format_levels_section_3_2(value: object, level: float) -> None:
    assert format_score(value) == level


@pytest.mark.parametrize(
    ("label", "gold", "expected"),
    [("Attributable", A, 1), ("entailment", A, 1), ("neutral", A, 0), ("Not_Attributable", NA, 1),
     ("not supported", NA, 1), ("maybe", NA, 0), (True, A, 1), ("  NOT-attributable ", NA, 1), (None, NA, 0),
     ("not  supported", A, 0)],
)  # fmt: skip
def test_label_aliases_section_3_5(label: object, gold: str, expected: int) -> None:
    assert binary_reward({"label": label}, gold) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reply", "gold", "score"),
    [
        ({"label": A}, A, 1.0),
        ({"label": NA, "error_type": "fabrication"}, A, 0.3),
        ({"label": A, "error_type": None}, A, 1.0),
        ({"label": A, "error_type": "N/A"}, A, 1.0),
        ({"label": NA, "error_type": "numerical_exaggeration", "fix_suggestion": "Change 12 to 8."}, NA, 1.0),
        ({"label": NA, "error_type": "hallucination", "fix_suggestion": "Change 12 to 8."}, NA, 0.4),
        ({"label": NA, "error_type": "negation_flip", "fix_suggestion": "fix it"}, NA, 0.6),
        ({"label": NA}, NA, 0.0),
        ({"error_type": "fabrication", "fix_suggestion": "Change 12 to 8."}, NA, 0.0),  # no label: R_d = 0
    ],
)
def test_diagnosis_section_3_6(reply: dict[str, object], gold: str, score: float) -> None:
    assert diagnosis_score(reply, gold) == pytest.approx(score)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("gamma", "correct", "value"), [(0.95, True, 0.1425), (0.0, True, 0.0), (0.7, False, -0.07), (1.0, False, -0.1)]
)
def test_calibration_section_3_7(gamma: float, correct: bool, value: float) -> None:
    assert calibration(gamma, correct) == pytest.approx(value)


def test_calibration_reads_confidence_like_section_3_7() -> None:
    assert process_reward({"label": A, "confidence": "high"}, A).calibration == 0.0
    assert process_reward({"confidence": 0.8}, A).calibration == pytest.approx(-0.08)


def _alignment(claim: str, source: str, status: str = "match") -> dict[str, str]:
    return {"claim_span": claim, "source_span": source, "status": status}


def _step(part: str, evidence: str, judgment: str = "supported") -> dict[str, str]:
    return {"claim_part": part, "source_evidence": evidence, "judgment": judgment,
            "explanation": f"the source states {evidence}"}  # fmt: skip


J1 = {
    "evidence_alignment": [_alignment("founded in 2004", "was founded in 2004"),
                           _alignment("headquartered in San Francisco", "based in San Francisco")],
    "reasoning_chain": [_step("founded in 2004", "was founded in 2004"),
                        _step("headquartered in San Francisco", "based in San Francisco")],
    "label": A, "confidence": 0.95,
}  # fmt: skip
J2 = {
    "evidence_alignment": [_alignment("500 participants", "500 participants"),
                           _alignment("from 12 countries", "from 8 different nations", "mismatch")],
    "reasoning_chain": [_step("500 participants", "500 participants"),
                        _step("12 countries", "8 different nations", "not_supported")],
    "label": NA, "confidence": 0.9, "error_type": "numerical_exaggeration", "fix_suggestion": "Change 12 to 8.",
}  # fmt: skip
J3 = {
    "evidence_alignment": [_alignment("reduce emissions", "lowering greenhouse gas output", "mismatch"),
                           _alignment("by 2030", "by 2030")],
    "reasoning_chain": [_step("reduce emissions", "lowering greenhouse gas output", "not_supported")],
    "label": NA, "confidence": 0.8, "error_type": "scope_inflation",
    "fix_suggestion": "Change emissions to greenhouse gas output.",
}  # fmt: skip
T7 = {
    "evidence_alignment": [a1, a2],
    "reasoning_chain": [c1, c3],
    "label": NA, "confidence": 0.85, "error_type": "scope_inflation", "fix_suggestion": "remove 'significantly'",
}  # fmt: skip

TABLE_3_8 = [
    ("T1", json.dumps(J1), A, (1, 1, 1, 1, 1.0, 0.95), 1.1425),
    ("T2", json.dumps(J2), NA, (1, 1, 1, 1, 1.0, 0.9), 1.135),
    ("T3", json.dumps(J3), A, (1, 1, 1, 0, 0.3, 0.8), 0.665),
    ("T4", '{"label":"Attributable","confidence":0.7}', A, (0.2, 0, 0, 1, 1.0, 0.7), 0.425),
    ("T5", '{"label":"Attributable","confidence":0.7}', NA, (0.2, 0, 0, 0, 0.0, 0.7), -0.05),
    ("T6", '{"label": "Attributable", "confidence": 0.7', A, None, 0.0),
    ("T7", json.dumps(T7), NA, (1, 0.95, 0.883333, 1, 1.0, 0.85), 1.0775),
    ("T7b", json.dumps({**T7, "evidence_alignment": [a1, a2, a3]}), NA, (1, 0.833333, 0.883333, 1, 1.0, 0.85), 1.0425),
    ("T8", json.dumps({**J1, "confidence": 0.7}), NA, (1, 1, 1, 0, 0.0, 0.7), 0.63),
    ("T9", json.dumps({**J1, "label": "entailment", "confidence": "0.6"}), A, (1, 1, 1, 1, 1.0, 0.6), 1.09),
    ("T10", json.dumps({**J2, "error_type": "hallucination", "fix_suggestion": "fix it"}), NA,
     (1, 1, 1, 1, 0.0, 0.9), 0.985),
    ("T11", json.dumps({**J1, "confidence": "high"}), A, (0.5, 1, 1, 1, 1.0, 0), 0.95),
    ("T12", json.dumps({k: v for k, v in J2.items() if k not in {"error_type", "fix_suggestion"}}), A,
     (1, 1, 1, 0, 1.0, 0.9), 0.76),
    ("T13", "{}", A, (0.2, 0, 0, 0, 0, 0), 0.02),
    ("T13-NA", "{}", NA, (0.2, 0, 0, 0, 0, 0), 0.02),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "gold", "parts", "total"), TABLE_3_8, ids=[row[0] for row in TABLE_3_8])
def test_total_reward_table_section_3_8(name: str, text: str, gold: str, parts: tuple | None, total: float) -> None:
    parsed = parse_reply(text)
    reward = process_reward(parsed.value, gold)  # type: ignore[arg-type]
    assert reward.total == pytest.approx(total, abs=1e-6)
    if parts is None:
        assert not reward.parse_ok
        return
    got = (reward.format, reward.alignment, reward.chain, reward.label, reward.diagnosis, reward.confidence)
    assert got == pytest.approx(parts, abs=1e-6)


def test_reward_landscape_section_3_9() -> None:
    # unparseable 0; JSON only 0.02; perfect process + wrong label (R_d = 0) within 0.60-0.70; perfect <= 1.15
    assert process_reward(parse_reply("I think it is attributable.").value, A).total == 0.0
    assert process_reward(parse_reply("[1, 2]").value, A).total == 0.0
    assert process_reward({}, NA).total == pytest.approx(0.02)
    for gamma in (0.0, 0.5, 1.0):
        wrong = process_reward({**J1, "confidence": gamma}, NA).total
        assert 0.60 - 1e-9 <= wrong <= 0.70 + 1e-9
        assert 0.55 <= wrong <= 0.70  # inside the paper's own band as well
        assert 1.0 <= process_reward({**J1, "confidence": gamma}, A).total <= 1.15 + 1e-9
    all_wrong = {"evidence_alignment": [], "reasoning_chain": [], "label": NA, "confidence": 1.0}
    assert 0.0 <= process_reward(all_wrong, A).total <= 0.25


def test_parse_rules_section_2_2() -> None:
    fenced = "```json\n" + json.dumps(J1) + "\n```"
    assert parse_reply(fenced).value == J1
    assert parse_reply("  ```\n{}\n```  ").value == {}
    assert parse_reply("Here it is: " + json.dumps(J1) + " -- done").value == J1
    assert not parse_reply('"just a string"').ok
    assert not parse_reply("").ok
    assert not parse_reply("{" * 100_000).ok  # a hostile nesting depth is a parse failure, not a crash
    assert label_for_metrics('{"label": "Not Attributable", "confidence": 0.7') == NA
    assert label_for_metrics('{"label": "maybe"}') is None


def test_advantage_collapse_numbers_section_3_10() -> None:
    # One step's batch under the shipped seva config (GRPO, G = 8) with the spec's ε: a binary group where all 8
    # agree, a binary group with one success, and the process-reward group of rows T1, T8, T3, T4, T6, T2, T13, T7b
    # of §3.8 as our reward scores them.
    rows = {name: (text, gold) for name, text, gold, _, _ in TABLE_3_8}
    process = [
        process_reward(parse_reply(rows[name][0]).value, rows[name][1]).total  # type: ignore[arg-type]
        for name in ("T1", "T8", "T3", "T4", "T6", "T2", "T13", "T7b")
    ]
    assert process == pytest.approx([1.1425, 0.63, 0.665, 0.425, 0.0, 1.135, 0.02, 1.0425], abs=1e-6)
    assert mean_std(process) == (pytest.approx(0.6325, abs=1e-6), pytest.approx(0.462916, abs=1e-6))
    shipped = load_train_config("seva")
    assert shipped.openrlhf["rollout.n_samples_per_prompt"] == len(process)
    groups = [[0.0] * 8, [1.0] + [0.0] * 7, process]
    rollouts = [Rollout(group=g, outcome=r, action_mask=(0, 1)) for g, rewards in enumerate(groups) for r in rewards]
    result = [a[1] for a in advantages(rollouts, shipped.advantage.model_copy(update={"eps": 1e-6}))]
    assert result[:8] == [0.0] * 8  # σ = 0: every advantage exactly 0 (the collapse)
    assert result[8:16] == pytest.approx([2.4749] + [-0.3536] * 7, abs=1e-4)  # unbiased σ 0.353553
    assert result[16:] == pytest.approx([1.1017, -0.0054, 0.0702, -0.4482, -1.3663, 1.0855, -1.3231, 0.8857], abs=1e-4)


@pytest.mark.parametrize(
    ("process", "weights"),
    [(0.9, (0.128571, 0.385714, 0.385714, 0.05, 0.05)), (0.5, (0.071429, 0.214286, 0.214286, 0.25, 0.25)),
     (0.3, (0.042857, 0.128571, 0.128571, 0.35, 0.35)), (0.7, (0.1, 0.3, 0.3, 0.15, 0.15))],
)  # fmt: skip
def test_weight_splits_section_3_11(process: float, weights: tuple[float, ...]) -> None:
    w = RewardWeights.split(process)
    assert (w.format, w.alignment, w.chain, w.label, w.diagnosis) == pytest.approx(weights, abs=1e-6)
    assert (w.bonus, w.penalty) == (0.15, 0.10)


@pytest.mark.parametrize(("gamma", "p"), [(0.0, 0.5405), (0.5, 0.5280), (0.9, 0.5224)])
def test_break_even_section_3_12(gamma: float, p: float) -> None:
    assert break_even_probability(gamma) == pytest.approx(p, abs=1e-4)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.9])
def test_label_conditional_normalisation_moves_break_even_to_half(gamma: float) -> None:
    assert break_even_probability(gamma, label_normalized=True) == pytest.approx(0.50, abs=0.01)


def test_label_normalisation_keeps_not_attributable_rewards_and_order() -> None:
    for reply in (J2, {**J1, "confidence": 0.7}):
        assert process_reward(reply, NA, label_normalized=True).total == pytest.approx(process_reward(reply, NA).total)
    right = process_reward(J1, A, label_normalized=True).total
    wrong = process_reward(J3, A, label_normalized=True).total
    assert right == pytest.approx(process_reward(J1, A).total)  # the top of the range is shared
    assert wrong < process_reward(J3, A).total < right
