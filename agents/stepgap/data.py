"""StepGap's input records: questions to run (HotpotQA in IRCoT's layout, or plain ``{id, question, golds}``),
and the record formats of ``evigraph score stepgap`` and ``evigraph reward stepgap`` (README, "StepGap")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evigraph.agents.stepgap.labels import GapLabel
from evigraph.trajectory import Trajectory

__all__ = (
    "GoldRecord",
    "LabeledStep",
    "PredictionRecord",
    "QuestionRecord",
    "question_record",
)


class QuestionRecord(BaseModel):
    """One question to run: id, question, gold answer aliases; the paragraphs when the data set ships them."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    golds: list[str] = Field(default_factory=list)
    paragraphs: list[dict[str, Any]] = Field(default_factory=list)
    """``{"id", "title", "text", "is_supporting"}`` (HotpotQA's ten paragraphs)."""


def question_record(line: dict[str, Any]) -> QuestionRecord:
    """A question from IRCoT's HotpotQA layout (``question_id``, ``question_text``, ``answers_objects``,
    ``contexts``) or from ``{id, question, golds}``."""
    if "question_text" in line:
        golds = [span for answer in line.get("answers_objects") or [] for span in answer.get("spans") or []]
        paragraphs = [
            {
                "id": f"{line['question_id']}-{c['id']}",
                "title": c.get("title", ""),
                "text": c["paragraph_text"],
                "is_supporting": bool(c.get("is_supporting")),
            }
            for c in line.get("contexts") or []
        ]
        return QuestionRecord(
            id=str(line["question_id"]), question=line["question_text"], golds=golds, paragraphs=paragraphs
        )
    return QuestionRecord.model_validate(line)


class LabeledStep(BaseModel):
    """One step of a score/reward record (extra fields kept)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    label: GapLabel | None = None
    kind: str | None = None
    text: str = ""
    query: str | None = None


class GoldRecord(BaseModel):
    """A gold line: step labels and answer correctness (``score``), or ``em``/``golds`` (``reward``)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str = Field(min_length=1)
    answer_correct: bool | None = None
    steps: list[LabeledStep] | None = None
    em: int | None = Field(None, ge=0, le=1)
    golds: list[str] = Field(default_factory=list)


class PredictionRecord(BaseModel):
    """A prediction line: ``{"id", "steps": [{"label": ...}, ...]}`` (another checker), a reward input line
    (steps with ``kind``/``text``/``query``), or a record ``evigraph eval stepgap`` stored (``output`` and
    ``trajectory``)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str = Field(min_length=1)
    steps: list[LabeledStep] | None = None
    output: dict[str, Any] | None = None
    trajectory: Trajectory | None = None
    em: int | None = Field(None, ge=0, le=1)

    def labels(self) -> list[GapLabel | None]:
        """The predicted label per step."""
        if self.steps is not None:
            return [s.label for s in self.steps]
        checks = (self.output or {}).get("checks") or {}
        return [s.get("label") for s in checks.get("steps") or []]  # a failed run stored no checks: no steps
