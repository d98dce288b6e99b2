"""RLSeek's records and the loaders of the public span-annotated data sets (specs/rlseek.md §6).

- Our JSONL records: one response per line, ``{"id", "task", "source", "question"?, "response", "gold"?:
  {"spans": [[start, end], ...]}}`` (:class:`RLSeekRecord`).
- **RAGTruth** (public release; users point to it): ``response.jsonl`` next to ``source_info.jsonl``.
  :func:`load_ragtruth` joins them by ``source_id``, keeps ``quality == "good"`` (O14), checks every label's
  ``response[start:end] == text`` and counts every label as hallucinated whatever its type or flags (O16);
  :func:`rebalance` equalises hallucinated and clean responses over all tasks pooled (training split only).
- **FaithBench** (``batch_*.json`` files of ``{"samples": [...]}``): summaries with character spans from several
  annotators. :func:`load_faithbench` merges annotators *per character*: a character of the summary is gold
  when at least ``min_annotators`` distinct annotators put it inside a span whose first label is one of
  ``labels`` (default: any ``Unwanted`` label, union over annotators). ``Benign`` and ``Questionable`` spans are
  not hallucinations by default; pass them in ``labels`` to count them.

Every loader validates the whole file first and names the file, line (or sample) and field of a bad entry.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evigraph.agents.rlseek.schemas import RAGTRUTH_TASKS, RLSeekGold, TaskName, TaskType, task_variant
from evigraph.agents.rlseek.spans import merge_spans
from evigraph.errors import ConfigError
from evigraph.jsonl import format_validation_error, iter_json_objects
from evigraph.wording import with_article

__all__ = (
    "FAITHBENCH_UNWANTED",
    "RAGTRUTH_TASKS",
    "RLSeekRecord",
    "load_faithbench",
    "load_ragtruth",
    "rebalance",
    "records_from",
)

FAITHBENCH_UNWANTED = ("Unwanted", "Unwanted.Intrinsic", "Unwanted.Extrinsic")
"""FaithBench labels counted as hallucinated by default."""


class RLSeekRecord(BaseModel):
    """One response to check, with its gold spans when known."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    id: str
    task: TaskName
    """As the file names it (metrics are reported under it); a known name (:func:`~.schemas.task_variant`:
    ours or RAGTruth's, any case) since the run's prompt variant follows from it."""
    source: str | dict[str, Any]
    """Text, or the data-to-text JSON object."""
    response: str
    question: str | None = None
    gold: RLSeekGold | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    """Where the record came from (data set, model, split ...)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str) -> str:
        task_variant(task)  # a record is run: refuse a name that chooses no prompt variant
        return task

    @property
    def variant(self) -> TaskType:
        """The prompt variant the graph runs for :attr:`task`."""
        return task_variant(self.task)

    @model_validator(mode="after")
    def _check(self) -> RLSeekRecord:
        if isinstance(self.source, dict) and self.variant != "data-to-text":
            raise ValueError(
                f"source: {with_article(self.task)} record needs text; only data-to-text takes a JSON object"
            )
        for start, end in self.gold.spans if self.gold else ():
            if end > len(self.response):
                raise ValueError(f"gold.spans: [{start}, {end}] ends past the response ({len(self.response)} chars)")
        return self

    def graph_input(self) -> dict[str, Any]:
        """What the RLSeek graph is invoked with (gold included, so the run carries its reward)."""
        fields: dict[str, Any] = {"id": self.id, "task": self.variant, "source": self.source, "response": self.response}
        if self.question:
            fields["question"] = self.question
        if self.gold is not None:
            fields["gold"] = self.gold.model_dump(mode="json")
        return fields


def records_from(path: Path, *, unique_ids: bool = True) -> list[RLSeekRecord]:
    """Every record of ``path``, whatever its format: a RAGTruth folder (or its ``response.jsonl``; test split),
    a FaithBench folder or batch file (default merging), or our JSONL (``unique_ids=False``: repeated ids kept).

    Raises:
        ConfigError: a bad entry (file, line or sample, field) or an unreadable layout.
    """
    from evigraph.evaluation.records import load_records

    if path.is_dir() and (path / "response.jsonl").is_file():
        return load_ragtruth(path, split="test")
    if path.name == "response.jsonl" and (path.parent / "source_info.jsonl").is_file():
        return load_ragtruth(path.parent, split="test")
    if path.is_dir() or path.suffix == ".json":
        return load_faithbench(path)
    return list(load_records(path, RLSeekRecord.model_validate, id_of=lambda r: r.id, unique_ids=unique_ids))


# -- RAGTruth ---------------------------------------------------------------------------------------------
def load_ragtruth(
    folder: Path, *, split: str | None = "test", tasks: Iterable[str] | None = None, keep_quality: str | None = "good"
) -> list[RLSeekRecord]:
    """RAGTruth responses as records (see the module docstring).

    Args:
        folder: holds ``response.jsonl`` and ``source_info.jsonl``.
        split: ``train``, ``test`` or ``None`` (both).
        tasks: our task names to keep (default: all three).
        keep_quality: the ``quality`` value kept (``None``: keep every response).
    """
    sources = {str(s["source_id"]): s for _, s in _jsonl(folder / "source_info.jsonl")}
    wanted = set(tasks) if tasks is not None else None
    records = []
    path = folder / "response.jsonl"
    for line, row in _jsonl(path):
        where = f"{path}:{line}"
        if split is not None and row.get("split") != split:
            continue
        if keep_quality is not None and row.get("quality", "good") != keep_quality:
            continue
        info = sources.get(str(_field(row, "source_id", where)))
        if info is None:
            raise ConfigError(f"{where}: source_id {row['source_id']!r} is not in source_info.jsonl")
        task = RAGTRUTH_TASKS.get(info.get("task_type", ""))
        if task is None:
            raise ConfigError(f"{where}: unknown task_type {info.get('task_type')!r} (expected {list(RAGTRUTH_TASKS)})")
        if wanted is not None and task not in wanted:
            continue
        response = _field(row, "response", where)
        source, question = _ragtruth_source(task, _field(info, "source_info", where), where)
        records.append(
            _record(
                where,
                id=str(_field(row, "id", where)),
                task=task,
                source=source,
                question=question,
                response=response,
                gold={
                    "spans": [
                        _label_span(label, response, f"{where}: labels[{k}]")
                        for k, label in enumerate(row.get("labels") or [])
                    ]
                },
                meta={
                    "dataset": "ragtruth",
                    "model": row.get("model"),
                    "split": row.get("split"),
                    "source_id": str(row["source_id"]),
                },
            )
        )
    return records


def rebalance(records: Sequence[RLSeekRecord], *, seed: int = 0) -> list[RLSeekRecord]:
    """Equal numbers of hallucinated and clean records over all tasks pooled (spec §6, training split only):
    the larger class is subsampled with ``seed``; the input order is kept."""
    positive = [r for r in records if r.gold is not None and r.gold.spans]
    negative = [r for r in records if r.gold is not None and not r.gold.spans]
    size = min(len(positive), len(negative))
    rng = random.Random(seed)
    kept = {id(r) for r in rng.sample(positive, size)} | {id(r) for r in rng.sample(negative, size)}
    return [r for r in records if id(r) in kept]


def _ragtruth_source(task: TaskType, info: Any, where: str) -> tuple[str | dict[str, Any], str | None]:
    if task == "qa":
        if not isinstance(info, dict) or not isinstance(info.get("passages"), str):
            raise ConfigError(f"{where}: a QA source_info needs 'question' and 'passages' strings")
        return info["passages"], info.get("question")  # D is the passages only (spec O5)
    if task == "data-to-text":
        if not isinstance(info, dict):
            raise ConfigError(f"{where}: a Data2txt source_info must be a JSON object")
        return info, None
    if not isinstance(info, str):
        raise ConfigError(f"{where}: a Summary source_info must be a string")
    return info, None


def _label_span(label: Any, response: str, where: str) -> tuple[int, int]:
    try:
        start, end, text = int(label["start"]), int(label["end"]), label["text"]
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"{where}: a label needs integer 'start', 'end' and a 'text'") from None
    if response[start:end] != text:
        raise ConfigError(f"{where}: response[{start}:{end}] is {response[start:end]!r}, not the label text {text!r}")
    return start, end


# -- FaithBench -------------------------------------------------------------------------------------------
def load_faithbench(
    path: Path, *, labels: Sequence[str] = FAITHBENCH_UNWANTED, min_annotators: int = 1
) -> list[RLSeekRecord]:
    """FaithBench summaries as ``summary`` records (see the module docstring for the merging rule).

    Args:
        path: a folder of ``batch_*.json`` files (or the release folder holding ``data_for_release/``), or one
            batch file.
        labels: first labels whose spans count as hallucinated.
        min_annotators: distinct annotators needed on a character (1 = union).
    """
    if min_annotators < 1:
        raise ConfigError(f"min_annotators must be >= 1, got {min_annotators}")
    if path.is_dir() and not any(path.glob("batch_*.json")) and (path / "data_for_release").is_dir():
        path = path / "data_for_release"  # the release's own layout
    files = sorted(path.glob("batch_*.json"), key=_batch_number) if path.is_dir() else [path]
    if not files:
        raise ConfigError(f"{path}: no FaithBench batch_*.json files")
    records: dict[str, RLSeekRecord] = {}
    wanted = set(labels)
    for file in files:
        try:
            samples = json.loads(file.read_text(encoding="utf-8"))["samples"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as error:
            raise ConfigError(f"{file}: not a FaithBench batch ({{'samples': [...]}}): {error}") from None
        for k, sample in enumerate(samples):
            where = f"{file}: samples[{k}]"
            summary = _field(sample, "summary", where)
            sample_id = f"faithbench-{file.stem.removeprefix('batch_')}-{_field(sample, 'sample_id', where)}"
            if sample_id in records:
                raise ConfigError(f"{where}: sample_id {sample['sample_id']!r} appears twice in {file.name}")
            marks: list[tuple[str, tuple[int, int]]] = []
            for j, note in enumerate(sample.get("annotations") or []):
                kind = (note.get("label") or [None])[0]
                if kind in wanted:
                    span = _annotation_span(note, summary, f"{where}.annotations[{j}]")
                    marks.append((str(note.get("annotator_id")), span))
            records[sample_id] = _record(
                where,
                id=sample_id,
                task="summary",
                source=_field(sample, "source", where),
                response=summary,
                gold={"spans": _agreed(marks, min_annotators)},
                meta={"dataset": "faithbench", "summarizer": (sample.get("metadata") or {}).get("summarizer")},
            )
    return list(records.values())


def _annotation_span(note: dict[str, Any], summary: str, where: str) -> tuple[int, int]:
    start, end, text = note.get("summary_start"), note.get("summary_end"), note.get("summary_span")
    if not isinstance(start, int) or not isinstance(end, int) or summary[start:end] != text:
        raise ConfigError(f"{where}: summary[summary_start:summary_end] must equal summary_span")
    return start, end


def _agreed(marks: Sequence[tuple[str, tuple[int, int]]], min_annotators: int) -> list[tuple[int, int]]:
    """Characters inside spans of at least ``min_annotators`` distinct annotators, as merged spans."""
    per_annotator: dict[str, list[tuple[int, int]]] = {}
    for annotator, span in marks:
        per_annotator.setdefault(annotator, []).append(span)
    events: list[tuple[int, int]] = []
    for spans in per_annotator.values():
        for start, end in merge_spans(spans):  # an annotator's own overlaps count once
            events += [(start, 1), (end, -1)]
    agreed: list[tuple[int, int]] = []
    depth, opened = 0, 0
    for position, change in sorted(events, key=lambda e: (e[0], e[1])):
        before = depth
        depth += change
        if before < min_annotators <= depth:
            opened = position
        elif depth < min_annotators <= before and position > opened:
            agreed.append((opened, position))
    return merge_spans(agreed)


def _batch_number(path: Path) -> tuple[int, str]:
    digits = path.stem.rpartition("_")[2]
    return (int(digits), path.name) if digits.isdigit() else (1 << 30, path.name)


# -- shared -----------------------------------------------------------------------------------------------
def _jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    return iter_json_objects(path)


def _field(row: dict[str, Any], name: str, where: str) -> Any:
    if row.get(name) is None:
        raise ConfigError(f"{where}: missing field {name!r}")
    return row[name]


def _record(where: str, **fields: Any) -> RLSeekRecord:
    try:
        return RLSeekRecord.model_validate(fields)
    except ValidationError as error:
        raise ConfigError(f"{where}: {format_validation_error(error)}") from None
