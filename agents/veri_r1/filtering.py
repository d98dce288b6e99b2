"""Training-data filtering (spec §6.1): a teacher answers each claim offline and a sample is kept only if
it gets the label right and cites exactly the gold evidence set."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from evigraph.agents.veri_r1.data import ClaimRecord
from evigraph.agents.veri_r1.gold import gold_evidence
from evigraph.agents.veri_r1.labels import label_matches

__all__ = ("keep_record", "offline_context", "with_offline_context")


def keep_record(record: Any) -> bool:
    """Whether a teacher's finished record (``VeriR1Record``) passes the filter: no failure, right label,
    and cited ids equal to the gold set (no missing, no extra)."""
    if record.error is not None or record.output is None or record.gold is None:
        return False
    output, gold = record.output, record.gold
    return label_matches(output.label, gold.label) and set(output.evidence) == gold_evidence(gold, compat=False)


def offline_context(
    gold_entries: Sequence[Any], retrieved: Sequence[Any], *, n_distractors: int = 3, rng: random.Random
) -> list[Any]:
    """Gold entries plus the top ``n_distractors`` retrieved non-gold entries, shuffled (spec §9 #15)."""
    gold_ids = {e.id for e in gold_entries}
    distractors = [e for e in retrieved if e.id not in gold_ids][:n_distractors]
    context = [*gold_entries, *distractors]
    rng.shuffle(context)
    return context


def with_offline_context(claims: Sequence[ClaimRecord], search: Any, *, seed: int = 0) -> list[ClaimRecord]:
    """Give every claim without entries its offline context from ``search`` (a ``BM25Search``).

    Claims whose gold entries the corpus does not hold keep no context and are reported by the caller
    (the filter cannot judge them).
    """
    rng = random.Random(seed)
    completed = []
    for claim in claims:
        if claim.passages or claim.gold is None:
            completed.append(claim)
            continue
        entries = search.lookup(list(claim.gold.evidence))
        if any(entry is None for entry in entries):
            completed.append(claim)
            continue
        retrieved = search.search(claim.claim, 3 + len(entries))
        context = offline_context(entries, retrieved, rng=rng)
        completed.append(claim.model_copy(update={"passages": tuple(context)}))
    return completed
