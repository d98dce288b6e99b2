"""RLSeek's evaluation adapter: responses in, detections out, span and sample metrics.

- ``evigraph eval rlseek --data D --out DIR``: ``D`` is our JSONL, a RAGTruth folder (test split, good quality)
  or a FaithBench folder/batch file (:func:`~.data.records_from`); reports span P/R/F1 per task and averaged,
  sample P/R/F1/FNR/FPR, the format rate and the quotation statistics.
- ``evigraph score rlseek --pred P --gold G``: any system's spans against gold. Formats (JSONL, one response per
  line, extra fields allowed): gold ``{"id", "task", "spans": [[start, end], ...]}`` (or a record with
  ``gold.spans``, or a RAGTruth/FaithBench folder); prediction ``{"id", "spans": [[start, end], ...]}`` or our
  own eval lines. ``task`` is any non-empty name (``QA``, ``Summary``, another set's own); span metrics are
  reported per task under the name as given. Offsets are half-open characters of the response; overlapping
  spans count once. Every prediction needs a gold line and every gold line a prediction.
- ``evigraph reward rlseek --input F``: our eval lines, or ``{"id", "task", "source", "response", "question"?,
  "completion", "gold": {"spans"}}`` lines of another system's completions.

``eval`` and ``reward`` run the detector's prompt variant, so there ``task`` must be one of ours or RAGTruth's
(:func:`~.schemas.task_variant`, any letter case: ``QA`` runs as ``qa``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from evigraph.agents.rlseek.data import RLSeekRecord, records_from
from evigraph.agents.rlseek.metrics import (
    PRF,
    QuoteStatistics,
    SampleMetrics,
    count_detection,
    count_sample,
    quote_statistics,
    sample_metrics,
    span_metrics,
)
from evigraph.agents.rlseek.prompts import render
from evigraph.agents.rlseek.schemas import RLSeekOutput, Span, TaskName, task_variant
from evigraph.evaluation.adapter import BaseEvaluation, GoldLine, PredictionLine
from evigraph.evaluation.records import load_records, subset
from evigraph.trajectory import Segment, Trajectory

__all__ = ("EVALUATION", "RLSeekEvalReport", "RLSeekEvaluation", "RLSeekGoldLine", "RLSeekPrediction")


class RLSeekGoldLine(GoldLine):
    """One gold line of ``score --gold``."""

    task: TaskName
    """Any name (metrics are reported under it): scoring never runs a prompt variant."""
    spans: tuple[Span, ...] = ()


class RLSeekPrediction(PredictionLine):
    """A prediction to score or reward: ours (``output``/``trajectory``) or another system's (``spans``; for
    ``reward``, ``completion`` with the inputs)."""

    output_model = RLSeekOutput
    answer_fields = ("spans",)
    trajectory_is_ours = False

    spans: tuple[Span, ...] | None = None
    task: TaskName | None = None
    """Read by ``reward`` only (mapped to a prompt variant there)."""
    source: str | dict[str, Any] | None = None
    question: str | None = None

    def fill_from_output(self) -> None:
        if self.spans is None:
            self.spans = tuple((s.start, s.end) for s in self.parsed_output.spans)


class RLSeekEvalReport(BaseModel):
    """Span metrics per task and averaged (§4.1), pooled sample metrics (§4.2) and -- for our own runs -- the
    format rate and quotation statistics (§4.3-4.4)."""

    model_config = ConfigDict(frozen=True)

    n: int
    span: dict[str, PRF]
    sample: SampleMetrics
    format_rate: float | None = None
    """Share of our runs whose final list parsed (``None`` for another system's spans)."""
    quotes: QuoteStatistics | None = None
    reward: dict[str, float] | None = None
    """Mean reward components of our runs that carry them."""


class RLSeekEvaluation(BaseEvaluation):
    record_model = RLSeekRecord
    gold_model = RLSeekGoldLine
    result_model = RLSeekPrediction
    prediction_model = RLSeekPrediction
    headline = ("span", "sample", "format_rate")
    score_needs_every_gold: ClassVar[bool] = True

    def load_records(
        self, path: Path, *, limit: int | None, seed: int | None, unique_ids: bool = True
    ) -> Sequence[RLSeekRecord]:
        return subset(records_from(path, unique_ids=unique_ids), limit=limit, shuffle_seed=seed)

    def graph_input(self, record: RLSeekRecord) -> dict[str, Any]:
        return record.graph_input()

    def gold_of(self, record: RLSeekRecord) -> RLSeekGoldLine | None:
        if record.gold is None:
            return None
        return RLSeekGoldLine(id=record.id, task=record.task, spans=record.gold.spans)

    def read_gold(self, path: Path) -> Mapping[str, RLSeekGoldLine]:
        if path.is_dir() or path.suffix == ".json" or path.name == "response.jsonl":
            lines = [g for r in records_from(path) if (g := self.gold_of(r)) is not None]
        else:
            lines = load_records(path, _gold_line, id_of=lambda g: g.id)
        return {g.id: g for g in lines}

    def report(self, pairs: Sequence[tuple[RLSeekPrediction, RLSeekGoldLine]], options: Any) -> RLSeekEvalReport:
        counts = [_counts(p, g) for p, g in pairs]
        ours = [(p, p.parsed_output) for p, _ in pairs if p.parsed_output is not None or p.trajectory is not None]
        detections = [d for _, d in ours if d is not None]
        traced = [(p.trajectory, p.parsed_output) for p, _ in pairs if p.trajectory is not None and p.parsed_output]
        rewards = [p.rewards for p, _ in pairs if p.rewards]
        return RLSeekEvalReport(
            n=len(pairs),
            span=span_metrics(counts),
            sample=sample_metrics(counts),
            format_rate=sum(d.parse_ok for d in detections) / len(ours) if ours else None,
            quotes=_quote_statistics(traced) if traced else None,
            reward={k: sum(r.get(k, 0.0) for r in rewards) / len(rewards) for k in rewards[0]} if rewards else None,
        )

    def trajectory_of(self, prediction: RLSeekPrediction) -> Trajectory:
        if prediction.trajectory is not None:
            return prediction.trajectory
        missing = [k for k in ("task", "source", "completion") if getattr(prediction, k) is None]
        if missing or prediction.response is None:
            raise ValueError(
                f"prediction {prediction.id!r} has no trajectory; a reward input line needs task, source, response "
                f"and completion (missing: {', '.join(missing or ['response'])})"
            )
        try:
            variant = task_variant(prediction.task or "")
        except ValueError as error:
            raise ValueError(f"prediction {prediction.id!r}: {error}") from None
        inputs = {
            "task": variant,
            "source": prediction.source,
            "question": prediction.question,
            "response": prediction.response,
        }
        segments = [Segment(origin="policy", text=prediction.completion or "")]
        return Trajectory(id=prediction.id, agent="rlseek", input=inputs, segments=segments)


def _gold_line(line: dict[str, Any]) -> RLSeekGoldLine:
    """A gold line, or a record carrying ``gold.spans``."""
    nested = line.get("gold")
    if isinstance(nested, dict):  # a record (task on the line) or our eval line (task inside its gold)
        line = {"task": line.get("task"), **{k: v for k, v in nested.items() if v is not None}, "id": line.get("id")}
    return RLSeekGoldLine.model_validate(line)


def _counts(prediction: RLSeekPrediction, gold: RLSeekGoldLine) -> Any:
    """Our detection's counts, or another system's spans (flagged when it lists any)."""
    if prediction.parsed_output is not None or prediction.error is not None:
        return count_detection(prediction.parsed_output, gold.spans, gold.task)
    spans = prediction.spans or ()
    return count_sample(spans, gold.spans, gold.task, flagged=bool(spans))


def _quote_statistics(runs: Sequence[tuple[Trajectory, RLSeekOutput]]) -> QuoteStatistics:
    sources, completions = [], []
    for trajectory, _ in runs:
        inputs = trajectory.input
        sources.append(render(inputs["task"], inputs["source"], inputs["response"], inputs.get("question")).source)
        policy = [s.text for s in trajectory.segments if s.origin == "policy"]
        completions.append(policy[-1] if policy else "")
    return quote_statistics([d for _, d in runs], sources, completions)


EVALUATION = RLSeekEvaluation()
