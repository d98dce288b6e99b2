"""The self-evolution loop (specs/seva.md §2.4): Verify → Reflect → Probe → Refine, one round at a time.

- **Verify** runs the agent over the round's records (the evaluation pipeline: resumable ``predictions.jsonl``,
  ``report.json``).
- **Reflect** turns the structured verdicts into a weakness profile: detection accuracy per error category
  (only gold probes carry a category, so round 0 -- before any probe exists -- uses uniform weakness) and the
  confusion table gold category → predicted ``error_type``.
- **Probe** spends a budget ``B`` on new Not-Attributable probes, ``n_k = B·w_k/Σ_j w_j`` by largest remainder
  (ties in taxonomy order; optional floor), split equally between the strategies that serve a category. Each
  probe perturbs an Attributable pair by rule where a rule applies and, with an LLM generator, by LLM where none
  does; every probe passes the rule filters and, with a checker model, the LLM type check.
- **Refine** writes the next training set: the round's records, the accepted probes and the Attributable pair of
  each probe (O14), as records (the next round's Verify input) and in the trainer's prompt format.

Every stage writes its artefact under ``DIR/round-N/``; a rerun skips stages whose artefact exists. The pure
parts (:func:`weakness_profile`, :func:`allocate`, :func:`split_by_strategy`) carry no I/O.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evigraph.agents.seva.data import SevaRecord
from evigraph.agents.seva.perturb import (
    Perturbation,
    Strategy,
    llm_type_check,
    perturb,
    perturb_with_llm,
    probe_problems,
    strategies_for,
)
from evigraph.agents.seva.schemas import ATTRIBUTABLE, ERROR_TYPES, NOT_ATTRIBUTABLE, ErrorType, SevaGold, SevaOutput
from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams

__all__ = (
    "ProbeOutcome",
    "WeaknessProfile",
    "allocate",
    "make_probes",
    "next_round_records",
    "refine_records",
    "split_by_strategy",
    "weakness_profile",
)


class WeaknessProfile(BaseModel):
    """Reflect's output for one round."""

    model_config = ConfigDict(frozen=True)

    uniform: bool
    """No gold probe was verified (round 0): every category gets weakness 1."""
    detection: dict[str, float | None]
    """Per category: share of its gold probes predicted Not Attributable (``None``: no probe)."""
    weakness: dict[str, float]
    """``w_k = 1 − detection`` (1 for a category without probes)."""
    probes: dict[str, int]
    """Gold probes verified per category."""
    diagnosed: dict[str, dict[str, int]]
    """Gold category → predicted ``error_type`` counts over probes predicted Not Attributable (``missing``:
    no type)."""
    format_rate: float
    """Share of verified outputs with R_f = 1."""


def weakness_profile(pairs: Sequence[tuple[SevaOutput | None, SevaGold]]) -> WeaknessProfile:
    """The weakness profile of verified ``(output, gold)`` pairs (a failed run's output is ``None``)."""
    probes: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    diagnosed: dict[str, Counter[str]] = {k: Counter() for k in ERROR_TYPES}
    for output, gold in pairs:
        if gold.category is None:
            continue
        probes[gold.category] += 1
        if output is not None and output.label == NOT_ATTRIBUTABLE:
            hits[gold.category] += 1
            diagnosed[gold.category][output.error_type or "missing"] += 1
    detection = {k: (hits[k] / probes[k] if probes[k] else None) for k in ERROR_TYPES}
    formatted = [o is not None and o.parse_ok and o.format_score == 1.0 for o, _ in pairs]
    return WeaknessProfile(
        uniform=not probes,
        detection=detection,
        weakness={k: 1.0 if d is None else 1.0 - d for k, d in detection.items()},
        probes={k: probes[k] for k in ERROR_TYPES},
        diagnosed={k: dict(v) for k, v in diagnosed.items()},
        format_rate=sum(formatted) / len(formatted) if formatted else 0.0,
    )


def _largest_remainder(total: int, weights: Mapping[str, float], order: Sequence[str]) -> dict[str, int]:
    """``total`` split in proportion to ``weights`` (largest remainder; ties by ``order``). All-zero weights
    split evenly."""
    mass = sum(weights[k] for k in order)
    shares = {k: total * (weights[k] / mass if mass > 0 else 1 / len(order)) for k in order}
    counts = {k: int(shares[k] + 1e-9) for k in order}
    left = total - sum(counts.values())
    ranked = sorted(order, key=lambda k: (-(shares[k] - counts[k]), order.index(k)))
    for k in ranked[:left]:
        counts[k] += 1
    return counts


def allocate(budget: int, weakness: Mapping[str, float], *, floor: float = 0.0) -> dict[ErrorType, int]:
    """Probe budget per error category (O13): proportional to weakness by largest remainder, ties in taxonomy
    order; ``floor`` (a share of ``budget``, e.g. 0.05) is first given to every category."""
    if budget < 0 or not 0.0 <= floor * len(ERROR_TYPES) <= 1.0:
        raise ValueError(f"need budget >= 0 and 0 <= floor <= 1/{len(ERROR_TYPES)}, got {budget}, {floor}")
    base = int(budget * floor)
    rest = _largest_remainder(budget - base * len(ERROR_TYPES), weakness, ERROR_TYPES)
    return {k: base + rest[k] for k in ERROR_TYPES}  # type: ignore[misc]


def split_by_strategy(allocation: Mapping[str, int]) -> dict[tuple[ErrorType, Strategy], int]:
    """Each category's budget split equally between the strategies that serve it (remainder to the first)."""
    split: dict[tuple[ErrorType, Strategy], int] = {}
    for category in ERROR_TYPES:
        strategies = strategies_for(category)
        shares = _largest_remainder(allocation.get(category, 0), dict.fromkeys(strategies, 1.0), strategies)
        for strategy in strategies:
            split[(category, strategy)] = shares[strategy]
    return split


class ProbeOutcome(BaseModel):
    """One attempted probe: the perturbation, and the filter's verdict."""

    parent_id: str
    category: str
    strategy: str
    perturbation: Perturbation | None = None
    problems: list[str] = Field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return self.perturbation is not None and not self.problems


async def _one_probe(
    pair: SevaRecord,
    category: ErrorType,
    strategy: Strategy,
    *,
    rng: random.Random,
    donors: Sequence[str],
    generator: Generator | None,
    checker: Generator | None,
    params: SamplingParams,
) -> ProbeOutcome:
    outcome = ProbeOutcome(parent_id=pair.id, category=category, strategy=strategy)
    perturbation = None
    for _ in range(4):  # a strategy serving two categories (numbers, dates) may land on the other one first
        candidate = perturb(pair.claim, pair.source, strategy, rng=rng, donors=donors)
        if candidate is not None and candidate.category == category:
            perturbation = candidate
            break
    if perturbation is None and generator is not None:
        candidate = await perturb_with_llm(generator, pair.claim, pair.source, strategy, params=params)
        perturbation = candidate if candidate is not None and candidate.category == category else None
    if perturbation is None:
        return outcome.model_copy(update={"problems": ["no site for this strategy"]})
    problems = probe_problems(perturbation, pair.source)
    if not problems and checker is not None:
        problems = await llm_type_check(checker, perturbation, pair.source, params=params)
    return outcome.model_copy(update={"perturbation": perturbation, "problems": problems})


async def make_probes(
    pairs: Sequence[SevaRecord],
    allocation: Mapping[str, int],
    *,
    round_index: int,
    seed: int = 0,
    generator: Generator | None = None,
    checker: Generator | None = None,
    params: SamplingParams | None = None,
) -> tuple[list[SevaRecord], list[ProbeOutcome]]:
    """Probes for each (category, strategy) share of ``allocation``, made from the Attributable ``pairs``.
    Returns the accepted probes (as records with their gold category) and every attempt, accepted or not."""
    params = params or SamplingParams(max_new_tokens=256)
    attributable = [p for p in pairs if p.gold is not None and p.gold.label == ATTRIBUTABLE]
    donors = [text for p in pairs for text in (p.claim, p.source)]
    probes: list[SevaRecord] = []
    attempts: list[ProbeOutcome] = []
    for (category, strategy), wanted in split_by_strategy(allocation).items():
        rng = random.Random(f"{seed}/{round_index}/{strategy}/{category}")
        order = list(attributable)
        rng.shuffle(order)
        made = 0
        for pair in order:
            if made == wanted:
                break
            outcome = await _one_probe(
                pair, category, strategy, rng=rng, donors=donors, generator=generator, checker=checker, params=params
            )
            attempts.append(outcome)
            if outcome.accepted and outcome.perturbation is not None:
                probes.append(
                    SevaRecord(
                        id=f"probe-r{round_index}-{strategy}-{made}-{pair.id}",
                        claim=outcome.perturbation.claim,
                        source=pair.source,
                        gold=SevaGold(label=NOT_ATTRIBUTABLE, category=category),
                        parent_id=pair.id,
                        strategy=strategy,
                    )
                )
                made += 1
    return probes, attempts


def refine_records(records: Sequence[SevaRecord], probes: Sequence[SevaRecord]) -> list[SevaRecord]:
    """The next training set (O14): the round's records, the accepted probes, and for each probe its
    Attributable pair once more (id ``<probe id>/pair``), so the added Not-Attributable probes do not tilt the
    classes. The next round verifies ``records + probes`` (:func:`next_round_records`)."""
    by_id = {r.id: r for r in records}
    out = [*records, *probes]
    for probe in probes:
        parent = by_id.get(probe.parent_id or "")
        if parent is not None:
            out.append(parent.model_copy(update={"id": f"{probe.id}/pair"}))
    return out


def next_round_records(records: Sequence[SevaRecord], probes: Sequence[SevaRecord]) -> list[SevaRecord]:
    """What the next round verifies: this round's records and its probes (each once)."""
    seen = {r.id for r in records}
    return [*records, *(p for p in probes if p.id not in seen)]


def write_json(path: Path, value: Any) -> None:
    from evigraph.files import atomic_write

    atomic_write(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")
