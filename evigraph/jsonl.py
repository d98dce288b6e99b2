"""JSONL reading and writing with errors that name ``file:line`` and the offending field.

Reading validates each line into a pydantic model; a bad line raises :class:`InputDataError` and never
silently drops data. Appending flushes and fsyncs each line, so a killed writer loses at most the line it
was writing (and :func:`read_jsonl` with ``tolerate_truncated_tail=True`` skips exactly that torn line).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evigraph.errors import InputDataError
from evigraph.files import atomic_writer

__all__ = (
    "append_jsonl",
    "format_validation_error",
    "iter_json_objects",
    "read_json_list",
    "read_jsonl",
    "repair_torn_tail",
    "write_jsonl",
)

logger = logging.getLogger(__name__)

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


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":  # JSON's whitespace
        position += 1
    return position


def _line_at(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise InputDataError(str(path), 1, f"not UTF-8 text ({error.reason})") from None


def read_json_list(path: Path) -> list[tuple[int, Any]]:
    """``(line, value)`` per element of the JSON list in ``path``, the line being where the element starts.

    For data sets published as one (pretty-printed) JSON list rather than JSONL; decoding element by element
    keeps real line numbers for error messages (``file:line: not valid JSON (...)``, an empty or non-UTF-8 file).
    """
    text = _read_text(path)

    def invalid(position: int, problem: str) -> InputDataError:
        return InputDataError(str(path), _line_at(text, position), f"not valid JSON ({problem})")

    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if not text.startswith("[", position):
        raise InputDataError(str(path), _line_at(text, position), "expected a JSON list of rows")
    position = _skip_space(text, position + 1)
    rows: list[tuple[int, Any]] = []
    line, counted = 1, 0
    more = not text.startswith("]", position)
    while more:
        line, counted = line + text.count("\n", counted, position), position
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise invalid(error.pos, f"{error.msg} at column {error.colno}") from None
        rows.append((line, value))
        position = _skip_space(text, position)
        if text.startswith(",", position):
            position = _skip_space(text, position + 1)
        elif text.startswith("]", position):
            more = False
        else:
            raise invalid(position, "expected ',' or ']' after a row")
    if _skip_space(text, position + 1) != len(text):
        raise invalid(position, "extra data after the list")
    return rows


def repair_torn_tail(path: Path) -> None:
    """Cut a last line that lacks its newline and is not valid JSON (a writer killed mid-line)."""
    with path.open("rb") as handle:
        data = handle.read()
    if not data or data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1  # 0 when the torn line is the whole file
    tail = data[cut:]
    try:
        json.loads(tail)
    except (json.JSONDecodeError, UnicodeDecodeError):
        logger.warning("%s: removing a torn last line (%d bytes) left by an interrupted run", path, len(tail))
        os.truncate(path, cut)
    else:
        # A complete record whose newline never made it: finish the line so the next append does not glue on.
        with path.open("ab") as handle:
            handle.write(b"\n")
    with path.open("rb+") as handle:
        os.fsync(handle.fileno())
