"""Reading evaluation input: every line is validated before anything runs.

An eval over thousands of records must not die at record 900 because of a typo on line 900, so
:func:`load_records` parses the whole file up front and raises :class:`InputDataError` with ``file:line``
on the first bad line (bad JSON, not an object, a schema error naming the field, a duplicate id naming both
lines). Ids are unique where they are keys (an eval's resume key, a gold or prediction file keyed by id); a
training read passes ``unique_ids=False``, since a training record is no key and released training files repeat
ids (Veri-R1's ``train_online.jsonl``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from evigraph.errors import ConfigError, InputDataError
from evigraph.jsonl import format_validation_error, iter_json_objects

__all__ = ("load_records", "subset")

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
