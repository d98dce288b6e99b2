"""Training data for OpenRLHF: an agent's records as prompt JSONL (spec: the OpenRLHF notes §9).

One line per record: ``{"prompt": str, "label": str, "datasource": agent}``. The label is a JSON *string*
(``{"input": {...graph input...}, "gold": {...}}``), so Hugging Face ``datasets`` never coerces heterogeneous
dicts into a struct schema; the executor parses it. The records are read by the agent's own evaluation adapter
(every format ``evigraph eval AGENT --data`` reads: Veri-R1 claim files, HotpotQA, RAGTruth, FaithBench ...), so
training and evaluation see the same inputs. ``prompt`` is only what OpenRLHF logs: the graph renders the real
prompt itself.

Training reads keep repeated ids (:func:`read_training_records`): an id is a resume key for ``evigraph eval``,
not for a training record, and released training files repeat them (Veri-R1's ``train_online.jsonl`` has 1,095
ids twice, each pair the same claim and gold). Records identical to an earlier one are kept too -- the file's own
sampling weight, as the paper trained on it -- and counted (:class:`DataSummary`) so the run says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python

from evigraph.files import atomic_writer

__all__ = ("DataSummary", "prompt_line", "read_training_records", "summarize", "write_prompt_dataset")

_PROMPT_CHARS = 2000


def prompt_line(agent: str, graph_input: dict[str, Any]) -> dict[str, str]:
    """One OpenRLHF prompt line from a graph input (its ``gold`` moves into the label).

    Example:
        >>> line = prompt_line("veri-r1", {"id": "c1", "claim": "It rains.", "gold": {"label": "SUPPORTS"}})
        >>> line["prompt"], json.loads(line["label"])
        ('claim: It rains.', {'input': {'id': 'c1', 'claim': 'It rains.'}, 'gold': {'label': 'SUPPORTS'}})
    """
    inputs = to_jsonable_python({k: v for k, v in graph_input.items() if k != "gold"})
    shown = " | ".join(f"{k}: {v}" for k, v in inputs.items() if isinstance(v, str) and k != "id")
    gold = to_jsonable_python(graph_input.get("gold") or {})
    label = json.dumps({"input": inputs, "gold": gold}, ensure_ascii=False)
    return {"prompt": shown[:_PROMPT_CHARS] or agent, "label": label, "datasource": agent}


def write_prompt_dataset(agent: str, graph_inputs: Iterable[dict[str, Any]], path: Path) -> int:
    """Write the prompt JSONL (atomically); returns the number of lines."""
    count = 0
    with atomic_writer(path) as writer:
        for graph_input in graph_inputs:
            writer.write(json.dumps(prompt_line(agent, graph_input), ensure_ascii=False) + "\n")
            count += 1
    return count


class DataSummary(BaseModel):
    """What a training file holds beyond its record count: repeats are kept, and said."""

    model_config = ConfigDict(frozen=True)

    records: int
    repeated_ids: int
    """Records whose id an earlier record already has."""
    exact_duplicates: int
    """Records whose graph input and gold equal an earlier record's (kept: they weigh as often as they occur)."""

    def describe(self) -> str:
        """One line for the run's output, e.g. ``8192 records; 1095 repeat an earlier id (1095 exact duplicates,
        kept)``."""
        if not self.repeated_ids and not self.exact_duplicates:
            return f"{self.records} records, ids unique"
        return (
            f"{self.records} records; {self.repeated_ids} repeat an earlier id, {self.exact_duplicates} repeat an "
            "earlier record exactly (all kept: a repeat weighs as often as it occurs)"
        )


def read_training_records(adapter: Any, path: Path) -> Sequence[Any]:
    """Every record of ``path`` read by the agent's evaluation adapter for training: the same formats as
    ``evigraph eval``, repeated ids kept (see the module docstring)."""
    return adapter.load_records(path, limit=None, seed=None, unique_ids=False)


def summarize(ids: Sequence[str], graph_inputs: Sequence[dict[str, Any]]) -> DataSummary:
    """Count the repeated ids and the exact repeats (same id, same graph input and gold) of a training file.

    Example:
        >>> summarize(["a", "a", "a"], [{"claim": "x"}, {"claim": "x"}, {"claim": "y"}])
        DataSummary(records=3, repeated_ids=2, exact_duplicates=1)
    """
    seen_ids: set[str] = set()
    seen: set[str] = set()
    repeated = exact = 0
    for record_id, graph_input in zip(ids, graph_inputs, strict=True):
        key = json.dumps([record_id, to_jsonable_python(graph_input)], sort_keys=True, ensure_ascii=False)
        repeated += record_id in seen_ids
        exact += key in seen
        seen_ids.add(record_id)
        seen.add(key)
    return DataSummary(records=len(graph_inputs), repeated_ids=repeated, exact_duplicates=exact)
