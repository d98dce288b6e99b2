"""The evaluation adapter: data lines ``{"id", "claim", "passage", "supported"}``, accuracy and format rate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from evigraph.evaluation.adapter import BaseEvaluation, NoOptions, RunRecord
from passage_check.rewards import correct
from passage_check.schemas import Gold, PassageCheckOutput
from passage_check.verdict import read_verdict

__all__ = ("EVALUATION", "PassageCheckEvaluation", "Record", "Report")


class Record(BaseModel):
    """One input line; ``supported`` is the gold answer, when known."""

    id: str
    claim: str
    passage: str
    supported: bool | None = None


class Report(BaseModel):
    n: int
    accuracy: float
    format_rate: float


class PassageCheckEvaluation(BaseEvaluation):
    record_model = Record
    gold_model = Gold
    headline = ("accuracy", "format_rate")

    def graph_input(self, record: Record) -> dict[str, Any]:
        state: dict[str, Any] = {"id": record.id, "claim": record.claim, "passage": record.passage}
        if record.supported is not None:
            state["gold"] = {"supported": record.supported}
        return state

    def gold_of(self, record: Record) -> Gold | None:
        return None if record.supported is None else Gold(id=record.id, supported=record.supported)

    def report(self, pairs: Sequence[tuple[RunRecord, Gold]], options: NoOptions) -> Report:
        outputs = [_output(prediction) for prediction, _ in pairs]
        n = len(pairs)
        hits = sum(correct(o.verdict, gold.supported) for o, (_, gold) in zip(outputs, pairs, strict=True))
        formatted = sum(o.well_formed for o in outputs)
        return Report(n=n, accuracy=hits / n if n else 0.0, format_rate=formatted / n if n else 0.0)


def _output(prediction: RunRecord) -> PassageCheckOutput:
    """Our runs' stored output, or a foreign record's raw ``response`` read as the policy's turn."""
    if prediction.output is not None:
        return PassageCheckOutput.model_validate(prediction.output)
    return read_verdict(prediction.response or "")


EVALUATION = PassageCheckEvaluation()
