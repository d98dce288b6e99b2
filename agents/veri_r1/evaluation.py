"""Veri-R1's evaluation adapter (:class:`~evigraph.evaluation.adapter.EvalAdapter`): claim records in, one
stored record per claim, predictions from any system's records, the spec §4 report and its plots.

``evigraph eval|score|reward veri-r1`` run through it; the generic machinery (resumable runner, input
validation, report files, plot drawing) is :mod:`evigraph.evaluation`. This module only knows Veri-R1's fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.agents.veri_r1.data import ClaimRecord, claim_record_from_mapping
from evigraph.agents.veri_r1.format_rules import split_response
from evigraph.agents.veri_r1.gold import GoldRecord, read_gold
from evigraph.agents.veri_r1.labels import GOLD_LABELS, LABELS
from evigraph.agents.veri_r1.metrics import (
    Prediction,
    VeriR1Report,
    aggregate,
    prediction_from_response,
    score_instance,
)
from evigraph.agents.veri_r1.parsing import scored_text
from evigraph.agents.veri_r1.schemas import VeriR1Config, VeriR1Output
from evigraph.errors import ConfigError
from evigraph.evaluation.adapter import BaseEvaluation
from evigraph.evaluation.pipeline import score_report
from evigraph.evaluation.records import load_records
from evigraph.trajectory import Trajectory, TrajectoryError

__all__ = (
    "EVALUATION",
    "PredictionRecord",
    "VeriR1EvalOptions",
    "VeriR1Evaluation",
    "VeriR1Record",
    "prediction_of",
    "read_predictions",
    "run_claim",
    "score_predictions",
    "write_plots",
)


class VeriR1EvalOptions(BaseModel):
    """Options of ``evigraph eval|score veri-r1`` (flags)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    compat: bool = False
    """Score exactly like the reference Veri-R1 evaluator (quirks included)."""


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
    return load_records(path, _prediction_record, id_of=lambda r: r.id, tolerate_truncated_tail=True)


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


class VeriR1Evaluation(BaseEvaluation):
    """The adapter behind ``evigraph eval|score|reward veri-r1``."""

    options = VeriR1EvalOptions
    result_model = VeriR1Record
    prediction_model = PredictionRecord
    headline = ("label_accuracy", "verification_accuracy", "joint_accuracy", "evidence_score", "format_rate")

    def load_records(
        self, path: Path, *, limit: int | None, seed: int | None, unique_ids: bool = True
    ) -> list[ClaimRecord]:
        """Shared eval files as they are, or ``{id, claim, ...}`` lines (:mod:`.data`)."""
        return load_records(
            path, claim_record_from_mapping, id_of=lambda r: r.id, limit=limit, shuffle_seed=seed, unique_ids=unique_ids
        )

    def check_records(self, records: Sequence[ClaimRecord], config: BaseModel) -> None:
        if isinstance(config, VeriR1Config) and config.offline:
            missing = next((c.id for c in records if not c.passages), None)
            if missing is not None:
                raise ConfigError(f"--offline needs the entries in every record; record {missing!r} has none")

    def graph_input(self, record: ClaimRecord) -> dict[str, Any]:
        state: dict[str, Any] = {"claim": record.claim, "id": record.id}
        if record.passages:
            state["evidence"] = list(record.passages)
        if record.gold is not None:
            state["gold"] = {"label": record.gold.label, "evidence": list(record.gold.evidence)}
        return state

    def result(self, record: ClaimRecord, final_state: Mapping[str, Any]) -> VeriR1Record:
        trajectory: Trajectory = final_state["trajectory"]
        return VeriR1Record(
            id=record.id,
            claim=record.claim,
            response=trajectory.response,
            output=final_state["output"],
            gold=record.gold,
            rewards={c.type: c.value for c in trajectory.rewards},
            trajectory=trajectory,
            error=trajectory.error,
        )

    def prediction_of(self, result: VeriR1Record) -> PredictionRecord:
        return PredictionRecord(id=result.id, response=result.response, output=result.output)

    def read_predictions(self, path: Path) -> list[PredictionRecord]:
        return read_predictions(path)

    def read_gold(self, path: Path) -> dict[str, GoldRecord]:
        return read_gold(path)

    def report(self, pairs: Sequence[tuple[PredictionRecord, GoldRecord]], options: VeriR1EvalOptions) -> VeriR1Report:
        compat = options.compat
        scores = [score_instance(prediction_of(p, compat=compat), gold, compat=compat) for p, gold in pairs]
        return aggregate(scores, mode="compat" if compat else "clean")

    def plots(self, report: VeriR1Report, out_dir: Path) -> list[Path]:
        return write_plots(report, out_dir)

    def trajectory_of(self, prediction: PredictionRecord) -> Trajectory:
        """The prediction as a trajectory: its transcript split back into policy and environment segments, and
        our runs' structured output (which the rewards read first)."""
        output = prediction.output.model_dump() if prediction.output is not None else None
        segments = split_response(scored_text(prediction.response or ""))
        return Trajectory(id=prediction.id, agent="veri-r1", input={}, segments=segments, output=output)


EVALUATION = VeriR1Evaluation()


async def run_claim(graph: Any, record: ClaimRecord) -> VeriR1Record:
    """Run one claim through a compiled Veri-R1 graph (online or offline) and package the result."""
    return EVALUATION.result(record, await graph.ainvoke(EVALUATION.graph_input(record)))


def score_predictions(
    records: Sequence[PredictionRecord], gold: Mapping[str, GoldRecord], *, compat: bool = False
) -> VeriR1Report:
    """Score ``records`` against ``gold`` (keyed by id), as ``evigraph score veri-r1`` does.

    Raises:
        ConfigError: a prediction id that no gold record has (a mismatched file pair).
    """
    _, report = score_report(EVALUATION, records, gold, VeriR1EvalOptions(compat=compat))
    assert isinstance(report, VeriR1Report)
    return report
