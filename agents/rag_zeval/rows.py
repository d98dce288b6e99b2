"""Rows of data sets published as one JSON list (RAGChecker's and WikiEval's releases): each row with where it
was read, so an error found while reading -- or later, when rows are joined -- names the file, line and row."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError, InputDataError
from evigraph.jsonl import read_json_list

__all__ = ("Origin", "object_rows", "row_text")

_FROZEN = ConfigDict(frozen=True)


class Origin(BaseModel):
    """Where a row was read, so errors found later (the join) still name the file, line and row."""

    model_config = _FROZEN

    path: str
    line: int
    index: int
    """0-based position of the row in its file."""

    def error(self, message: str) -> InputDataError:
        return InputDataError(self.path, self.line, f"row [{self.index}]: {message}")


def object_rows(path: str | Path) -> list[tuple[Origin, Mapping[str, Any]]]:
    """Every row of a JSON-list file, each a JSON object, with its origin."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such input file: {path}" if not path.exists() else f"not a file: {path}")
    rows = []
    for index, (line, row) in enumerate(read_json_list(path)):
        origin = Origin(path=str(path), line=line, index=index)
        if not isinstance(row, dict):
            raise origin.error(f"expected a JSON object, got {type(row).__name__}")
        rows.append((origin, row))
    if not rows:
        raise InputDataError(str(path), 1, "no rows (an empty list)")
    return rows


def row_text(row: Mapping[str, Any], name: str, origin: Origin) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise origin.error(f"field {name}: expected a non-empty string, got {value!r}")
    return value
