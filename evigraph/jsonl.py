"""JSONL reading and writing with errors that name ``file:line`` and the offending field.

Reading validates each line into a pydantic model; a bad line raises :class:`InputDataError` and never
silently drops data. Appending flushes and fsyncs each line, so a killed writer loses at most the line it
was writing (and :func:`read_jsonl` with ``tolerate_truncated_tail=True`` skips exactly that torn line).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from evigraph.errors import InputDataError
from evigraph.files import atomic_writer

__all__ = ("append_jsonl", "format_validation_error", "iter_json_objects", "read_jsonl", "write_jsonl")

ModelT = TypeVar("ModelT", bound=BaseModel)


def format_validation_error(error: ValidationError) -> str:
    """One line per problem: ``field.path: message`` (what pydantic found, without its URL noise)."""
    parts = []
    for problem in error.errors(include_url=False):
        location = ".".join(str(p) for p in problem["loc"]) or "<record>"
        parts.append(f"field {location}: {problem['msg']}")
    return "; ".join(parts)


def iter_json_objects(
    path: str | os.PathLike[str], *, tolerate_truncated_tail: bool = False
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-empty line of ``path``.

    Args:
        path: the JSONL file.
        tolerate_truncated_tail: skip a last line that is not valid JSON *and* lacks a final newline
            (the signature of a writer killed mid-line); anything else still raises.

    Raises:
        InputDataError: ``file:line`` and what is wrong (not JSON, or not an object).
    """
    path = Path(path)
    with path.open("r", encoding="utf-8") as handle:
        lines = handle.readlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            is_torn_tail = number == len(lines) and not line.endswith("\n")
            if tolerate_truncated_tail and is_torn_tail:
                return
            raise InputDataError(str(path), number, f"not valid JSON ({error.msg} at column {error.colno})") from None
        if not isinstance(data, dict):
            raise InputDataError(str(path), number, f"expected a JSON object, got {type(data).__name__}")
        yield number, data


def read_jsonl(
    path: str | os.PathLike[str],
    model: type[ModelT],
    *,
    tolerate_truncated_tail: bool = False,
) -> Iterator[ModelT]:
    """Yield one validated ``model`` per non-empty line of ``path``.

    Raises:
        InputDataError: ``file:line`` plus the JSON error or the invalid field.
    """
    for number, data in iter_json_objects(path, tolerate_truncated_tail=tolerate_truncated_tail):
        try:
            yield model.model_validate(data)
        except ValidationError as error:
            raise InputDataError(str(path), number, format_validation_error(error)) from None


def write_jsonl(path: str | os.PathLike[str], records: Iterable[BaseModel]) -> int:
    """Write ``records`` to ``path`` (replacing it atomically); returns the number written."""
    count = 0
    with atomic_writer(path) as handle:
        for record in records:
            handle.write(record.model_dump_json() + "\n")
            count += 1
    return count


def append_jsonl(path: str | os.PathLike[str], record: BaseModel) -> None:
    """Append one record durably (flush + fsync), so a crash never leaves a half-written earlier line."""
    with Path(path).open("a", encoding="utf-8") as handle:
        handle.write(record.model_dump_json() + "\n")
        handle.flush()
        os.fsync(handle.fileno())
