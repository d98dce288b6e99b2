"""What ``evigraph eval|score|reward AGENT`` need from an agent beyond its graph: its data, results and metrics.

An agent names an :class:`EvalAdapter` object in its spec (``AgentSpec.evaluation``). The framework then runs
every command the same way:

- ``eval``: :meth:`~EvalAdapter.load_records` → one graph run per record on :meth:`~EvalAdapter.graph_input` →
  :meth:`~EvalAdapter.result` lines in ``predictions.jsonl`` (resumable) → :meth:`~EvalAdapter.report` over the
  results (:meth:`~EvalAdapter.prediction_of`) and the records' gold (:meth:`~EvalAdapter.gold_of`) →
  ``report.json`` and :meth:`~EvalAdapter.plots`;
- ``score``: :meth:`~EvalAdapter.read_predictions` (ours or another system's) and :meth:`~EvalAdapter.read_gold`
  → the same report;
- ``reward``: each prediction's :meth:`~EvalAdapter.trajectory_of` and its gold → the agent's reward.

Subclass :class:`BaseEvaluation` and set its class attributes: the defaults read JSONL lines into the models
you name and store a :class:`RunRecord` per run, so a simple agent writes only :meth:`~EvalAdapter.graph_input`
and :meth:`~EvalAdapter.report`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evigraph.evaluation.records import load_records
from evigraph.trajectory import Trajectory, TrajectoryError

__all__ = ("BaseEvaluation", "EvalAdapter", "GoldLine", "NoOptions", "PredictionLine", "RunRecord")


class NoOptions(BaseModel):
    """An agent whose evaluation takes no options of its own."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class RunRecord(BaseModel):
    """One finished run as ``predictions.jsonl`` stores it (the default result and prediction model)."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    id: str
    response: str | None = None
    """Everything after the prompt as flat text (what other systems' records hold)."""
    output: dict[str, Any] | None = None
    """The agent's output model, dumped."""
    gold: dict[str, Any] | None = None
    rewards: dict[str, float] = {}
    trajectory: Trajectory | None = None
    error: TrajectoryError | None = None


class GoldLine(BaseModel):
    """One line of a ``score --gold`` file: mix into the agent's gold model (``class MyGoldLine(GoldLine,
    MyGold)``). Ids written as numbers read as strings, unknown keys are ignored; a bad line names ``file:line``
    and the field (:func:`~evigraph.evaluation.records.load_records`)."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    id: str


class PredictionLine(RunRecord):
    """A prediction to score or reward: our own eval line (``output``, ``trajectory`` or ``error``) or another
    system's, which gives the agent's answer fields (``answer_fields``) or, for ``reward``, its ``completion``.

    A subclass sets ``output_model`` (our ``output`` is read into :attr:`parsed_output`) and ``answer_fields``
    (the first is named when a line has none of them), and adds those fields.
    """

    output_model: ClassVar[type[BaseModel]]
    answer_fields: ClassVar[tuple[str, ...]]
    trajectory_is_ours: ClassVar[bool] = True
    """Whether a line with only a ``trajectory`` counts as ours (else it needs an answer field too)."""

    completion: str | None = None
    """Another system's raw reply (``reward`` reads it with the run's inputs)."""
    parsed_output: Any = Field(None, exclude=True)
    """``output`` read as the agent's output model (our lines)."""

    @property
    def ours(self) -> bool:
        """An eval line of ours (it has our output, our failure, or our trajectory)."""
        traced = self.trajectory_is_ours and self.trajectory is not None
        return self.parsed_output is not None or self.error is not None or traced

    def has_answer(self) -> bool:
        """Another system's answer is on the line: some answer field is not null (override where a null answer
        is an answer, e.g. a label that counts as wrong)."""
        return any(getattr(self, name) is not None for name in self.answer_fields)

    def fill_from_output(self) -> None:
        """Derive the answer fields from our parsed output (override where the report reads them)."""

    @model_validator(mode="after")
    def _read_output(self) -> PredictionLine:
        if self.output is not None and self.error is None:
            self.parsed_output = self.output_model.model_validate(self.output)
            self.fill_from_output()
        if not (self.ours or self.has_answer() or self.completion is not None):
            names = " or ".join(repr(name) for name in self.answer_fields)
            raise ValueError(
                f"field {self.answer_fields[0]}: missing (a prediction needs {names}, or our eval line's 'output')"
            )
        return self


@runtime_checkable
class EvalAdapter(Protocol):
    """The evaluation contract (see the module docstring). Records, results and predictions are the agent's
    pydantic models; each has an ``id``."""

    options: type[BaseModel]
    """Options of ``eval``/``score`` beyond the agent's config (each field becomes a flag)."""
    result_model: type[BaseModel]
    """One line of ``predictions.jsonl``; it has ``id`` and ``error`` fields."""
    headline: tuple[str, ...]
    """The report keys ``eval`` prints."""

    def load_records(
        self, path: Path, *, limit: int | None, seed: int | None, unique_ids: bool = True
    ) -> Sequence[Any]:
        """Every record of an input file, validated first (``file:line`` errors), then the ``--limit`` subset.
        ``unique_ids=False`` (training reads) keeps records that repeat an id; eval refuses them (ids are its
        resume keys)."""
        ...

    def check_records(self, records: Sequence[Any], config: BaseModel) -> None:
        """Raise :class:`~evigraph.errors.ConfigError` when ``config`` cannot run these records."""
        ...

    def graph_input(self, record: Any) -> dict[str, Any]:
        """What the agent's graph is invoked with for ``record`` (its gold included, so runs carry rewards)."""
        ...

    def result(self, record: Any, final_state: Mapping[str, Any]) -> BaseModel:
        """The ``result_model`` line for a finished run."""
        ...

    def prediction_of(self, result: Any) -> Any:
        """A stored result as a prediction :meth:`report` reads."""
        ...

    def gold_of(self, record: Any) -> Any | None:
        """The record's gold answer, if it has one."""
        ...

    def read_predictions(self, path: Path) -> Sequence[Any]:
        """Predictions to score: our results or another system's records."""
        ...

    def read_gold(self, path: Path) -> Mapping[str, Any]:
        """Gold answers keyed by id."""
        ...

    def report(self, pairs: Sequence[tuple[Any, Any]], options: Any) -> BaseModel:
        """The metrics over ``(prediction, gold)`` pairs."""
        ...

    def plots(self, report: Any, out_dir: Path) -> list[Path]:
        """Figures of an eval run's report (may be none)."""
        ...

    def trajectory_of(self, prediction: Any) -> Trajectory:
        """What the agent's reward reads for a prediction."""
        ...


class BaseEvaluation:
    """Defaults for :class:`EvalAdapter`: JSONL records of ``record_model`` (with ``id`` and optional ``gold``),
    :class:`RunRecord` results, gold lines of ``gold_model``. Subclasses set the class attributes and write
    :meth:`graph_input` and :meth:`report`."""

    options: ClassVar[type[BaseModel]] = NoOptions
    record_model: ClassVar[type[BaseModel]]
    """One input line (an ``id`` field, and ``gold`` when records carry their answer)."""
    gold_model: ClassVar[type[BaseModel]]
    """One gold line of ``score --gold`` files (an ``id`` field)."""
    result_model: ClassVar[type[BaseModel]] = RunRecord
    prediction_model: ClassVar[type[BaseModel]] = RunRecord
    headline: ClassVar[tuple[str, ...]] = ()
    score_needs_every_gold: ClassVar[bool] = False
    """``score`` refuses a gold record without a prediction (instead of reporting it as ``n_missing``)."""

    def load_records(
        self, path: Path, *, limit: int | None, seed: int | None, unique_ids: bool = True
    ) -> Sequence[Any]:
        return load_records(
            path, self.record_model.model_validate, id_of=_id, limit=limit, shuffle_seed=seed, unique_ids=unique_ids
        )

    def check_records(self, records: Sequence[Any], config: BaseModel) -> None:
        return None

    def graph_input(self, record: Any) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} must say what the graph is invoked with")

    def result(self, record: Any, final_state: Mapping[str, Any]) -> BaseModel:
        trajectory: Trajectory = final_state["trajectory"]
        gold = self.gold_of(record)
        return self.result_model.model_validate(
            {
                "id": _id(record),
                "response": trajectory.response,
                "output": trajectory.output,
                "gold": gold.model_dump(mode="json") if isinstance(gold, BaseModel) else gold,
                "rewards": {c.type: c.value for c in trajectory.rewards},
                "trajectory": trajectory,
                "error": trajectory.error,
            }
        )

    def prediction_of(self, result: Any) -> Any:
        return result

    def gold_of(self, record: Any) -> Any | None:
        return getattr(record, "gold", None)

    def read_predictions(self, path: Path) -> Sequence[Any]:
        return load_records(path, self.prediction_model.model_validate, id_of=_id, tolerate_truncated_tail=True)

    def read_gold(self, path: Path) -> Mapping[str, Any]:
        def parse(line: dict[str, Any]) -> Any:
            # A gold line, or a record/result carrying its gold under "gold".
            nested = line.get("gold")
            fields = {"id": line.get("id"), **nested} if isinstance(nested, dict) else line
            return self.gold_model.model_validate(fields)

        return {_id(g): g for g in load_records(path, parse, id_of=_id)}

    def report(self, pairs: Sequence[tuple[Any, Any]], options: Any) -> BaseModel:
        raise NotImplementedError(f"{type(self).__name__} must compute its metrics")

    def plots(self, report: Any, out_dir: Path) -> list[Path]:
        return []

    def trajectory_of(self, prediction: Any) -> Trajectory:
        trajectory = getattr(prediction, "trajectory", None)
        if not isinstance(trajectory, Trajectory):
            raise ValueError(f"prediction {_id(prediction)!r} stores no trajectory to reward")
        return trajectory


def _id(item: Any) -> str:
    return str(item.id)
