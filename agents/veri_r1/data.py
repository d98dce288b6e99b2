"""Veri-R1 input records: the shared eval/test files as they are, or a native ``{id, claim, ...}`` schema.

Accepted per line (unknown keys ignored):

- shared files (``eval_*.jsonl``, ``test_online.jsonl``, ``test_offline.jsonl``): ``id``, ``question`` (the
  claim), ``golden_answers: {label, evidence}``, ``data_source``, ``prompt`` (offline files embed the
  candidate entries there as an ``<information>`` block of ``[[id]]: text`` entries);
- native: ``id``, ``claim``, optional ``label`` + ``evidence`` (gold) and ``passages`` (``[{id, text}]``).

The same passages make the BM25 corpus for online runs over ``test_online.jsonl`` (:func:`offline_corpus`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evigraph.agents.veri_r1.gold import GoldRecord
from evigraph.errors import InputDataError
from evigraph.files import atomic_writer
from evigraph.jsonl import iter_json_objects
from evigraph.trajectory import Evidence

__all__ = (
    "ClaimRecord",
    "claim_record_from_mapping",
    "information_entries",
    "offline_corpus",
    "offline_passages",
    "write_offline_corpus",
)

_ENTRY = re.compile(r"^\[\[(?P<id>[^\[\]\n]+?)\]\]:[ \t]?", re.MULTILINE)


class ClaimRecord(BaseModel):
    """One claim to run, with its gold answer (when known) and given entries (offline runs)."""

    model_config = ConfigDict(frozen=True)

    id: str
    claim: str = Field(min_length=1)
    gold: GoldRecord | None = None
    passages: tuple[Evidence, ...] = ()


def information_entries(text: str, *, source: str | None = None) -> list[Evidence]:
    """The ``[[id]]: text`` entries of every ``<information>`` block in ``text`` (an entry runs to the next
    entry's line start or the block's end; ids as written)."""
    entries: list[Evidence] = []
    start = text.find("<information>")
    while start >= 0:
        end = text.find("</information>", start)
        body = text[start + len("<information>") : end if end >= 0 else len(text)]
        matches = list(_ENTRY.finditer(body))
        # An empty block ("No entries matched") has no matches; the pairing must not assume one.
        for match, following in zip(matches, [*matches[1:], None][: len(matches)], strict=True):
            entry = body[match.end() : following.start() if following else len(body)].strip()
            entries.append(Evidence(id=match["id"].strip(), text=entry, source=source))
        start = text.find("<information>", end) if end >= 0 else -1
    return entries


def offline_passages(prompt: str, *, source: str | None = None) -> list[Evidence]:
    """The entries of the last ``<information>`` block in an offline prompt (the candidate passages)."""
    start = prompt.rfind("<information>")
    return information_entries(prompt[start:], source=source) if start >= 0 else []


def _prompt_text(data: Mapping[str, Any]) -> str | None:
    prompt = data.get("prompt")
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
        content = prompt[0].get("content")
        return content if isinstance(content, str) else None
    return None


def claim_record_from_mapping(data: Mapping[str, Any]) -> ClaimRecord:
    """Parse one input line (see the module docstring). Raises ValueError naming the missing field."""
    if "id" not in data:
        raise ValueError("field id: missing")
    claim = data.get("claim", data.get("question"))
    if not isinstance(claim, str) or not claim.strip():
        raise ValueError("field claim (or question): missing or empty")
    has_gold = "golden_answers" in data or "reward_model" in data or "label" in data
    gold = GoldRecord.from_mapping(dict(data)) if has_gold else None
    passages: list[Evidence] = []
    if isinstance(data.get("passages"), list):
        for position, item in enumerate(data["passages"]):
            if not isinstance(item, dict) or "id" not in item or not isinstance(item.get("text"), str):
                raise ValueError(f"field passages.{position}: expected {{id, text}}")
            passages.append(Evidence(id=str(item["id"]), text=item["text"]))
    elif (prompt := _prompt_text(data)) is not None and "Verify the claim" in prompt:
        passages = offline_passages(prompt)
    return ClaimRecord(id=str(data["id"]), claim=claim.strip(), gold=gold, passages=tuple(passages))


def offline_corpus(path: str | Path) -> Iterator[Evidence]:
    """The union of the entries embedded in an offline file's prompts, ids as given, first text wins.

    Raises:
        InputDataError: a line that is not a JSON object (``file:line``).
    """
    path = Path(path)
    seen: set[str] = set()
    for number, data in iter_json_objects(path):
        prompt = _prompt_text(data)
        if prompt is None:
            raise InputDataError(str(path), number, "field prompt.0.content: missing")
        for passage in offline_passages(prompt, source=path.name):
            if passage.id not in seen and passage.text:
                seen.add(passage.id)
                yield passage


def write_offline_corpus(source: str | Path, out: str | Path) -> int:
    """Write :func:`offline_corpus` as corpus-builder JSONL (``{"id", "contents"}``); returns the count."""
    count = 0
    with atomic_writer(out) as handle:
        for passage in offline_corpus(source):
            handle.write(json.dumps({"id": passage.id, "contents": passage.text}, ensure_ascii=False) + "\n")
            count += 1
    return count


if __name__ == "__main__":  # python -m evigraph.agents.veri_r1.data OFFLINE.jsonl OUT.jsonl
    import sys

    if len(sys.argv) != 3:
        sys.exit("usage: python -m evigraph.agents.veri_r1.data test_offline.jsonl corpus_docs.jsonl")
    print(f"{write_offline_corpus(sys.argv[1], sys.argv[2])} entries written to {sys.argv[2]}")
