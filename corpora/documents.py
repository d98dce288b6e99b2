"""Reading source documents for a corpus: JSONL, TSV, or a folder of text files.

Accepted inputs, each line/file one document:

- **JSONL**: an object with ``id`` and ``text`` or ``contents`` (``title`` optional).
- **TSV**: ``id<TAB>text`` or ``id<TAB>title<TAB>text``; a first line ``id\\ttext`` / ``id\\ttitle\\ttext`` is
  taken as a header.
- **Folder**: every ``*.txt`` file below it; the id is the path relative to the folder without the suffix.

A bad record raises :class:`~evigraph.errors.InputDataError` naming ``file:line`` and the reason. Duplicate ids
are an error (agents cite ids, so they must be unique); empty texts are kept out of the corpus and reported.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError, InputDataError

__all__ = ("SourceDocument", "read_documents")


class SourceDocument(BaseModel):
    """One input document, before sentence grouping."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    title: str | None = None
    origin: str
    """``file:line`` (or the file path) the document came from, for error messages."""


def _from_jsonl(path: Path) -> Iterator[SourceDocument]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputDataError(str(path), number, f"not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise InputDataError(str(path), number, "expected a JSON object")
            doc_id = record.get("id")
            if not isinstance(doc_id, str | int) or isinstance(doc_id, bool) or str(doc_id).strip() == "":
                raise InputDataError(str(path), number, "field id: missing or not a string/integer")
            text = record.get("text", record.get("contents"))
            if not isinstance(text, str):
                raise InputDataError(str(path), number, "field text (or contents): missing or not a string")
            title = record.get("title")
            if title is not None and not isinstance(title, str):
                raise InputDataError(str(path), number, "field title: not a string")
            yield SourceDocument(id=str(doc_id), text=text, title=title, origin=f"{path}:{number}")


def _from_tsv(path: Path) -> Iterator[SourceDocument]:
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if number == 1 and [c.strip().lower() for c in row] in (["id", "text"], ["id", "title", "text"]):
                continue
            if len(row) == 2:
                doc_id, title, text = row[0], None, row[1]
            elif len(row) == 3:
                doc_id, title, text = row
            else:
                raise InputDataError(str(path), number, f"expected 2 or 3 tab-separated columns, got {len(row)}")
            if not doc_id.strip():
                raise InputDataError(str(path), number, "empty id")
            yield SourceDocument(id=doc_id.strip(), text=text, title=title, origin=f"{path}:{number}")


def _from_folder(path: Path) -> Iterator[SourceDocument]:
    for file in sorted(path.rglob("*.txt")):
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise InputDataError(str(file), 1, f"not UTF-8 text ({error.reason})") from None
        doc_id = file.relative_to(path).with_suffix("").as_posix()
        yield SourceDocument(id=doc_id, text=text, title=file.stem, origin=str(file))


def read_documents(path: str | Path) -> Iterator[SourceDocument]:
    """Yield the documents in ``path`` (JSONL, TSV or a folder of ``.txt`` files).

    Raises:
        ConfigError: the path does not exist or has an unsupported suffix.
        InputDataError: a bad record (``file:line``) or a duplicate id (naming both places).
    """
    path = Path(path)
    if path.is_dir():
        documents = _from_folder(path)
    elif not path.exists():
        raise ConfigError(f"input {path} does not exist")
    elif path.suffix in {".jsonl", ".json"}:
        documents = _from_jsonl(path)
    elif path.suffix in {".tsv", ".tab"}:
        documents = _from_tsv(path)
    else:
        raise ConfigError(f"input {path}: unsupported format; accepted: .jsonl, .tsv, or a folder of .txt files")
    seen: dict[str, str] = {}
    for document in documents:
        if document.id in seen:
            file, _, line = document.origin.rpartition(":")
            raise InputDataError(
                file or document.origin,
                int(line) if line.isdigit() else 1,
                f"duplicate id {document.id!r} (first seen at {seen[document.id]})",
            )
        seen[document.id] = document.origin
        yield document
