"""SEVA metrics (specs/seva.md §4), the weakness profile and budget allocation of the loop (§2.4), teacher
validation (§2.1) and the data loaders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evigraph.agents.seva.data import load_seva_records
from evigraph.agents.seva.evolve import allocate, refine_records, split_by_strategy, weakness_profile
from evigraph.agents.seva.metrics import error_type_distribution, label_metrics, structure_metrics, zero_variance_share
from evigraph.agents.seva.schemas import SevaGold, SevaOutput
from evigraph.agents.seva.teacher_job import teacher_problems
from evigraph.agents.seva.verdict import read_verdict
from evigraph.errors import InputDataError
from tests.markers import shared_data

A, NA = "Attributable", "Not Attributable"


def test_worked_example_section_4() -> None:
    pairs = [(A, A)] * 4 + [(NA, A)] * 2 + [(A, NA)] + [(NA, NA)] * 3
    m = label_metrics(pairs)  # type: ignore[arg-type]
    assert m.accuracy == pytest.approx(0.7)
    assert m.f1_attributable == pytest.approx(0.727273, abs=1e-6)
    assert m.f1_not_attributable == pytest.approx(0.666667, abs=1e-6)
    assert m.macro_f1 == pytest.approx(0.696970, abs=1e-6)
    assert m.fpr == pytest.approx(1 / 3) and m.fnr == pytest.approx(0.25)
    assert m.confusion[A] == {A: 4, NA: 2, "none": 0}


def test_clearfacts_rates_reproduce_the_reported_f1_section_4() -> None:
    # Table 15's row-normalised rates on a 53.8 % attributable set (n = 1,000 for whole counts).
    for a_to_a, na_to_na, f1 in ((682, 615, 64.86), (641, 746, 68.96)):
        n_a, n_na = 538, 462
        right_a, right_na = round(n_a * a_to_a / 1000), round(n_na * na_to_na / 1000)
        pairs = [(A, A)] * right_a + [(NA, A)] * (n_a - right_a) + [(NA, NA)] * right_na + [(A, NA)] * (n_na - right_na)
        assert 100 * label_metrics(pairs).macro_f1 == pytest.approx(f1, abs=0.1)  # type: ignore[arg-type]


def test_missing_labels_count_as_wrong_and_nobodys_false_positive() -> None:
    m = label_metrics([(None, A), (A, A), (None, NA), (NA, NA)])
    assert m.accuracy == 0.5 and m.fpr == 0.0 and m.fnr == 0.0
    assert m.f1_attributable == pytest.approx(2 / 3) and m.confusion[NA]["none"] == 1


def test_structure_metrics_average_over_replies_that_hold_the_lists() -> None:
    good = json.dumps({"evidence_alignment": [{"claim_span": "abc", "source_span": "abc", "status": "match"}],
                       "reasoning_chain": [], "label": A, "confidence": 0.5})  # fmt: skip
    outputs = [
        read_verdict(good, source="abc"),
        read_verdict('{"label": "Attributable", "confidence": 0.7}', source="abc"),
        read_verdict("nope", source="abc"),
    ]
    s = structure_metrics(outputs)
    assert s.parse_rate == pytest.approx(2 / 3) and s.format_compliance == pytest.approx(1 / 3)
    assert s.alignment_quality == 1.0 and s.chain_quality == 0.0 and s.grounded_share == 1.0


def test_error_type_distribution_counts_na_predictions_only() -> None:
    def out(label: str | None, error: str | None) -> SevaOutput:
        return SevaOutput(raw="", parse_ok=True, label=label, error_type=error)  # type: ignore[arg-type]

    counts = error_type_distribution([out(NA, "fabrication"), out(NA, "hallucination"), out(NA, None),
                                      out(A, "fabrication")])  # fmt: skip
    assert counts["fabrication"] == 1 and counts["other"] == 1 and counts["missing"] == 1
    assert list(counts)[:6] == ["numerical_exaggeration", "negation_flip", "scope_inflation", "temporal_shift",
                                "entity_substitution", "fabrication"]  # fmt: skip


def test_zero_variance_share_section_3_10() -> None:
    assert zero_variance_share([[0.0] * 8, [1.0] + [0.0] * 7, [1.0] * 8, [0.2, 0.5]]) == 0.5


def test_allocation_worked_example_section_2_4() -> None:
    weakness = {"entity_substitution": 0.58, "fabrication": 0.22, "numerical_exaggeration": 0.30,
                "negation_flip": 0.15, "scope_inflation": 0.45, "temporal_shift": 0.40}  # fmt: skip
    assert allocate(210, weakness) == {
        "numerical_exaggeration": 30, "negation_flip": 15, "scope_inflation": 45, "temporal_shift": 40,
        "entity_substitution": 58, "fabrication": 22,
    }  # fmt: skip
    assert pytest.approx(2.64, abs=0.01) == (1 - 0.42) / (1 - 0.78)  # the paper's "~3x"


def test_allocation_largest_remainder_ties_follow_the_taxonomy_and_the_floor() -> None:
    even = allocate(8, dict.fromkeys(["numerical_exaggeration", "negation_flip", "scope_inflation",
                                      "temporal_shift", "entity_substitution", "fabrication"], 1.0))  # fmt: skip
    assert list(even.values()) == [2, 2, 1, 1, 1, 1] and sum(even.values()) == 8
    only_numbers = {k: float(k == "numerical_exaggeration") for k in even}
    floored = allocate(100, only_numbers, floor=0.05)
    assert floored["negation_flip"] == 5 and floored["numerical_exaggeration"] == 75 and sum(floored.values()) == 100
    split = split_by_strategy(allocate(11, {k: 1.0 for k in even}))
    assert split[("entity_substitution", "entity_confusion")] + split[("entity_substitution", "multi_hop_graft")] == 2
    assert split[("temporal_shift", "numerical_perturbation")] == 2


def test_weakness_profile_uses_probes_only_and_round_zero_is_uniform() -> None:
    def out(label: str, error: str | None = None) -> SevaOutput:
        return SevaOutput(raw="", parse_ok=True, label=label, error_type=error, format_score=1.0)  # type: ignore[arg-type]

    round0 = weakness_profile([(out(A), SevaGold(label=A)), (out(NA), SevaGold(label=NA))])
    assert round0.uniform and set(round0.weakness.values()) == {1.0}
    probes = [(out(NA, "fabrication"), SevaGold(label=NA, category="entity_substitution")),
              (out(A), SevaGold(label=NA, category="entity_substitution")),
              (None, SevaGold(label=NA, category="entity_substitution")),
              (out(NA, "fabrication"), SevaGold(label=NA, category="fabrication"))]  # fmt: skip
    profile = weakness_profile(probes)
    assert not profile.uniform and profile.detection["entity_substitution"] == pytest.approx(1 / 3)
    assert profile.weakness["fabrication"] == 0.0 and profile.weakness["negation_flip"] == 1.0
    assert profile.diagnosed["entity_substitution"] == {"fabrication": 1}  # entity swaps diagnosed as fabrication
    assert profile.format_rate == 0.75


def test_refine_adds_each_probes_source_pair_again() -> None:
    from evigraph.agents.seva.data import SevaRecord

    pair = SevaRecord(id="p", claim="It opened in 1932.", source="It opened in 1932.", gold=SevaGold(label=A))
    probe = SevaRecord(id="q", claim="It opened in 1935.", source=pair.source,
                       gold=SevaGold(label=NA, category="temporal_shift"), parent_id="p")  # fmt: skip
    train = refine_records([pair], [probe])
    assert [r.id for r in train] == ["p", "q", "q/pair"] and train[2].claim == pair.claim


VALID = {"evidence_alignment": [{"claim_span": "x", "source_span": "y", "status": "Match"}],
         "reasoning_chain": [{"claim_part": "x", "source_evidence": "y", "judgment": "supported", "explanation": "e"}],
         "label": "Attributable", "confidence": 0.8}  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (VALID, None),
        ({k: v for k, v in VALID.items() if k != "confidence"}, "missing confidence"),
        ({**VALID, "evidence_alignment": [{"status": "partial"}]}, "status"),
        ({**VALID, "reasoning_chain": [{"judgment": "unclear"}]}, "judgment"),
        ({**VALID, "confidence": 1.5}, "confidence"),
        ({**VALID, "confidence": "0.8"}, "confidence"),
        ({**VALID, "label": "Not Attributable"}, "disagrees with the gold label"),
    ],
)
def test_teacher_validation_section_2_1(reply: dict, problem: str | None) -> None:
    _, problems = teacher_problems(json.dumps(reply), A)
    assert (problems == []) if problem is None else any(problem in p for p in problems)
    assert teacher_problems("not json", A)[1][0].startswith("unparseable")


def test_our_records_and_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        json.dumps({"id": "1", "claim": "c", "source": "s", "label": "entailment"}) + "\n"
        + json.dumps({"id": "2", "claim": "c", "source": "s", "label": False, "category": "fabrication"}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    records = load_seva_records(path).records
    assert [r.gold.label for r in records] == [A, NA] and records[1].gold.category == "fabrication"
    path.write_text(json.dumps({"id": "1", "claim": "c", "source": "s", "label": "maybe"}) + "\n", encoding="utf-8")
    with pytest.raises(InputDataError, match=r"pairs\.jsonl:1: field label"):
        load_seva_records(path)
    path.write_text(json.dumps({"id": "1", "claim": "c"}) + "\n", encoding="utf-8")
    with pytest.raises(InputDataError, match=r"pairs\.jsonl:1: missing field 'source'"):
        load_seva_records(path)


def test_shared_wice_and_veri_r1_files_load() -> None:
    wice = shared_data("wice")
    veri = shared_data("veri-r1-claim-verification")
    if not (wice.is_dir() and veri.is_dir()):
        pytest.skip("shared data is not here")
    retrieval = load_seva_records(wice / "data/entailment_retrieval/claim/dev.jsonl")
    assert len(retrieval.records) == 319 and retrieval.skipped == {"WiCE claim without gold sentences": 30}
    oracle = load_seva_records(wice / "code_and_resources/entailment_inputs/oracle_chunks/claim/dev.jsonl")
    assert len(oracle.records) == 1043 and oracle.records[0].id == "dev02986/1"
    offline = load_seva_records(veri / "test_offline.jsonl")
    labels = [r.gold.label for r in offline.records]
    assert (labels.count(A), labels.count(NA)) == (172, 170)
    first = offline.records[0]
    assert first.claim.startswith("London is the largest city") and "River Thames" in first.source
