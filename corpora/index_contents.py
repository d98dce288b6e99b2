"""What a bare Lucene index holds, read from the index itself (for indexes built by Pyserini's own CLI).

Pyserini's ``python -m pyserini.index.lucene`` (Anserini's ``IndexCollection``) writes only the Lucene index: no
``collection/docs.jsonl``, no manifest. Lucene still keeps each document's stored fields: ``id`` always, ``raw``
with ``-storeRaw`` (for a ``JsonCollection`` the source object as JSON, so ``contents`` and ``title`` come back),
``contents`` with ``-storeContents``. This module lists documents from those fields, in index order, with the
same columns as a corpus directory. ``-storeDocvectors`` keeps analysed terms, not text, so an index built
with neither ``-storeRaw`` nor ``-storeContents`` is listed by id only, with a note saying how to rebuild it.

Every Java call runs on the JVM thread (:func:`evigraph.corpora.jvm.jvm_call`); only Python values come back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evigraph.corpora.summaries import CorpusContents, DocumentSummary, document_id, preview, sentence_start
from evigraph.errors import ConfigError

__all__ = ("index_contents", "lucene_index_dir")

NO_TEXT_NOTE = (
    "the index stores no document text (it was built without -storeRaw and -storeContents), so only ids are "
    "listed; rebuild it with -storeRaw to list titles, sizes and texts"
)


def lucene_index_dir(directory: Path) -> Path | None:
    """``directory`` or its ``index/`` when it holds a Lucene index (a ``segments_N`` file), else ``None``."""
    for candidate in (directory, directory / "index"):
        if candidate.is_dir() and any(candidate.glob("segments_*")):
            return candidate
    return None


class _Listing:
    """Totals over every entry and summaries of the first ``limit`` documents.

    Lucene's order need not keep a document's entries together (segments merge out of order), so shown
    documents are found by id; ids of the other documents are remembered only for grouped entries
    (``<id>_sentence_k``), because an ungrouped entry is a document of its own and Pyserini indexes can hold
    millions of them.
    """

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.shown: dict[str, DocumentSummary] = {}
        self.starts: dict[str, int] = {}
        self.grouped: set[str] = set()
        self.ungrouped = self.entries = self.characters = 0
        self.texts = 0

    def add(self, entry_id: str, record: dict[str, Any], text: str | None) -> None:
        self.entries += 1
        doc_id = document_id(record, entry_id)
        if doc_id == entry_id:
            self.ungrouped += 1
        else:
            self.grouped.add(doc_id)
        if text is not None:
            self.texts += 1
            self.characters += len(text)
        size = len(text) if text is not None else None
        summary = self.shown.get(doc_id)
        if summary is None:
            if self.limit is not None and len(self.shown) >= self.limit:
                return
            title = record.get("title")
            self.shown[doc_id] = DocumentSummary(
                id=doc_id,
                title=title if isinstance(title, str) and title else None,
                entries=1,
                characters=size,
                first_entry=entry_id,
                preview=preview(text) if text is not None else None,
            )
            self.starts[doc_id] = sentence_start(entry_id)
            return
        summary.entries += 1
        if size is not None:
            summary.characters = (summary.characters or 0) + size
        if sentence_start(entry_id) < self.starts[doc_id]:  # the document's opening came later in the index
            self.starts[doc_id] = sentence_start(entry_id)
            summary.first_entry = entry_id
            summary.preview = preview(text) if text is not None else None


def _entry(stored: Any) -> tuple[dict[str, Any], str | None, str | None]:
    """(the raw JSON object or ``{}``, the text, the stored field it came from) of one Lucene document."""
    raw, contents = stored.get("raw"), stored.get("contents")
    record: dict[str, Any] = {}
    if raw is not None:
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:  # a non-JSON collection (e.g. TREC) stores its source text as is
            parsed = None
        if isinstance(parsed, dict):
            record = parsed
            text = parsed.get("contents", parsed.get("text"))
            if isinstance(text, str):
                return record, text, "raw"
        elif contents is None:
            return record, raw, "raw"
    return record, contents, "contents" if contents is not None else None


def _read_index(path: Path, name: str, limit: int | None) -> CorpusContents:
    """List the index at ``path`` (on the JVM thread)."""
    from jnius import JavaException, autoclass

    paths = autoclass("java.nio.file.Paths")
    fs_directory = autoclass("org.apache.lucene.store.FSDirectory")
    directory_reader = autoclass("org.apache.lucene.index.DirectoryReader")
    multi_bits = autoclass("org.apache.lucene.index.MultiBits")
    try:
        reader = directory_reader.open(fs_directory.open(paths.get(str(path))))
    except JavaException as error:
        raise ConfigError(f"{path}: Lucene could not open the index ({error})") from None
    listing = _Listing(limit)
    fields: set[str] = set()
    try:
        live = multi_bits.getLiveDocs(reader)  # None when no document was deleted
        stored_fields = reader.storedFields()
        for number in range(reader.maxDoc()):
            if live is not None and not live.get(number):
                continue
            stored = stored_fields.document(number)
            entry_id = stored.get("id")
            if entry_id is None:
                raise ConfigError(
                    f"{path}: Lucene document {number} has no stored 'id' field, so this is not an index built "
                    "by Pyserini, Anserini or `evigraph corpus build`"
                )
            record, text, field = _entry(stored)
            if field is not None:
                fields.add(field)
            listing.add(entry_id, record, text)
    finally:
        reader.close()
    return CorpusContents(
        name=name,
        path=str(path),
        kind="index",
        text_field="raw" if "raw" in fields else "contents" if fields else None,
        note=NO_TEXT_NOTE if listing.entries and not listing.texts else None,
        documents=listing.ungrouped + len(listing.grouped),
        entries=listing.entries,
        characters=listing.characters if listing.texts else None,
        shown=list(listing.shown.values()),
    )


def index_contents(index_dir: Path, *, name: str, limit: int | None = None) -> CorpusContents:
    """The documents of the Lucene index in ``index_dir`` (the first ``limit`` in full; ``None``: all).

    Starts the JVM (:mod:`evigraph.corpora.jvm`) if it is not running yet.

    Raises:
        ConfigError: Lucene cannot open the index, or its documents have no stored ``id``.
        MissingDependencyError: Pyserini or its JVM bridge is not installed.
    """
    from evigraph.corpora.jvm import jvm_call, start_jvm

    start_jvm()
    return jvm_call(_read_index, index_dir, name, limit)
