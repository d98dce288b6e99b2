"""StepGap's evaluation adapter: questions in, one stored record per run, the checker and answer report out.

- ``evigraph eval stepgap --data Q.jsonl --corpus C``: runs the rollout graph (Search-R1 generator + checker) on
  each question (HotpotQA in IRCoT's layout, or ``{id, question, golds}``) and reports answers (EM, token-F1,
  searches, answer support) and the gap-type distribution and first-gap table.
- ``evigraph score stepgap --pred P --gold G``: a checker's step labels against gold labels (§4): sP/sR/sF1, BA,
  κ, bootstrap intervals, Q-F1, typed F1, distributions, first gap. A step-count mismatch names the id.
- ``evigraph reward stepgap --input F``: the typed process reward of labelled traces (§3).

Record formats are in :mod:`.data` and the README. A step the checker could not label counts as not flagged
(the report says how many there were).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evigraph.agents.search_r1.answers import exact_match
from evigraph.agents.stepgap.data import GoldRecord, PredictionRecord, QuestionRecord, question_record
from evigraph.agents.stepgap.labels import GapLabel, has_gap
from evigraph.agents.stepgap.metrics import (
    LabeledQuestion,
    answer_token_f1,
    checker_report,
    first_gap_distribution,
    is_degenerate,
    label_distribution,
)
from evigraph.agents.stepgap.plots import gap_distribution_plot
from evigraph.errors import ConfigError
from evigraph.evaluation.adapter import BaseEvaluation
from evigraph.evaluation.records import load_records
from evigraph.metrics import mean
from evigraph.trajectory import Step, Trajectory

__all__ = ("EVALUATION", "StepGapEvalOptions", "StepGapEvalReport", "StepGapEvaluation")

_SUPPORTED = ("stageD:entailment", "stageE:entailed")


class StepGapEvalOptions(BaseModel):
    """Options of ``evigraph eval|score stepgap`` (flags)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    resamples: int = Field(2000, ge=0)
    """Bootstrap resamples for the metrics' 95% confidence intervals (0: no intervals)."""
    bootstrap_seed: int = 0
    """Bootstrap seed (same seed, same intervals)."""


class StepGapEvalReport(BaseModel):
    """Answer metrics and the label distribution of every run; with gold step labels also the checker metrics
    of §4 (the ``step``, ``question`` and ``typed_f1`` keys of :class:`~.metrics.StepGapReport`)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    n_questions: int
    n_steps: int
    unchecked_steps: int
    """Steps the checker could not label (judge failures); counted as not flagged."""
    flag_rate: float
    distribution: dict[GapLabel, float]
    first_gap: dict[str, float]
    degenerate: bool
    em: float | None
    answer_f1: float | None
    support_rate: float | None
    """Share of final answers whose claim an NLI stage found entailed (§4 "answer support rate")."""
    mean_searches: float | None
    nli: list[str]
    """Which NLI engines labelled the steps."""


def _labels(prediction: PredictionRecord) -> list[GapLabel]:
    return [label or "no-gap" for label in prediction.labels()]


def _answer_correct(prediction: PredictionRecord, gold: GoldRecord) -> bool | None:
    if gold.answer_correct is not None:
        return gold.answer_correct
    if gold.em is not None:
        return bool(gold.em)
    output = prediction.output or {}
    if gold.golds and "answer" in output:
        return bool(exact_match(output.get("answer") or "", gold.golds))
    em = prediction.em if prediction.em is not None else output.get("em")
    return None if em is None else bool(em)


def _supported(prediction: PredictionRecord) -> bool | None:
    checks = ((prediction.output or {}).get("checks") or {}).get("steps") or []
    conclusions = [c for c in checks if c.get("kind") == "conclusion"]
    if not conclusions:
        return None
    return conclusions[-1].get("pipeline_path", "").endswith(_SUPPORTED)


class StepGapEvaluation(BaseEvaluation):
    options = StepGapEvalOptions
    record_model = QuestionRecord
    gold_model = GoldRecord
    prediction_model = PredictionRecord
    headline = ("em", "flag_rate", "support_rate")

    def load_records(
        self, path: Path, *, limit: int | None, seed: int | None, unique_ids: bool = True
    ) -> Sequence[QuestionRecord]:
        return load_records(
            path, question_record, id_of=lambda r: r.id, limit=limit, shuffle_seed=seed, unique_ids=unique_ids
        )

    def graph_input(self, record: QuestionRecord) -> dict[str, Any]:
        inputs: dict[str, Any] = {"question": record.question, "id": record.id}
        if record.golds:
            inputs.update(golds=record.golds, gold={"golds": record.golds})
        return inputs

    def prediction_of(self, result: BaseModel) -> PredictionRecord:
        """A stored run as a prediction (the same reading as ``score --pred`` gives it)."""
        return PredictionRecord.model_validate(result.model_dump(mode="json"))

    def gold_of(self, record: QuestionRecord) -> GoldRecord | None:
        return GoldRecord(id=record.id, golds=record.golds) if record.golds else None

    def report(
        self, pairs: Sequence[tuple[PredictionRecord, GoldRecord]], options: StepGapEvalOptions
    ) -> StepGapEvalReport:
        predicted = [_labels(p) for p, _ in pairs]
        flat = [label for labels in predicted for label in labels]
        correct = [_answer_correct(p, g) for p, g in pairs]
        outputs = [p.output or {} for p, _ in pairs]
        answers = [(o.get("answer"), g.golds) for o, (_, g) in zip(outputs, pairs, strict=True)]
        searches = [o["n_searches"] for o in outputs if "n_searches" in o]
        supported = [s for p, _ in pairs if (s := _supported(p)) is not None]
        engines = sorted({o["checks"].get("nli") for o in outputs if o.get("checks") and o["checks"].get("nli")})
        known = [c for c in correct if c is not None]
        distribution = label_distribution(flat)
        body: dict[str, Any] = {
            "n_questions": len(pairs),
            "n_steps": len(flat),
            "unchecked_steps": sum(1 for p, _ in pairs for label in p.labels() if label is None),
            "flag_rate": mean([has_gap(label) for label in flat]),
            "distribution": distribution,
            "first_gap": first_gap_distribution(
                [labels for labels, c in zip(predicted, correct, strict=True) if c is False]
            ).model_dump(),
            "degenerate": is_degenerate(distribution),
            "em": mean(known) if known else None,
            "answer_f1": mean([answer_token_f1(a or "", g) for a, g in answers if g])
            if any(g for _, g in answers)
            else None,
            "support_rate": mean(supported) if supported else None,
            "mean_searches": mean(searches) if searches else None,
            "nli": engines,
        }
        if all(g.steps is not None for _, g in pairs) and pairs:
            body.update(self._checker_metrics(pairs, predicted, correct, options))
        return StepGapEvalReport.model_validate(body)

    @staticmethod
    def _checker_metrics(
        pairs: Sequence[tuple[PredictionRecord, GoldRecord]],
        predicted: Sequence[list[GapLabel]],
        correct: Sequence[bool | None],
        options: StepGapEvalOptions,
    ) -> dict[str, Any]:
        questions = []
        for (_prediction, gold), labels, answer_correct in zip(pairs, predicted, correct, strict=True):
            assert gold.steps is not None
            gold_labels = [s.label for s in gold.steps]
            if any(label is None for label in gold_labels):
                raise ConfigError(f"gold record {gold.id!r}: every step needs a label (no-gap, CC, IE or MB)")
            if len(labels) != len(gold_labels):
                raise ConfigError(
                    f"record {gold.id!r}: the prediction has {len(labels)} steps, the gold {len(gold_labels)}"
                )
            if answer_correct is None:
                raise ConfigError(f"gold record {gold.id!r}: needs answer_correct (true/false)")
            questions.append(
                LabeledQuestion(id=gold.id, gold=tuple(gold_labels), pred=tuple(labels), answer_correct=answer_correct)  # type: ignore[arg-type]
            )
        report = checker_report(questions, resamples=options.resamples, seed=options.bootstrap_seed)
        dump = report.model_dump(mode="json")
        keep = ("step", "question", "typed_f1", "gold_distribution", "first_gap", "distribution", "degenerate")
        return {key: dump[key] for key in keep}

    def plots(self, report: StepGapEvalReport, out_dir: Path) -> list[Path]:
        gold = getattr(report, "gold_distribution", None)
        return [gap_distribution_plot(report.distribution, out_dir / "gap_distribution.png", gold=gold)]

    def trajectory_of(self, prediction: PredictionRecord) -> Trajectory:
        """A stored run's trajectory, or one built from a reward input line's steps."""
        if prediction.trajectory is not None:
            return prediction.trajectory
        if prediction.steps is None:
            raise ValueError(f"prediction {prediction.id!r} stores neither a trajectory nor steps")
        steps = [
            Step(
                index=i,
                kind="answer" if s.kind == "answer" else "search",
                text=s.text,
                payload={"query": s.query, "label": s.label, "reasoning": s.text},
            )
            for i, s in enumerate(prediction.steps)
        ]
        return Trajectory(id=prediction.id, agent="stepgap", input={}, steps=steps, output={})


EVALUATION = StepGapEvaluation()
