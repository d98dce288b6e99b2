"""Reading evaluation input: every line is validated before anything runs.

An eval over thousands of records must not die at record 900 because of a typo on line 900, so
:func:`load_records` parses the whole file up front and raises :class:`InputDataError` with ``file:line``
on the first bad line (bad JSON, not an object, a schema error naming the field, a duplicate id naming both
lines). Ids are unique where they are keys (an eval's resume key, a gold or prediction file keyed by id); a
training read passes ``unique_ids=False``, since a training record is no key and released training files repeat
ids (Veri-R1's ``train_online.jsonl``). :func:`check_gold` then checks, still before anything runs, that every
record carries the gold answer its scorer needs (or that none does: a run without metrics).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evigraph.errors import ConfigError, InputDataError
from evigraph.jsonl import format_validation_error, iter_json_objects

__all__ = ("check_gold", "gold_fields", "load_records", "subset")

T = TypeVar("T")


def load_records(
    path: str | Path,
    parse: Callable[[dict], T],
    *,
    id_of: Callable[[T], str],
    limit: int | None = None,
    shuffle_seed: int | None = None,
    tolerate_truncated_tail: bool = False,
    unique_ids: bool = True,
) -> list[T]:
    """Read and validate every record of the JSONL file ``path``, then pick the subset to run.

    Args:
        path: the JSONL input; blank lines are skipped.
        parse: turns one JSON object into a record (e.g. ``Model.model_validate``); a ``ValueError``,
            ``KeyError`` or pydantic ``ValidationError`` it raises becomes an :class:`InputDataError`.
        id_of: the record's id; ids must be non-empty strings, unique in the file (see ``unique_ids``).
        limit: keep at most this many records (after shuffling, if ``shuffle_seed`` is given).
        shuffle_seed: shuffle deterministically with ``random.Random(shuffle_seed)`` before ``limit``, so
            ``--limit 10 --seed 3`` is a reproducible random subset (and a prefix of ``--limit 20 --seed 3``).
        tolerate_truncated_tail: skip a torn last line (a file another process is still appending to).
        unique_ids: refuse a repeated id (default); ``False`` keeps every record, repeats included (training
            data, where an id is no key).

    Raises:
        ConfigError: ``path`` does not exist or is not a file; ``limit`` is negative.
        InputDataError: the first bad line, as ``file:line: message``; an empty file.
    """
    path = Path(path)
    if limit is not None and limit < 0:
        raise ConfigError(f"limit must be >= 0, got {limit}", source="--limit")
    if not path.is_file():
        raise ConfigError(f"no such input file: {path}" if not path.exists() else f"not a file: {path}")

    records: list[T] = []
    first_line_of: dict[str, int] = {}
    for number, data in iter_json_objects(path, tolerate_truncated_tail=tolerate_truncated_tail):
        record = _parse(path, number, data, parse)
        try:
            record_id = id_of(record)
        except (ValueError, KeyError, AttributeError) as error:
            raise InputDataError(str(path), number, f"cannot read the record id: {error}") from None
        if not isinstance(record_id, str) or not record_id:
            raise InputDataError(str(path), number, f"record id must be a non-empty string, got {record_id!r}")
        if unique_ids and record_id in first_line_of:
            raise InputDataError(
                str(path),
                number,
                f"field id: duplicate id {record_id!r} (lines {first_line_of[record_id]} and {number})",
            )
        first_line_of.setdefault(record_id, number)
        records.append(record)
    if not records:
        raise InputDataError(str(path), 1, "the file holds no records")

    return subset(records, limit=limit, shuffle_seed=shuffle_seed)


def subset(records: list[T], *, limit: int | None, shuffle_seed: int | None) -> list[T]:
    """The ``--limit``/``--seed`` choice of :func:`load_records` for records read any other way."""
    if limit is not None and limit < 0:
        raise ConfigError(f"limit must be >= 0, got {limit}", source="--limit")
    if shuffle_seed is not None:
        records = list(records)
        random.Random(shuffle_seed).shuffle(records)
    return records if limit is None else records[:limit]


def gold_fields(schema: type[BaseModel]) -> tuple[tuple[str, ...], bool]:
    """The fields a record's gold answer needs, from the scorer's gold schema, and whether each is needed:
    ``(fields without a default, True)``, or ``(every field, False)`` where all have defaults (then a record
    gives at least one of them)."""
    required = tuple(name for name, field in schema.model_fields.items() if field.is_required())
    return (required, True) if required else (tuple(schema.model_fields), False)


def check_gold(
    path: str | Path,
    records: Sequence[T],
    *,
    id_of: Callable[[T], str],
    has_gold: Callable[[T], bool],
    schema: type[BaseModel] | None,
    scorer: str,
) -> bool:
    """Check that every record carries its gold answer, or that none does (a run without metrics).

    A record without gold among records with gold would otherwise run and only fail at scoring time, after the
    whole run. ``schema`` is the scorer's gold schema (:func:`gold_fields` names the missing fields); ``scorer``
    names it in the message (``"the scorer of veri-r1"``).

    Returns:
        Whether the records carry gold answers.

    Raises:
        InputDataError: the first record (in file order) with no gold answer where others have one, as
            ``file:line: field 'label' is missing (the scorer of veri-r1 needs it)``.
    """
    without = [record for record in records if not has_gold(record)]
    if not without or len(without) == len(records):
        return not without
    path = Path(path)
    raw = _raw_lines(path)
    first = min(without, key=lambda record: raw.get(id_of(record), (len(raw) + 1, {}))[0])
    line, data = raw.get(id_of(first), (0, {}))
    fields, all_needed = gold_fields(schema) if schema is not None else ((), True)
    missing = [name for name in fields if name not in data] or list(fields)
    names = ", ".join(repr(name) for name in missing)
    if not missing:
        problem = f"no gold answer ({scorer} needs one)"
    elif not all_needed:
        problem = f"no gold answer ({scorer} needs one of the fields {names})"
    elif len(missing) == 1:
        problem = f"field {names} is missing ({scorer} needs it)"
    else:
        problem = f"fields {names} are missing ({scorer} needs them)"
    if line:
        raise InputDataError(str(path), line, problem)
    # A record read from a folder or another layout has no line of its own: name it by id.
    raise InputDataError(str(path), 1, f"record {id_of(first)!r}: {problem}")


def _raw_lines(path: Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """``id → (line, object)`` of a JSONL file; empty for anything else (a folder, another layout)."""
    if not path.is_file():
        return {}
    found: dict[str, tuple[int, dict[str, Any]]] = {}
    try:
        for number, data in iter_json_objects(path):
            found.setdefault(str(data.get("id")), (number, data))
    except (InputDataError, ValueError, UnicodeDecodeError):
        return {}
    return found


def _parse(path: Path, number: int, data: dict, parse: Callable[[dict], T]) -> T:
    try:
        return parse(data)
    # ValidationError subclasses ValueError: catch it first to get the field-level message.
    except ValidationError as error:
        raise InputDataError(str(path), number, format_validation_error(error)) from None
    except KeyError as error:
        raise InputDataError(str(path), number, f"missing field {error}") from None
    except ValueError as error:
        raise InputDataError(str(path), number, str(error)) from None
