"""The listing of a corpus that ``evigraph corpus show`` prints: totals and one summary per document.

Shared by the two readers, a corpus directory's collection (:mod:`corpora.contents`) and a bare Lucene index
(:mod:`corpora.index_contents`), so both list the same columns.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

__all__ = ("PREVIEW_CHARS", "CorpusContents", "DocumentSummary", "document_id", "preview", "sentence_start")

PREVIEW_CHARS = 80
"""How much of a document's first entry a listing shows."""

_SENTENCE_SUFFIX = "_sentence_"


class DocumentSummary(BaseModel):
    """One document of a built corpus."""

    id: str
    title: str | None = None
    entries: int
    """Retrieval entries made from the document (one, or one per group of ``group_sentences`` sentences)."""
    characters: int | None
    """Characters of text over its entries (``None``: a Lucene index that stores no text)."""
    first_entry: str
    """The id an agent cites for the document's opening (``<id>_sentence_0`` when sentences are grouped)."""
    preview: str | None
    """The start of its first entry, whitespace collapsed, cut at :data:`PREVIEW_CHARS` characters (then ending
    in ``…``); ``None`` where the index stores no text."""


class CorpusContents(BaseModel):
    """A corpus's totals and its first documents."""

    name: str
    path: str
    kind: Literal["corpus", "index"] = "corpus"
    """``corpus``: a corpus directory, read from its collection; ``index``: a bare Lucene index (e.g. built by
    Pyserini's own CLI), read from its stored fields."""
    text_field: Literal["collection", "raw", "contents"] | None = "collection"
    """Where texts came from: the corpus's collection, or the index's stored ``raw`` or ``contents`` field
    (``None``: the index stores no text)."""
    note: str | None = None
    """What the listing could not show and how to get it (an index built without stored text)."""
    documents: int
    entries: int
    characters: int | None
    group_sentences: int | None = None
    """Sentences per entry (``None``: one entry per document)."""
    empty_documents: list[str] = []
    """Source documents with no text, left out when the corpus was built."""
    shown: list[DocumentSummary]


def preview(text: str) -> str:
    """The start of ``text`` as a listing shows it (see :attr:`DocumentSummary.preview`)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def document_id(record: dict[str, object], entry_id: str) -> str:
    """The entry's document: its ``doc_id``, or, in builds that stored none, the id before ``_sentence_k``."""
    doc_id = record.get("doc_id")
    if isinstance(doc_id, str) and doc_id:
        return doc_id
    stem, sep, index = entry_id.rpartition(_SENTENCE_SUFFIX)
    return stem if sep and index.isdigit() else entry_id


def sentence_start(entry_id: str) -> int:
    """Where an entry starts in its document: ``k`` of ``<id>_sentence_k``, 0 for a whole document."""
    _, sep, index = entry_id.rpartition(_SENTENCE_SUFFIX)
    return int(index) if sep and index.isdigit() else 0
