"""Veri-R1 gold records: the shared eval files as they are, or a native ``{id, claim, label, evidence}`` schema,
and the one place where gold evidence ids are normalised for comparison.

Accepted per line (other keys ignored):

- shared files (``eval_*.jsonl``): ``id`` (string or integer), ``question`` (the claim),
  ``golden_answers: {label, evidence}`` or ``reward_model: {ground_truth: {label, evidence}}``,
  ``data_source``;
- native: ``id``, ``claim`` (optional), ``label``, ``evidence`` (a list of ids), ``dataset`` (optional).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from evigraph.agents.veri_r1.labels import GoldLabel, normalize_gold_label, normalize_id
from evigraph.jsonl import format_validation_error

__all__ = ("GoldRecord", "gold_evidence", "read_gold")

_HOVER_SENTENCE = re.compile(r"_sentence.*\Z", re.DOTALL)


class GoldRecord(BaseModel):
    """The gold answer for one claim; ``evidence`` holds the ids exactly as the file stores them.

    Also the Veri-R1 rewards' gold schema: ``GoldRecord.model_validate({"label": "REFUTES", "evidence": [...]})``
    takes any label spelling (the graph's ``gold`` input, a training label).
    """

    model_config = ConfigDict(frozen=True)

    id: str | None = None
    """The claim's id (``None`` for a gold answer given without one, e.g. to a graph run)."""
    claim: str | None = None
    label: GoldLabel
    raw_label: str = ""
    """The label as written in the file (``SUPPORTS``, ``NOT_SUPPORTED`` ...); filled from ``label`` when not given
    (a default, so that the gold fields a record needs, read from this schema, are ``label`` alone)."""
    evidence: tuple[str, ...] = ()
    dataset: str | None = None
    """Source dataset (``fever``, ``hover`` ...); HoVer ids are compared at page level."""

    @model_validator(mode="before")
    @classmethod
    def _normalise_label(cls, data: Any) -> Any:
        # Any accepted spelling in, the canonical label stored; the spelling is kept as raw_label.
        if isinstance(data, Mapping) and isinstance(data.get("label"), str):
            raw = data.get("raw_label") or data["label"]
            data = {**data, "label": normalize_gold_label(data["label"]), "raw_label": raw}
        return data

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> GoldRecord:
        """Read one record in either accepted schema (see the module docstring).

        Raises:
            ValueError: ``field <name>: <problem>`` for a missing or invalid field.
        """
        record_id = data.get("id")
        if record_id is None:
            raise ValueError("field id: missing")
        if isinstance(record_id, bool) or not isinstance(record_id, str | int):
            raise ValueError(f"field id: expected a string or an integer, got {type(record_id).__name__}")
        if isinstance(data.get("golden_answers"), Mapping):
            answer, where = data["golden_answers"], "golden_answers."
        elif isinstance(data.get("reward_model"), Mapping) and isinstance(
            data["reward_model"].get("ground_truth"), Mapping
        ):
            answer, where = data["reward_model"]["ground_truth"], "reward_model.ground_truth."
        else:
            answer, where = data, ""
        raw_label = answer.get("label")
        if not isinstance(raw_label, str):
            raise ValueError(f"field {where}label: missing or not a string")
        try:
            label = normalize_gold_label(raw_label)
        except ValueError as error:
            raise ValueError(f"field {where}label: {error}") from None
        evidence = answer.get("evidence")
        if not isinstance(evidence, list | tuple):
            raise ValueError(f"field {where}evidence: missing or not a list of ids")
        for position, item in enumerate(evidence):
            if not isinstance(item, str):
                raise ValueError(f"field {where}evidence.{position}: expected a string id, got {item!r}")
        claim = data.get("claim", data.get("question"))
        dataset = data.get("dataset", data.get("data_source"))
        try:
            return cls(
                id=str(record_id),
                claim=claim if isinstance(claim, str) else None,
                label=label,
                raw_label=raw_label,
                evidence=tuple(evidence),
                dataset=dataset if isinstance(dataset, str) else None,
            )
        except ValidationError as error:
            raise ValueError(format_validation_error(error)) from None


def read_gold(path: str | os.PathLike[str]) -> dict[str, GoldRecord]:
    """Every gold record of a JSONL file, keyed by id (blank lines skipped).

    Raises:
        InputDataError: ``file:line`` with the JSON problem, the invalid field, or a duplicate id (naming the
            line that had it first).
    """
    from evigraph.evaluation.records import load_records

    return {r.id: r for r in load_records(path, GoldRecord.from_mapping, id_of=lambda r: r.id)}


def _is_hover(gold: GoldRecord) -> bool:
    return (gold.dataset or "").strip().lower() == "hover"


def gold_evidence(gold: GoldRecord, *, compat: bool, hover_titles: bool = True) -> frozenset[str]:
    """The gold id set as compared with predictions.

    - clean mode (``compat=False``): every id stripped and NFC-composed, like predicted ids;
    - compat mode: ids raw, exactly as stored -- the reference composes only predicted ids, so gold ids stored
      in NFD never match (the "NFD quirk", research notes §1.2).

    In both modes HoVer ids are cut to the page title (``Title_sentence_3`` → ``Title``) because the
    reference serves HoVer entries at page level; ``hover_titles=False`` keeps sentence ids.
    """
    ids = gold.evidence
    if hover_titles and _is_hover(gold):
        ids = tuple(_HOVER_SENTENCE.sub("", i) for i in ids)
    return frozenset(ids) if compat else frozenset(normalize_id(i) for i in ids)
