"""What a built corpus holds: its documents (ids, titles, entry counts) read back from its collection.

A corpus directory (:mod:`corpora.build`) keeps every entry in ``collection/docs.jsonl``, written document by
document, so one pass in order tells the documents apart without holding them all: a new ``doc_id`` starts a
new document. Only the first ``limit`` documents are kept in full; the totals cover the whole corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from evigraph.errors import ConfigError, InputDataError

__all__ = ("CorpusContents", "DocumentSummary", "corpus_contents")

PREVIEW_CHARS = 80
"""How much of a document's first entry a listing shows."""

_SENTENCE_SUFFIX = "_sentence_"


class DocumentSummary(BaseModel):
    """One document of a built corpus."""

    id: str
    title: str | None = None
    entries: int
    """Retrieval entries made from the document (one, or one per group of ``group_sentences`` sentences)."""
    characters: int
    """Characters of text over its entries."""
    first_entry: str
    """The id an agent cites for the document's opening (``<id>_sentence_0`` when sentences are grouped)."""
    preview: str
    """The start of its first entry, whitespace collapsed, cut at :data:`PREVIEW_CHARS` characters (then ending
    in ``…``)."""


class CorpusContents(BaseModel):
    """A corpus's totals and its first documents."""

    name: str
    path: str
    documents: int
    entries: int
    characters: int
    group_sentences: int | None = None
    """Sentences per entry (``None``: one entry per document)."""
    empty_documents: list[str] = []
    """Source documents with no text, left out when the corpus was built."""
    shown: list[DocumentSummary]


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _document_id(record: dict[str, object]) -> str:
    """The entry's document: its ``doc_id``, or, in builds that stored none, the id before ``_sentence_k``."""
    doc_id = record.get("doc_id")
    if isinstance(doc_id, str) and doc_id:
        return doc_id
    entry_id = str(record["id"])
    stem, sep, index = entry_id.rpartition(_SENTENCE_SUFFIX)
    return stem if sep and index.isdigit() else entry_id


def _manifest(directory: Path) -> dict[str, object]:
    path = directory / "manifest.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputDataError(str(path), error.lineno, f"not valid JSON ({error.msg})") from None
    return data if isinstance(data, dict) else {}


def corpus_contents(directory: str | Path, *, name: str, limit: int | None = None) -> CorpusContents:
    """The documents of the corpus built in ``directory`` (the first ``limit`` in full; ``None``: all).

    Raises:
        ConfigError: ``directory`` holds no collection (not a corpus built by ``evigraph corpus build``).
        InputDataError: a collection line that is not an entry (``file:line``).
    """
    directory = Path(directory)
    collection = directory / "collection" / "docs.jsonl"
    if not collection.is_file():
        raise ConfigError(
            f"{directory} has no collection/docs.jsonl: only a corpus directory built by `evigraph corpus build` "
            "(or a bundled corpus) can be listed, not a bare Lucene index"
        )
    shown: list[DocumentSummary] = []
    documents = entries = characters = 0
    current: str | None = None
    summary: DocumentSummary | None = None
    with collection.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                entry_id, text = str(record["id"]), record["contents"]
            except (json.JSONDecodeError, KeyError, TypeError) as error:
                raise InputDataError(str(collection), number, f"not a corpus entry ({error})") from None
            entries += 1
            characters += len(text)
            doc_id = _document_id(record)
            if doc_id != current:  # entries are written document by document
                current = doc_id
                documents += 1
                if limit is None or len(shown) < limit:
                    title = record.get("title") or None
                    summary = DocumentSummary(
                        id=doc_id,
                        title=title,
                        entries=0,
                        characters=0,
                        first_entry=entry_id,
                        preview=_preview(text),
                    )
                    shown.append(summary)
                else:
                    summary = None
            if summary is not None:
                summary.entries += 1
                summary.characters += len(text)
    manifest = _manifest(directory)
    params = manifest.get("params")
    group = params.get("group_sentences") if isinstance(params, dict) else None
    empty = manifest.get("empty_documents")
    return CorpusContents(
        name=name,
        path=str(directory),
        documents=documents,
        entries=entries,
        characters=characters,
        group_sentences=group if isinstance(group, int) else None,
        empty_documents=[str(e) for e in empty] if isinstance(empty, list) else [],
        shown=shown,
    )
