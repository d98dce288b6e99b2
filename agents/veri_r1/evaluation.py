"""Veri-R1 evaluation glue: one stored record per claim, predictions from any system's records, the report
and its plots. The generic machinery (resumable runner, input validation, plot drawing) is
:mod:`evigraph.evaluation`; this module only knows Veri-R1's fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.agents.veri_r1.data import ClaimRecord
from evigraph.agents.veri_r1.gold import GoldRecord
from evigraph.agents.veri_r1.labels import GOLD_LABELS, LABELS
from evigraph.agents.veri_r1.metrics import (
    InstanceScore,
    Prediction,
    VeriR1Report,
    aggregate,
    prediction_from_response,
    score_instance,
)
from evigraph.agents.veri_r1.schemas import VeriR1Output
from evigraph.graphs.veri_r1 import flat_response
from evigraph.trajectory import Trajectory, TrajectoryError

__all__ = (
    "PredictionRecord",
    "VeriR1Record",
    "prediction_of",
    "read_predictions",
    "run_claim",
    "run_report",
    "score_predictions",
    "write_plots",
)


class VeriR1Record(BaseModel):
    """One finished claim as ``evigraph eval`` stores it (``predictions.jsonl``)."""

    id: str
    claim: str
    response: str
    """Policy and environment text after the prompt, as other systems' records store it."""
    output: VeriR1Output | None = None
    gold: GoldRecord | None = None
    rewards: dict[str, float] = {}
    trajectory: Trajectory | None = None
    error: TrajectoryError | None = None


class PredictionRecord(BaseModel):
    """What ``score``/``reward`` read from a predictions file: ``id`` plus ``response`` (raw model text) or
    the structured ``output`` of our own runs. Other keys are ignored; ids are compared as strings."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    id: str
    response: str | None = None
    output: VeriR1Output | None = None


async def run_claim(graph: Any, record: ClaimRecord) -> VeriR1Record:
    """Run one claim through a compiled Veri-R1 graph (online or offline) and package the result."""
    state: dict[str, Any] = {"claim": record.claim, "id": record.id}
    if record.passages:
        state["evidence"] = list(record.passages)
    if record.gold is not None:
        state["gold"] = {"label": record.gold.label, "evidence": list(record.gold.evidence)}
    final = await graph.ainvoke(state)
    trajectory: Trajectory = final["trajectory"]
    return VeriR1Record(
        id=record.id,
        claim=record.claim,
        response=flat_response(trajectory.segments),
        output=final["output"],
        gold=record.gold,
        rewards={c.type: c.value for c in trajectory.rewards},
        trajectory=trajectory,
        error=trajectory.error,
    )


def prediction_of(record: PredictionRecord, *, compat: bool = False) -> Prediction:
    """The prediction a record makes. Our own records carry the exact transcript's verdict (``output``);
    foreign ones (and every record in ``compat`` mode, as the reference evaluator reads text) are parsed
    from ``response``."""
    if record.output is not None and not compat:
        out = record.output
        return Prediction(
            id=record.id,
            label=out.label,
            evidence=tuple(out.evidence),
            format_ok=out.format_ok,
            retrieved_ids=tuple(out.retrieved_ids),
            confidence=out.confidence,
        )
    if record.response is None:
        raise ValueError("field response: missing (the raw model text to score)")
    return prediction_from_response(record.id, record.response, compat=compat)


def _prediction_record(data: dict[str, Any]) -> PredictionRecord:
    record = PredictionRecord.model_validate(data)
    if record.response is None and record.output is None:
        raise ValueError("field response: missing (the raw model text to score)")
    return record


def read_predictions(path: str | Path) -> list[PredictionRecord]:
    """Every record of a predictions file, validated, with ``file:line`` errors and no duplicate ids (a torn
    last line, from a run still being written, is skipped)."""
    from evigraph.evaluation.records import load_records

    return load_records(path, _prediction_record, id_of=lambda r: r.id, tolerate_truncated_tail=True)


class ScoreResult(BaseModel):
    """The report plus how predictions and gold lined up."""

    report: VeriR1Report
    n_gold: int
    n_missing: int
    """Gold records with no prediction (left out of every metric)."""
    scores: list[InstanceScore]

    def report_json(self) -> dict[str, Any]:
        return {**self.report.model_dump(mode="json"), "n_gold": self.n_gold, "n_missing": self.n_missing}


def score_predictions(
    records: Iterable[PredictionRecord], gold: Mapping[str, GoldRecord], *, compat: bool = False
) -> ScoreResult:
    """Score ``records`` against ``gold`` (keyed by id).

    Raises:
        InputDataError-free ValueError: a prediction id that no gold record has (a mismatched file pair).
    """
    scores = []
    unknown = []
    for record in records:
        if record.id not in gold:
            unknown.append(record.id)
            continue
        scores.append(score_instance(prediction_of(record, compat=compat), gold[record.id], compat=compat))
    if unknown:
        shown = ", ".join(repr(i) for i in unknown[:5])
        raise ValueError(f"{len(unknown)} prediction id(s) have no gold record, e.g. {shown}")
    report = aggregate(scores, mode="compat" if compat else "clean")
    return ScoreResult(report=report, n_gold=len(gold), n_missing=len(gold) - len(scores), scores=scores)


def write_plots(report: VeriR1Report, out_dir: Path) -> list[Path]:
    """``confusion.png``, ``per_class.png`` and (when confidences exist) ``reliability.png``."""
    from evigraph.evaluation.plots import confusion_plot, per_class_bars, reliability_plot

    paths = [
        confusion_plot(
            report.confusion,
            out_dir / "confusion.png",
            title=f"Veri-R1 labels (n={report.n})",
            gold_order=[label for label in GOLD_LABELS if label in report.confusion],
            pred_order=[*LABELS, "NONE"],
        ),
        per_class_bars(
            {label: metrics.model_dump() for label, metrics in report.per_class.items()},
            ["label_accuracy", "verification_accuracy", "joint_accuracy", "evidence_score"],
            out_dir / "per_class.png",
            title="Veri-R1 per gold class",
        ),
    ]
    if report.confidence is not None:
        bins = [(b.lower, b.upper, b.accuracy, b.n) for b in report.confidence.bins if b.accuracy is not None]
        paths.append(reliability_plot(bins, out_dir / "reliability.png", title="Label-token confidence"))
    return paths


def gold_of(records: Sequence[ClaimRecord]) -> dict[str, GoldRecord]:
    return {r.id: r.gold for r in records if r.gold is not None}


def run_report(
    records: Sequence[VeriR1Record], gold: Mapping[str, GoldRecord], summary: BaseModel, *, compat: bool = False
) -> tuple[dict[str, Any], VeriR1Report | None]:
    """``report.json`` of an eval run: the run summary, failed runs, and the metrics when gold is known."""
    report: dict[str, Any] = {
        "run": summary.model_dump(mode="json"),
        "n_failed_runs": sum(r.error is not None for r in records),
    }
    if not gold:
        return report, None
    predictions = [PredictionRecord(id=r.id, response=r.response, output=r.output) for r in records]
    result = score_predictions(predictions, gold, compat=compat)
    return {**report, **result.report_json()}, result.report
