"""SEVA records: (claim, source, gold label) pairs from our JSONL, WiCE, or Veri-R1's offline files.

Accepted per line (the format is recognised from the line's keys; unknown keys are ignored):

- **ours**: ``{"id", "claim", "source", "label"?, "category"?, "parent_id"?}``; ``label`` takes the aliases of
  §3.5 (``Attributable``, ``not_attributable``, ``entailment``, ``true`` ...); ``category`` is the error type a
  generated probe was made with.
- **WiCE entailment_retrieval** (``supporting_sentences`` + ``evidence``): the source is the sentences of the
  first non-empty gold set, in document order; ``supported`` → Attributable, ``partially_supported`` and
  ``not_supported`` → Not Attributable. A claim without any gold sentence has no source and is skipped.
- **WiCE oracle_chunks** (``evidence`` + ``meta.oracle_idx``): the source is the chunk's sentences (gold plus
  distractors); one record per row, id ``<meta.id>/<row number of that claim>``.
- **Veri-R1 shared files** (``golden_answers`` + ``prompt``): the claim with its gold passages (from the
  offline prompt's candidate entries); ``SUPPORT(S/ED)`` → Attributable, ``REFUTE(S)``/``NOT_SUPPORTED`` → Not
  Attributable; NOT ENOUGH INFO and claims whose gold passages are not in the prompt are skipped.

Skipped lines are counted by reason (:class:`Loaded`), never dropped silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evigraph.agents.seva.schemas import ATTRIBUTABLE, NOT_ATTRIBUTABLE, SevaGold
from evigraph.errors import ConfigError, InputDataError
from evigraph.jsonl import format_validation_error, iter_json_objects

__all__ = ("Loaded", "SevaRecord", "load_seva_records", "record_from_mapping", "release_format")

_WICE_LABELS = {"supported": ATTRIBUTABLE, "partially_supported": NOT_ATTRIBUTABLE, "not_supported": NOT_ATTRIBUTABLE}
_VERI_R1_LABELS = {
    "SUPPORT": ATTRIBUTABLE, "SUPPORTS": ATTRIBUTABLE, "SUPPORTED": ATTRIBUTABLE,
    "REFUTE": NOT_ATTRIBUTABLE, "REFUTES": NOT_ATTRIBUTABLE, "NOT_SUPPORTED": NOT_ATTRIBUTABLE,
}  # fmt: skip


class SevaRecord(BaseModel):
    """One pair to verify, with its gold label when known."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    claim: str = Field(min_length=1)
    source: str = Field(min_length=1)
    gold: SevaGold | None = None
    parent_id: str | None = None
    """For a probe: the Attributable pair it was made from."""
    strategy: str | None = None
    """For a probe: the perturbation strategy."""

    def graph_input(self) -> dict[str, Any]:
        inputs: dict[str, Any] = {"id": self.id, "claim": self.claim, "source": self.source}
        if self.gold is not None:
            inputs["gold"] = {"label": self.gold.label}
        return inputs

    def line(self) -> dict[str, Any]:
        """Our JSONL form of this record."""
        line: dict[str, Any] = {"id": self.id, "claim": self.claim, "source": self.source}
        if self.gold is not None:
            line["label"] = self.gold.label
            if self.gold.category is not None:
                line["category"] = self.gold.category
        for key in ("parent_id", "strategy"):
            if getattr(self, key) is not None:
                line[key] = getattr(self, key)
        return line


class Loaded(BaseModel):
    """The records of a file and how many lines were skipped, by reason."""

    records: list[SevaRecord]
    skipped: dict[str, int] = Field(default_factory=dict)


def _ours(data: Mapping[str, Any]) -> SevaRecord:
    label = data.get("label")
    gold = None
    if label is not None:
        gold = SevaGold.model_validate({"label": label, "category": data.get("category")})
    return SevaRecord(
        id=str(data["id"]),
        claim=data["claim"],
        source=data["source"],
        gold=gold,
        parent_id=data.get("parent_id"),
        strategy=data.get("strategy"),
    )


def _wice_retrieval(data: Mapping[str, Any]) -> SevaRecord | str:
    sentences = data["evidence"]
    gold_set = next((s for s in data["supporting_sentences"] if s), None)
    if gold_set is None:
        return "WiCE claim without gold sentences"
    source = " ".join(sentences[i].strip() for i in sorted(set(gold_set)) if 0 <= i < len(sentences))
    return SevaRecord(
        id=str(data["meta"]["id"]),
        claim=data["claim"],
        source=source,
        gold=SevaGold(label=_WICE_LABELS[data["label"]]),
    )


def _wice_oracle(data: Mapping[str, Any], rows: Counter[str]) -> SevaRecord:
    meta = data["meta"]
    rows[meta["id"]] += 1  # several rows (annotators' gold sets) per claim: number them
    return SevaRecord(
        id=f"{meta['id']}/{rows[meta['id']]}",
        claim=data["claim"],
        source=" ".join(s.strip() for s in data["evidence"]),
        gold=SevaGold(label=_WICE_LABELS[data["label"]]),
    )


def _veri_r1(data: Mapping[str, Any]) -> SevaRecord | str:
    # Veri-R1's release format is read by that agent's own reader (one parser per format).
    from evigraph.agents.veri_r1.data import claim_record_from_mapping

    record = claim_record_from_mapping(data)
    if record.gold is None or record.gold.label not in _VERI_R1_LABELS:
        return "Veri-R1 claim without SUPPORT/REFUTE label"
    by_id = {p.id: p.text for p in record.passages}
    gold_ids = [e for e in record.gold.evidence if e in by_id]
    if not gold_ids or len(gold_ids) < len(record.gold.evidence):
        return "Veri-R1 claim whose gold passages are not all in its prompt"
    return SevaRecord(
        id=record.id,
        claim=record.claim,
        source="\n".join(by_id[e] for e in gold_ids),
        gold=SevaGold(label=_VERI_R1_LABELS[record.gold.label]),
    )


def release_format(data: Mapping[str, Any]) -> Literal["wice-retrieval", "wice-oracle", "veri-r1"] | None:
    """Which public release a line comes from, judged by its keys (``None``: our own format)."""
    if "supporting_sentences" in data:
        return "wice-retrieval"
    if "evidence" in data and isinstance(data.get("meta"), Mapping) and "claim" in data:
        return "wice-oracle"
    if "golden_answers" in data:
        return "veri-r1"
    return None


def record_from_mapping(data: Mapping[str, Any], rows: Counter[str] | None = None) -> SevaRecord | str:
    """One line as a record, or the reason it is skipped (``rows`` numbers WiCE oracle rows per claim across a
    file). Raises ValueError/KeyError naming a bad field."""
    release = release_format(data)
    if release == "wice-retrieval":
        return _wice_retrieval(data)
    if release == "wice-oracle":
        return _wice_oracle(data, rows if rows is not None else Counter())
    if release == "veri-r1":
        return _veri_r1(data)
    for key in ("id", "claim", "source"):
        if key not in data:
            raise KeyError(key)
    return _ours(data)


def load_seva_records(path: str | Path, *, unique_ids: bool = True) -> Loaded:
    """Every record of the JSONL file ``path`` (any format above); ``unique_ids=False`` keeps repeated ids
    (training data, where an id is no key).

    Raises:
        ConfigError: ``path`` is not a file.
        InputDataError: ``file:line`` and the bad field; a duplicate id; a file with no usable record.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such input file: {path}" if not path.exists() else f"not a file: {path}")
    records: list[SevaRecord] = []
    skipped: Counter[str] = Counter()
    rows: Counter[str] = Counter()
    first_line: dict[str, int] = {}
    for number, data in iter_json_objects(path):
        try:
            record = record_from_mapping(data, rows)
        except ValidationError as error:
            raise InputDataError(str(path), number, format_validation_error(error)) from None
        except KeyError as error:
            raise InputDataError(str(path), number, f"missing field {error}") from None
        except (ValueError, TypeError, IndexError) as error:
            raise InputDataError(str(path), number, str(error)) from None
        if isinstance(record, str):
            skipped[record] += 1
            continue
        if unique_ids and record.id in first_line:
            raise InputDataError(
                str(path), number, f"field id: duplicate id {record.id!r} (line {first_line[record.id]})"
            )
        first_line.setdefault(record.id, number)
        records.append(record)
    if not records:
        raise InputDataError(str(path), 1, f"no usable record (skipped: {dict(skipped) or 'none'})")
    return Loaded(records=records, skipped=dict(skipped))
