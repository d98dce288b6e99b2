"""Documents → entry lines, on one process or on ``threads`` worker processes, in input order.

Splitting sentences is the cost of a grouped build (spaCy), so it runs on every core: documents travel to
workers in chunks, each worker returns the chunk's entries already serialised as JSON lines, and the parent
writes them in input order. At most ``2 × threads`` chunks are in flight (``Pool.imap`` would read the whole
input ahead of the workers), so memory does not grow with the corpus. Workers start with ``spawn``: the parent
may already run a JVM, which must never be forked. One process runs the very same chunk function inline, so
the output does not depend on ``threads``. Splitters are renewed every :data:`RENEW_AFTER_CHUNKS` chunks
(spaCy's vocabulary only grows).
"""

from __future__ import annotations

import collections
import multiprocessing
from collections.abc import Iterable, Iterator
from multiprocessing.pool import AsyncResult

from pydantic import BaseModel, ConfigDict

from evigraph.corpora.documents import SourceDocument
from evigraph.corpora.entries import SentenceSplitter, entries_for, load_sentence_splitter

__all__ = ("DocumentEntries", "SplitPlan", "entry_lines")

CHUNK_DOCUMENTS = 256
RENEW_AFTER_CHUNKS = 200
"""A splitter is replaced after this many chunks (~51k documents): spaCy's vocabulary keeps every new word it
meets, so a splitter that lived through millions of pages would grow without bound."""


class SplitPlan(BaseModel):
    """How documents become entries (sent once to every worker)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    group_sentences: int | None = None
    splitter_kind: str = "model"
    splitter: SentenceSplitter | None = None
    """A given splitter (must be picklable when ``threads > 1``); else ``splitter_kind`` is loaded on first need,
    so a corpus whose every document gives its sentences never loads spaCy."""


class DocumentEntries(BaseModel):
    """One document's entries, serialised as ``JsonCollection`` lines."""

    id: str
    lines: list[str]


class _Worker:
    """A plan with its splitter, loaded the first time a document needs splitting."""

    def __init__(self, plan: SplitPlan) -> None:
        self.plan = plan
        self._splitter = plan.splitter

    def splitter(self) -> SentenceSplitter:
        if self._splitter is None:
            self._splitter, _ = load_sentence_splitter(self.plan.splitter_kind)
        return self._splitter

    def run(self, documents: list[SourceDocument]) -> list[DocumentEntries]:
        group = self.plan.group_sentences
        to_split = [
            index
            for index, document in enumerate(documents)
            if group and document.sentences is None and document.text.strip()
        ]
        spans: dict[int, list[tuple[int, int]]] = {}
        if to_split:
            splitter = self.splitter()
            texts = [documents[index].text.strip() for index in to_split]
            # A splitter with a batch method (spaCy's nlp.pipe) splits the whole chunk at once.
            many = getattr(splitter, "many", None)
            spans = dict(zip(to_split, many(texts) if many is not None else map(splitter, texts), strict=True))
        out = []
        for index, document in enumerate(documents):
            entries = entries_for(document, group_sentences=group, splitter=None, spans=spans.get(index))
            out.append(DocumentEntries(id=document.id, lines=[entry.model_dump_json() for entry in entries]))
        return out


_WORKER: _Worker | None = None


def _start(plan: SplitPlan) -> None:
    global _WORKER
    _WORKER = _Worker(plan)


def _run(documents: list[SourceDocument]) -> list[DocumentEntries]:
    assert _WORKER is not None, "worker not started"
    return _WORKER.run(documents)


def _chunks(documents: Iterable[SourceDocument], size: int) -> Iterator[list[SourceDocument]]:
    chunk: list[SourceDocument] = []
    for document in documents:
        chunk.append(document)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def entry_lines(
    documents: Iterable[SourceDocument], plan: SplitPlan, *, threads: int = 1, chunk_documents: int = CHUNK_DOCUMENTS
) -> Iterator[DocumentEntries]:
    """Each document's entries, in input order, split on ``threads`` processes (1: in this process)."""
    if threads <= 1:
        for number, chunk in enumerate(_chunks(documents, chunk_documents)):
            if number % RENEW_AFTER_CHUNKS == 0:
                worker = _Worker(plan)
            yield from worker.run(chunk)
        return
    context = multiprocessing.get_context("spawn")
    pool = context.Pool(threads, initializer=_start, initargs=(plan,), maxtasksperchild=RENEW_AFTER_CHUNKS)
    with pool:
        pending: collections.deque[AsyncResult[list[DocumentEntries]]] = collections.deque()
        for chunk in _chunks(documents, chunk_documents):
            pending.append(pool.apply_async(_run, (chunk,)))
            if len(pending) >= 2 * threads:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()
