"""Reading source documents for a corpus: JSONL, TSV, a folder of text files, or a Pyserini ``JsonCollection``.

Accepted inputs, each line/file one document:

- **JSONL**: an object with ``id`` and ``text`` or ``contents`` (``title`` optional). A ``.json`` file may also
  hold one JSON array of such objects, as Pyserini's ``JsonCollection`` allows.
- **TSV**: ``id<TAB>text`` or ``id<TAB>title<TAB>text``; a first line ``id\\ttext`` / ``id\\ttitle\\ttext`` is
  taken as a header.
- **Folder of text files**: every ``*.txt`` file below it; the id is the path relative to the folder without
  the suffix.
- **Folder of JSON files** (a Pyserini ``JsonCollection``, the input of ``python -m pyserini.index.lucene
  --collection JsonCollection``): every ``*.jsonl`` / ``*.json`` file below it, in path order, read as above.
  A folder holding both kinds, or compressed files, is refused rather than half read.

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

__all__ = ("SourceDocument", "read_documents", "source_files")

_JSON_SUFFIXES = (".jsonl", ".json")


class SourceDocument(BaseModel):
    """One input document, before sentence grouping."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    title: str | None = None
    origin: str
    """``file:line`` (or the file path) the document came from, for error messages."""


def _is_json_array(path: Path) -> bool:
    with path.open(encoding="utf-8") as handle:
        while chunk := handle.read(4096):
            if stripped := chunk.lstrip():
                return stripped.startswith("[")
    return False


def _array_records(path: Path) -> Iterator[tuple[int, object]]:
    """(line, element) of a file holding one JSON array; the line is where the element starts."""
    text = path.read_text(encoding="utf-8")
    try:
        elements = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputDataError(str(path), error.lineno, f"not valid JSON ({error.msg})") from None
    # The file is valid JSON, so stepping over separators and decoding element by element finds each start.
    decoder = json.JSONDecoder()
    position, line = text.index("[") + 1, 1
    for _ in elements:
        start = position
        while text[position] in " \t\r\n,":
            position += 1
        line += text.count("\n", start, position)
        start = position
        element, position = decoder.raw_decode(text, position)
        yield line, element
        line += text.count("\n", start, position)


def _line_records(path: Path) -> Iterator[tuple[int, object]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputDataError(str(path), number, f"not valid JSON ({error.msg})") from None
            yield number, record


def _from_jsonl(path: Path) -> Iterator[SourceDocument]:
    records = _array_records(path) if path.suffix == ".json" and _is_json_array(path) else _line_records(path)
    for number, record in records:
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


def source_files(path: Path) -> list[Path]:
    """The files a folder input is read from, in reading order: its ``.txt`` files, or else its ``.jsonl`` /
    ``.json`` files (a ``JsonCollection``).

    Raises:
        ConfigError: the folder holds both kinds, or compressed files (Pyserini reads ``.gz``; we do not).
    """
    texts = sorted(path.rglob("*.txt"))
    jsons = sorted(file for suffix in _JSON_SUFFIXES for file in path.rglob(f"*{suffix}"))
    if texts and jsons:
        raise ConfigError(
            f"input folder {path} holds both .txt files (e.g. {texts[0]}) and JSON files (e.g. {jsons[0]}); "
            "a folder is either text files or a Pyserini JsonCollection"
        )
    if not texts and (compressed := sorted(path.rglob("*.gz"))):
        raise ConfigError(f"input folder {path}: compressed files are not read ({compressed[0]}); decompress them")
    return texts or jsons


def _from_folder(path: Path) -> Iterator[SourceDocument]:
    files = source_files(path)
    if files and files[0].suffix in _JSON_SUFFIXES:
        for file in files:
            yield from _from_jsonl(file)
        return
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise InputDataError(str(file), 1, f"not UTF-8 text ({error.reason})") from None
        doc_id = file.relative_to(path).with_suffix("").as_posix()
        yield SourceDocument(id=doc_id, text=text, title=file.stem, origin=str(file))


def read_documents(path: str | Path) -> Iterator[SourceDocument]:
    """Yield the documents in ``path`` (JSONL, TSV, a folder of ``.txt`` files or a ``JsonCollection`` folder).

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
        raise ConfigError(
            f"input {path}: unsupported format; accepted: .jsonl, .json, .tsv, or a folder of .txt files or of "
            ".jsonl/.json files (a Pyserini JsonCollection)"
        )
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
