"""Training data for OpenRLHF: an agent's records as prompt JSONL (spec: the OpenRLHF notes §9).

One line per record: ``{"prompt": str, "label": str, "datasource": agent}``. The label is a JSON *string*
(``{"input": {...graph input...}, "gold": {...}}``), so Hugging Face ``datasets`` never coerces heterogeneous
dicts into a struct schema; the executor parses it. The records are read by the agent's own evaluation adapter
(every format ``evigraph eval AGENT --data`` reads: Veri-R1 claim files, HotpotQA, RAGTruth, FaithBench ...), so
training and evaluation see the same inputs. ``prompt`` is only what OpenRLHF logs: the graph renders the real
prompt itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python

from evigraph.files import atomic_writer

__all__ = ("prompt_line", "write_prompt_dataset")

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
