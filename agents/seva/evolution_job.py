"""One round of the self-evolution loop on disk: each stage's artefact under ``DIR/round-N/``, skipped on a rerun
when it exists (Verify itself resumes record by record).

``round-N/verify/`` (predictions.jsonl, report.json, plots) → ``round-N/reflect.json`` (weakness profile and
allocation) → ``round-N/probes.jsonl`` (accepted probes, our record format) and ``round-N/attempts.jsonl``
(every attempt with its filter verdict) → ``round-N/train.jsonl`` (the trainer's prompt format),
``round-N/train_records.jsonl`` and ``round-N/next.jsonl`` (what round N+1 verifies).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.agents.seva.data import SevaRecord, load_seva_records
from evigraph.agents.seva.evaluation import EVALUATION, SevaPrediction
from evigraph.agents.seva.evolve import (
    WeaknessProfile,
    allocate,
    make_probes,
    next_round_records,
    refine_records,
    weakness_profile,
)
from evigraph.agents.seva.probe_entities import default_entity_finder
from evigraph.evaluation.adapter import NoOptions
from evigraph.evaluation.pipeline import evaluate
from evigraph.evaluation.records import load_records
from evigraph.event_loop import run_sync
from evigraph.files import atomic_write, atomic_writer
from evigraph.generators.base import Generator
from evigraph.training.data import write_prompt_dataset

__all__ = ("RoundSettings", "RoundSummary", "run_round")


class RoundSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    budget: int
    floor: float = 0.0
    seed: int = 0
    concurrency: int = 4


class RoundSummary(BaseModel):
    round: int
    n: int
    macro_f1: float | None
    format_rate: float | None
    profile: WeaknessProfile
    allocation: dict[str, int]
    probes_accepted: int
    probes_attempted: int
    entity_finder: str | None = None
    """What found the entity probes' names (``spacy:<pipeline>`` or ``capitalised-chunks``); ``None`` when the
    probes were read back from an earlier run."""
    train_size: int
    wall_s: float


def _write_records(path: Path, records: Sequence[SevaRecord]) -> None:
    with atomic_writer(path) as out:
        for record in records:
            out.write(json.dumps(record.line(), ensure_ascii=False) + "\n")


def _verified_pairs(verify_dir: Path, records: Sequence[SevaRecord]) -> list[tuple[Any, Any]]:
    predictions = {
        p.id: p
        for p in load_records(verify_dir / "predictions.jsonl", SevaPrediction.model_validate, id_of=lambda p: p.id)
    }
    return [(predictions[r.id].parsed_output if r.id in predictions else None, r.gold) for r in records if r.gold]


def run_round(
    index: int,
    records: Sequence[SevaRecord],
    out: Path,
    settings: RoundSettings,
    *,
    graph: Any,
    context: Any,
    run_config: dict[str, Any],
    probe_writer: Generator | None = None,
    checker: Generator | None = None,
) -> RoundSummary:
    """Verify → Reflect → Probe → Refine for one round (see the module docstring)."""
    started = time.time()
    folder = out / f"round-{index}"
    verify_dir = folder / "verify"
    report = evaluate(
        EVALUATION, graph, records, out_dir=verify_dir, run_config=run_config, options=NoOptions(),
        concurrency=settings.concurrency, description=f"seva verify round {index}", context=context,
    )  # fmt: skip

    reflect_path = folder / "reflect.json"
    if reflect_path.exists():
        reflected = json.loads(reflect_path.read_text(encoding="utf-8"))
        profile = WeaknessProfile.model_validate(reflected["profile"])
        allocation = reflected["allocation"]
    else:
        profile = weakness_profile(_verified_pairs(verify_dir, records))
        allocation = allocate(settings.budget, profile.weakness, floor=settings.floor)
        atomic_write(reflect_path, json.dumps({"profile": profile.model_dump(), "allocation": allocation}, indent=2))

    probes_path, attempts_path = folder / "probes.jsonl", folder / "attempts.jsonl"
    entity_finder = None
    if probes_path.exists() and attempts_path.exists():
        probes = load_seva_records(probes_path).records if probes_path.stat().st_size else []
        attempted = sum(1 for line in attempts_path.read_text(encoding="utf-8").splitlines() if line.strip())
    else:
        entity_finder = default_entity_finder().name
        probes, attempts = run_sync(
            lambda: make_probes(records, allocation, round_index=index, seed=settings.seed, generator=probe_writer,
                        checker=checker)
        )  # fmt: skip
        with atomic_writer(attempts_path) as handle:
            for attempt in attempts:
                handle.write(attempt.model_dump_json() + "\n")
        _write_records(probes_path, probes)
        attempted = len(attempts)

    train = refine_records(records, probes)
    _write_records(folder / "train_records.jsonl", train)
    write_prompt_dataset("seva", (r.graph_input() for r in train), folder / "train.jsonl")
    _write_records(folder / "next.jsonl", next_round_records(records, probes))
    return RoundSummary(
        round=index,
        n=len(records),
        macro_f1=report.get("macro_f1"),
        format_rate=report.get("format_rate"),
        profile=profile,
        allocation=dict(allocation),
        probes_accepted=len(probes),
        probes_attempted=attempted,
        entity_finder=entity_finder,
        train_size=len(train),
        wall_s=time.time() - started,
    )
