"""The synthetic world (seeded facts, balanced claims, paths), Veri-R1's demonstrations there and the rule checker
that gives StepGap's labels to runs in it. Expected labels are written by hand from the rules, per case."""

from __future__ import annotations

import pytest

from evigraph.agents.stepgap.schemas import Trace, TraceStep
from evigraph.agents.veri_r1.world import WorldChecker, demonstration
from evigraph.corpora.world import WorldConfig, build_world, claim_path, make_claims
from evigraph.training.reward_mix import ProcessTerm
from evigraph.trajectory import Evidence

WORLD = build_world(WorldConfig(seed=7, people=12, firms=3, towns=4))
PERSON = WORLD.people[0]
FIRM = WORLD.firm(PERSON.firm)
assert FIRM is not None
OTHER_TOWN = next(t for t in WORLD.towns if t != FIRM.town)
TWO_HOP = f"{PERSON.name} works for a firm based in {FIRM.town}."


def _entry(name: str) -> Evidence:
    doc = next(d for d in WORLD.documents() if d["id"] == name)
    return Evidence(id=doc["id"], text=doc["text"])


def _labels(question: str, steps: list[TraceStep]) -> list[str]:
    checks = WorldChecker(WORLD).check_now(Trace(question=question, steps=steps))
    return [c.label for c in checks.steps]


def test_the_same_seed_gives_the_same_world_and_another_seed_another() -> None:
    assert build_world(WorldConfig(seed=7, people=12, firms=3, towns=4)) == WORLD
    assert build_world(WorldConfig(seed=8, people=12, firms=3, towns=4)) != WORLD
    names = [p.name for p in WORLD.people] + [f.name for f in WORLD.firms] + WORLD.towns
    assert len(set(names)) == len(names)


def test_claims_are_balanced_and_their_gold_follows_the_facts() -> None:
    claims = make_claims(WORLD, WORLD.people, per_person=4, seed=0, prefix="c")
    kinds = [(c.hops, c.label) for c in claims]
    assert {k: kinds.count(k) for k in set(kinds)} == {(1, "SUPPORT"): 12, (1, "REFUTE"): 12, (2, "SUPPORT"): 12,
                                                        (2, "REFUTE"): 12}  # fmt: skip
    for claim in claims:
        person = WORLD.person(claim.path[0])
        assert person is not None
        true = person.town if claim.hops == 1 else WORLD.firm(person.firm).town  # type: ignore[union-attr]
        assert (claim.stated == true) == (claim.label == "SUPPORT")
        assert claim.evidence == claim.path == claim_path(WORLD, claim.claim)


def test_demonstrations_take_the_second_hop_only_when_asked() -> None:
    claim = next(c for c in make_claims(WORLD, [PERSON], per_person=4, seed=0, prefix="c") if c.hops == 2)
    full = demonstration(claim, WORLD)
    assert full[1].endswith(f"<search>{FIRM.name}</search>")
    assert f"Label: {claim.label}\nEvidence: [[{PERSON.name}]], [[{FIRM.name}]]" in full[2]
    lazy = demonstration(claim, WORLD, second_hop=False)
    assert len(lazy) == 2 and "Label: NOT ENOUGH INFO" in lazy[1]


def test_the_full_run_is_gap_free() -> None:
    steps = [
        TraceStep(reasoning=f"Look up {PERSON.name}.", query=PERSON.name, evidence=[_entry(PERSON.name)]),
        TraceStep(reasoning=f"{PERSON.name} works for {FIRM.name}.", query=FIRM.name, evidence=[_entry(FIRM.name)]),
        TraceStep(reasoning=f"{FIRM.name} is based in {FIRM.town}.", answer=TWO_HOP),
    ]
    assert _labels(TWO_HOP, steps) == ["no-gap", "no-gap", "no-gap"]


def test_answering_before_the_second_hop_is_a_missing_bridge_also_as_an_abstention() -> None:
    first = TraceStep(reasoning="", query=PERSON.name, evidence=[_entry(PERSON.name)])
    answered = TraceStep(reasoning=f"{PERSON.name} works for {FIRM.name}.", answer=TWO_HOP)
    abstained = TraceStep(reasoning="x", text="<answer>\nLabel: NOT ENOUGH INFO\nEvidence:\n</answer>")
    assert _labels(TWO_HOP, [first, answered]) == ["no-gap", "MB"]
    assert _labels(TWO_HOP, [first, abstained]) == ["no-gap", "MB"]


def test_off_path_and_repeated_queries_are_irrelevant_evidence() -> None:
    stranger = WORLD.people[1].name
    steps = [
        TraceStep(reasoning="", query=stranger, evidence=[_entry(stranger)]),
        TraceStep(reasoning="", query=PERSON.name, evidence=[_entry(PERSON.name)]),
        TraceStep(reasoning="", query=f"  {PERSON.name.upper()} ", evidence=[_entry(PERSON.name)]),
    ]
    assert _labels(TWO_HOP, steps) == ["IE", "no-gap", "IE"]


def test_a_turn_that_neither_searches_nor_answers_is_irrelevant_evidence() -> None:
    # Left no-gap, every broken turn earned typed_shape's +0.20 and a GRPO run learned to write only broken turns.
    broken = TraceStep(reasoning="", text="<planfur</searchfur</search>")
    first = TraceStep(reasoning="", query=PERSON.name, evidence=[_entry(PERSON.name)])
    assert _labels(TWO_HOP, [broken, broken]) == ["IE", "IE"]
    assert _labels(TWO_HOP, [first, broken]) == ["no-gap", "IE"]


def test_a_think_the_world_contradicts_is_a_contradicted_claim() -> None:
    wrong_firm = next(f.name for f in WORLD.firms if f.name != FIRM.name)
    steps = [
        TraceStep(reasoning=f"{PERSON.name} works for {wrong_firm}.", query=wrong_firm, evidence=[]),
        TraceStep(reasoning=f"{FIRM.name} is based in {OTHER_TOWN}; the claim says {FIRM.town}.", query=None),
    ]
    assert _labels(TWO_HOP, steps) == ["CC", "CC"]


def test_a_process_term_takes_a_judge_or_a_checker_not_both() -> None:
    base = {"name": "gap", "adapter": "veri-r1->stepgap", "em_from": "label"}
    ProcessTerm.model_validate({**base, "checker": "evigraph.agents.veri_r1.world:world_checker"})
    ProcessTerm.model_validate({**base, "judge": "openai:m@http://127.0.0.1:1/v1"})
    for wrong in ({}, {"judge": "openai:m@http://x/v1", "checker": "a:b"}):
        with pytest.raises(ValueError, match="judge"):
            ProcessTerm.model_validate({**base, **wrong})


def test_a_run_whose_search_found_nothing_still_reads_as_a_trace() -> None:
    from evigraph.agents.veri_r1.data import information_entries
    from evigraph.agents.veri_r1.prompts import NO_ENTRIES, information_turn

    # A policy's garbage query finds nothing; the process reward must still read the run (it crashed before).
    assert information_entries(information_turn("", [])) == []
    assert NO_ENTRIES in information_turn("", [])
