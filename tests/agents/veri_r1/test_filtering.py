"""Filter context (spec §9 #15) and the keep rule (spec §6.1)."""

from __future__ import annotations

import random

from evigraph.agents.veri_r1.data import ClaimRecord
from evigraph.agents.veri_r1.evaluation import VeriR1Record
from evigraph.agents.veri_r1.filtering import keep_record, offline_context, with_offline_context
from evigraph.agents.veri_r1.gold import GoldRecord
from evigraph.agents.veri_r1.schemas import VeriR1Output
from evigraph.trajectory import Evidence


class LookupSearch:
    def __init__(self) -> None:
        self.entries = {i: Evidence(id=i, text=f"text of {i}") for i in ("A", "B", "C", "D", "E")}

    def lookup(self, ids):
        return [self.entries.get(i) for i in ids]

    def search(self, query: str, k: int = 3):
        return [self.entries[i] for i in ("A", "C", "D", "E")][:k]


def gold(label: str, evidence: tuple[str, ...]) -> GoldRecord:
    return GoldRecord(id="1", label=label, raw_label=label, evidence=evidence)


def test_context_is_gold_plus_top_non_gold_hits_shuffled_reproducibly() -> None:
    entries = LookupSearch().entries
    context = offline_context([entries["A"], entries["B"]], [entries[i] for i in "ACDE"], rng=random.Random(0))
    assert sorted(e.id for e in context) == ["A", "B", "C", "D", "E"]
    again = offline_context([entries["A"], entries["B"]], [entries[i] for i in "ACDE"], rng=random.Random(0))
    assert [e.id for e in context] == [e.id for e in again]


def test_claims_without_entries_get_context_and_unknown_gold_ids_are_left_alone() -> None:
    claims = [
        ClaimRecord(id="1", claim="c", gold=gold("SUPPORT", ("A", "B"))),
        ClaimRecord(id="2", claim="c", gold=gold("SUPPORT", ("Z",))),  # not in the corpus: cannot be judged
        ClaimRecord(id="3", claim="c", gold=gold("SUPPORT", ("A",)), passages=(Evidence(id="Q", text="given"),)),
    ]
    done = with_offline_context(claims, LookupSearch(), seed=1)
    assert sorted(e.id for e in done[0].passages) == ["A", "B", "C", "D", "E"]
    assert done[1].passages == () and done[2].passages == claims[2].passages


def _record(label: str | None, evidence: list[str], target: GoldRecord) -> VeriR1Record:
    output = VeriR1Output(label=label, evidence=evidence, answered=True, format_ok=True)
    return VeriR1Record(id="1", claim="c", response="", output=output, gold=target)


def test_keep_only_exact_label_and_exact_evidence_set() -> None:
    target = gold("REFUTE", ("A", "B"))
    assert keep_record(_record("REFUTE", ["B", "A"], target))
    assert not keep_record(_record("REFUTE", ["A"], target))  # missing evidence
    assert not keep_record(_record("REFUTE", ["A", "B", "C"], target))  # extra evidence
    assert not keep_record(_record("SUPPORT", ["A", "B"], target))
    assert keep_record(_record("NOT ENOUGH INFO", [], gold("NOT ENOUGH INFO", ())))
