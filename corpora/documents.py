"""Reading source documents for a corpus: JSONL, TSV, a folder of text files, or a Pyserini ``JsonCollection``.

Accepted inputs, each line/file one document:

- **JSONL**: an object with ``id`` and ``text`` or ``contents`` (``title`` optional). A ``.json`` file may also
  hold one JSON array of such objects, as Pyserini's ``JsonCollection`` allows (read element by element).
  A record may carry its sentences already split (see :func:`given_sentences`): a ``sentences`` or ``lines``
  field (or the field named by ``sentences_field``) holding a list of strings, or FEVER's wiki-pages form, one
  string of ``\n``-separated ``<index>\t<sentence>[\t<link>...]`` lines. Those are grouped as given, with no
  splitting; ``text`` may then be left out (it is the sentences joined by spaces).
- **TSV**: ``id<TAB>text`` or ``id<TAB>title<TAB>text``; a first line ``id\\ttext`` / ``id\\ttitle\\ttext`` is
  taken as a header.
- **Folder of text files**: every ``*.txt`` file below it; the id is the path relative to the folder without
  the suffix.
- **Folder of JSON files** (a Pyserini ``JsonCollection``, the input of ``python -m pyserini.index.lucene
  --collection JsonCollection``): every ``*.jsonl`` / ``*.json`` file below it, in path order, read as above.
  A folder holding both kinds, or compressed files, is refused rather than half read.

A bad record raises :class:`~evigraph.errors.InputDataError` naming ``file:line`` and the reason. Duplicate ids
are an error (agents cite ids, so they must be unique); empty texts are kept out of the corpus and reported.

Everything streams: files are read line by line (a JSON array element by element), and the duplicate check
keeps 8 bytes per id (a 64-bit digest), confirmed against the real ids by a second pass only when two digests
meet, so memory stays flat as the corpus grows to millions of documents.
"""

from __future__ import annotations

import csv
import hashlib
import json
from array import array
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError, InputDataError

__all__ = ("AUTO_SENTENCE_FIELDS", "SourceDocument", "given_sentences", "read_documents", "source_files")

_JSON_SUFFIXES = (".jsonl", ".json")
_CHUNK = 1 << 16

AUTO_SENTENCE_FIELDS = ("sentences", "lines")
"""Fields read as source-given sentences when ``sentences_field="auto"`` (``lines``: FEVER's wiki pages)."""


class SourceDocument(BaseModel):
    """One input document, before sentence grouping."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    title: str | None = None
    origin: str
    """``file:line`` (or the file path) the document came from, for error messages."""
    sentences: tuple[str, ...] | None = None
    """Sentences the source gave, by position (FEVER's line numbers: a blank one keeps its place); ``None``:
    split ``text`` when grouping."""


def _is_json_array(path: Path) -> bool:
    with path.open(encoding="utf-8") as handle:
        while chunk := handle.read(4096):
            if stripped := chunk.lstrip():
                return stripped.startswith("[")
    return False


def _array_records(path: Path) -> Iterator[tuple[int, object]]:
    """(line, element) of a file holding one JSON array; the line is where the element starts.

    Decoded element by element from a sliding buffer, so a large array is never held whole.
    """
    decoder = json.JSONDecoder()
    with path.open(encoding="utf-8") as handle:
        buffer, position, line, eof = "", 0, 1, False

        def more(size: int) -> bool:
            nonlocal buffer, position, eof
            chunk = handle.read(size)
            eof = not chunk
            buffer, position = buffer[position:] + chunk, 0
            return bool(chunk)

        def skip(separators: str) -> None:
            nonlocal position, line
            while True:
                while position < len(buffer) and buffer[position] in separators:
                    line += buffer[position] == "\n"
                    position += 1
                if position < len(buffer) or not more(_CHUNK):
                    return

        skip(" \t\r\n")
        if buffer[position : position + 1] != "[":
            raise InputDataError(str(path), line, "not valid JSON (expected an array)")
        position += 1
        while True:
            skip(" \t\r\n,")
            if position >= len(buffer):
                raise InputDataError(str(path), line, "not valid JSON (the array is not closed)")
            if buffer[position] == "]":
                return
            size = _CHUNK
            while True:
                try:
                    element, end = decoder.raw_decode(buffer, position)
                    break
                except json.JSONDecodeError as error:
                    # A truncated element fails too: read on (doubling, so a huge element costs linear time).
                    if eof or not more(size):
                        raise InputDataError(
                            str(path), line + buffer.count("\n", position, error.pos), f"not valid JSON ({error.msg})"
                        ) from None
                    size *= 2
            yield line, element
            line += buffer.count("\n", position, end)
            position = end


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


def given_sentences(value: object) -> tuple[str, ...] | None:
    """Source-given sentences from a record field, or ``None`` if ``value`` is neither accepted form.

    Accepted: a list of strings (used as is), or FEVER's wiki-pages ``lines`` string: ``\n``-separated lines
    ``<index>\t<sentence>`` followed by optional ``\t<link text>\t<linked page>`` pairs; the sentence goes to
    position ``<index>`` (gaps and blank sentences stay as empty strings, so positions keep FEVER's line
    numbers). An empty string is a page without sentences.
    """
    if isinstance(value, list):
        return tuple(value) if all(isinstance(item, str) for item in value) else None
    if not isinstance(value, str):
        return None
    sentences: list[str] = []
    for row in value.split("\n"):
        if not row.strip():
            continue
        index, _, rest = row.partition("\t")
        if not index.isdigit():
            return None
        position = int(index)
        sentences.extend([""] * (position + 1 - len(sentences)))
        sentences[position] = rest.partition("\t")[0]
    return tuple(sentences)


def _record_sentences(
    record: dict[str, object], sentences_field: str, file: str, number: int
) -> tuple[str, ...] | None:
    if sentences_field == "none":
        return None
    fields = AUTO_SENTENCE_FIELDS if sentences_field == "auto" else (sentences_field,)
    for field in fields:
        if field not in record:
            continue
        sentences = given_sentences(record[field])
        if sentences is None and sentences_field == "auto":
            continue  # a field of that name that is not sentences (e.g. a line count): split the text as before
        if sentences is None:
            raise InputDataError(
                file,
                number,
                f"field {field}: expected a list of sentence strings or FEVER's '<index>\\t<sentence>' lines",
            )
        return sentences
    if sentences_field != "auto":
        raise InputDataError(file, number, f"field {sentences_field}: missing (named by --sentences-field)")
    return None


def _from_jsonl(path: Path, sentences_field: str = "auto") -> Iterator[SourceDocument]:
    records = _array_records(path) if path.suffix == ".json" and _is_json_array(path) else _line_records(path)
    for number, record in records:
        if not isinstance(record, dict):
            raise InputDataError(str(path), number, "expected a JSON object")
        doc_id = record.get("id")
        if not isinstance(doc_id, str | int) or isinstance(doc_id, bool) or str(doc_id).strip() == "":
            raise InputDataError(str(path), number, "field id: missing or not a string/integer")
        sentences = _record_sentences(record, sentences_field, str(path), number)
        text = record.get("text", record.get("contents"))
        if text is None and sentences is not None:
            text = " ".join(sentence for sentence in sentences if sentence)
        if not isinstance(text, str):
            raise InputDataError(str(path), number, "field text (or contents): missing or not a string")
        title = record.get("title")
        if title is not None and not isinstance(title, str):
            raise InputDataError(str(path), number, "field title: not a string")
        yield SourceDocument(id=str(doc_id), text=text, title=title, origin=f"{path}:{number}", sentences=sentences)


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


def _from_folder(path: Path, sentences_field: str = "auto") -> Iterator[SourceDocument]:
    files = source_files(path)
    if files and files[0].suffix in _JSON_SUFFIXES:
        for file in files:
            yield from _from_jsonl(file, sentences_field)
        return
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise InputDataError(str(file), 1, f"not UTF-8 text ({error.reason})") from None
        doc_id = file.relative_to(path).with_suffix("").as_posix()
        yield SourceDocument(id=doc_id, text=text, title=file.stem, origin=str(file))


def _documents(path: Path, sentences_field: str) -> Iterator[SourceDocument]:
    if path.is_dir():
        return _from_folder(path, sentences_field)
    if not path.exists():
        raise ConfigError(f"input {path} does not exist")
    if path.suffix in {".jsonl", ".json"}:
        return _from_jsonl(path, sentences_field)
    if path.suffix in {".tsv", ".tab"}:
        return _from_tsv(path)
    raise ConfigError(
        f"input {path}: unsupported format; accepted: .jsonl, .json, .tsv, or a folder of .txt files or of "
        ".jsonl/.json files (a Pyserini JsonCollection)"
    )


def _digest(doc_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(doc_id.encode(), digest_size=8).digest(), "little")


def _duplicate(path: Path, sentences_field: str, digests: set[int]) -> InputDataError | None:
    """The first real duplicate among the ids whose digests collided (a second pass over the input)."""
    seen: dict[str, str] = {}
    for document in _documents(path, sentences_field):
        if _digest(document.id) not in digests:
            continue
        if document.id in seen:
            file, _, line = document.origin.rpartition(":")
            return InputDataError(
                file or document.origin,
                int(line) if line.isdigit() else 1,
                f"duplicate id {document.id!r} (first seen at {seen[document.id]})",
            )
        seen[document.id] = document.origin
    return None


def read_documents(path: str | Path, *, sentences_field: str = "auto") -> Iterator[SourceDocument]:
    """Yield the documents in ``path`` (JSONL, TSV, a folder of ``.txt`` files or a ``JsonCollection`` folder).

    Args:
        path: the input.
        sentences_field: the JSON field holding source-given sentences; ``"auto"`` reads ``sentences`` or
            ``lines`` when a record has one in an accepted form (else the text is split, as without them), a
            name requires that field in that form on every record, ``"none"`` ignores them.

    Raises:
        ConfigError: the path does not exist or has an unsupported suffix.
        InputDataError: a bad record (``file:line``) or a duplicate id (naming both places; found once the
            input is read through, before anything is indexed).
    """
    path = Path(path)
    documents = _documents(path, sentences_field)
    digests = array("Q")
    for document in documents:
        digests.append(_digest(document.id))
        yield document
    import numpy as np

    ordered = np.sort(np.frombuffer(digests, dtype=np.uint64))
    collided = ordered[1:][ordered[1:] == ordered[:-1]]
    if collided.size and (error := _duplicate(path, sentences_field, {int(x) for x in collided})) is not None:
        raise error
