"""SEVA's evaluation adapter: pairs in, structured verdicts out, label and structure metrics.

- ``evigraph eval seva --data D --out DIR``: ``D`` is any file :mod:`.data` reads (ours, WiCE, Veri-R1);
  reports macro F1, accuracy, per-class F1, FPR/FNR (the paper's sense), the confusion matrix, structural
  quality, the error-type distribution, per-category detection accuracy (generated probes) and mean reward
  components; plots the confusion matrix and the error types.
- ``evigraph score seva --pred P --gold G``: JSONL, one item per line, extra fields allowed. Gold
  ``{"id": str, "label": ...}`` (or any record :mod:`.data` reads); prediction ``{"id": str, "label": ...}``
  where the label goes through the alias table (strings and JSON booleans; anything else, ``null`` included,
  counts as wrong), or our own eval lines. Errors name ``file:line``.
- ``evigraph reward seva --input F``: our eval lines, or ``{"id", "claim", "source", "completion", "gold":
  {"label"}}`` lines of another system's replies.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from evigraph.agents.seva.data import SevaRecord, load_seva_records, release_format
from evigraph.agents.seva.labels import normalize_label
from evigraph.agents.seva.metrics import (
    LabelMetrics,
    StructureMetrics,
    error_type_distribution,
    label_metrics,
    structure_metrics,
)
from evigraph.agents.seva.schemas import ERROR_TYPES, NOT_ATTRIBUTABLE, ErrorType, Label, SevaGold, SevaOutput
from evigraph.evaluation.adapter import BaseEvaluation, GoldLine, PredictionLine
from evigraph.evaluation.plots import confusion_plot, per_class_bars
from evigraph.evaluation.records import subset
from evigraph.trajectory import Segment, Trajectory

__all__ = ("EVALUATION", "SevaEvalReport", "SevaEvaluation", "SevaGoldLine", "SevaPrediction")


class SevaGoldLine(GoldLine, SevaGold):
    """One gold line of ``score --gold`` (``label`` with the aliases of §3.5)."""


class SevaPrediction(PredictionLine):
    """A prediction to score or reward: ours (``output``) or another system's (``label``; for ``reward``,
    ``completion`` with ``claim`` and ``source``)."""

    output_model = SevaOutput
    answer_fields = ("label",)

    label: Any = None
    claim: str | None = None
    source: str | None = None

    def has_answer(self) -> bool:
        return "label" in self.model_fields_set  # a null label is an answer, and a wrong one

    @property
    def predicted(self) -> Label | None:
        """The label this prediction counts as (``None``: wrong whatever the gold)."""
        if self.parsed_output is not None:
            return self.parsed_output.label
        return normalize_label(self.label)


class SevaEvalReport(LabelMetrics):
    """Label metrics (§4, top-level for the headline), and for our own runs structure, error types, and for
    generated probes the detection rate per error category (Reflect's input)."""

    structure: StructureMetrics | None = None
    """Our runs only (another system's labels carry no structure)."""
    format_rate: float | None = None
    """Format compliance of our runs (R_f = 1), the headline's structural figure."""
    error_types: dict[str, int] | None = None
    category_detection: dict[str, float] | None = None
    """Per error category of gold probes: share predicted Not Attributable."""
    reward: dict[str, float] | None = None
    """Mean reward components of our runs that carry them."""


def category_detection(pairs: Sequence[tuple[Label | None, SevaGold]]) -> dict[ErrorType, float]:
    """Detection accuracy per error category: the share of gold probes of that category predicted Not
    Attributable (categories without probes are absent)."""
    detection: dict[ErrorType, float] = {}
    for category in ERROR_TYPES:
        hits = [predicted == NOT_ATTRIBUTABLE for predicted, gold in pairs if gold.category == category]
        if hits:
            detection[category] = sum(hits) / len(hits)
    return detection


class SevaEvaluation(BaseEvaluation):
    record_model = SevaRecord
    gold_model = SevaGoldLine
    result_model = SevaPrediction
    prediction_model = SevaPrediction
    headline = ("macro_f1", "accuracy", "fpr", "fnr", "format_rate")
    score_needs_every_gold: ClassVar[bool] = False

    def load_records(
        self, path: Path, *, limit: int | None, seed: int | None, unique_ids: bool = True
    ) -> Sequence[SevaRecord]:
        return subset(load_seva_records(path, unique_ids=unique_ids).records, limit=limit, shuffle_seed=seed)

    def graph_input(self, record: SevaRecord) -> dict[str, Any]:
        return record.graph_input()

    def gold_of(self, record: SevaRecord) -> SevaGoldLine | None:
        if record.gold is None:
            return None
        return SevaGoldLine(id=record.id, **record.gold.model_dump())

    def read_gold(self, path: Path) -> Mapping[str, SevaGoldLine]:
        if _is_record_file(path):
            return {g.id: g for r in load_seva_records(path).records if (g := self.gold_of(r)) is not None}
        return super().read_gold(path)

    def report(self, pairs: Sequence[tuple[SevaPrediction, SevaGoldLine]], options: Any) -> SevaEvalReport:
        labelled = [(p.predicted, g) for p, g in pairs]
        ours = [p for p, _ in pairs if p.ours]
        outputs = [p.parsed_output or _failed() for p in ours]
        rewards = [p.rewards for p in ours if p.rewards]
        structure = structure_metrics(outputs) if ours else None
        detection = category_detection(labelled)
        return SevaEvalReport(
            **label_metrics([(p, g.label) for p, g in labelled]).model_dump(),
            structure=structure,
            format_rate=structure.format_compliance if structure else None,
            error_types=error_type_distribution(outputs) if ours else None,
            category_detection=dict(detection) or None,
            reward={k: statistics.fmean(r.get(k, 0.0) for r in rewards) for k in rewards[0]} if rewards else None,
        )

    def plots(self, report: SevaEvalReport, out_dir: Path) -> list[Path]:
        paths = [confusion_plot(report.confusion, out_dir / "confusion.png", title="SEVA labels")]
        if report.error_types is not None:
            total = sum(report.error_types.values()) or 1
            shares = {k: {"share": v / total} for k, v in report.error_types.items()}
            paths.append(
                per_class_bars(shares, ["share"], out_dir / "error_types.png", title="Error types of NA predictions")
            )
        return paths

    def trajectory_of(self, prediction: SevaPrediction) -> Trajectory:
        if prediction.trajectory is not None:
            return prediction.trajectory
        missing = [k for k in ("claim", "source", "completion") if getattr(prediction, k) is None]
        if missing:
            raise ValueError(
                f"prediction {prediction.id!r} has no trajectory; a reward input line needs claim, source and "
                f"completion (missing: {', '.join(missing)})"
            )
        inputs = {"claim": prediction.claim, "source": prediction.source}
        segments = [Segment(origin="policy", text=prediction.completion or "")]
        return Trajectory(id=prediction.id, agent="seva", input=inputs, segments=segments)


def _failed() -> SevaOutput:
    """A run that failed before its reply: unparseable, no label."""
    return SevaOutput(raw="", parse_ok=False, parse_error="the run failed")


def _is_record_file(path: Path) -> bool:
    """Whether ``path`` holds records (:mod:`.data`'s formats) rather than gold or prediction lines, judged by its
    first line: a record has a claim with its source, a reply to reward has a ``completion``."""
    from evigraph.jsonl import iter_json_objects

    for _, data in iter_json_objects(path):
        if release_format(data) is not None:  # WiCE (either layout) or Veri-R1, as released
            return True
        has_pair = isinstance(data.get("claim"), str) and isinstance(data.get("source"), str)
        return has_pair and "completion" not in data and "output" not in data
    return False


EVALUATION = SevaEvaluation()
