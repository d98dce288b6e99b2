"""Build a BM25 corpus: documents → entries → Pyserini ``JsonCollection`` → Lucene index + manifest.

Layout of a built corpus directory::

    manifest.json            source hash, counts, parameters, versions (a rebuild is skipped when equal)
    collection/docs.jsonl    one {"id", "contents", "title", "doc_id"} per entry (Pyserini JsonCollection)
    index/                   the Lucene index, raw JSON stored so search returns the exact text

The index is written to a temporary folder and renamed into place, so a killed build never leaves an index
that looks finished.

Every stage streams (documents are read one at a time, entries are written as they are made, the collection
is indexed line by line), and ``threads`` is used twice: worker processes that split sentences
(:mod:`corpora.pipeline`), then Lucene's indexing threads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pydantic import BaseModel

from evigraph.corpora.documents import read_documents, source_files
from evigraph.corpora.entries import SentenceSplitter, default_splitter_name
from evigraph.corpora.pipeline import SplitPlan, entry_lines
from evigraph.errors import ConfigError
from evigraph.files import atomic_write

__all__ = ("BuildParams", "Manifest", "build_corpus", "source_hash")

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
_BATCH = 2000


LAYOUT = 3
"""What a built corpus stores; bump it when that changes, so older builds are rebuilt (1: entries joined
sentences with single spaces and the index kept no document id; 2: exact source slices, meant to store
``doc_id``; 3: the stored raw JSON really holds ``title`` and ``doc_id``, which layout 2's indexing dropped)."""


class BuildParams(BaseModel):
    """What changes the built corpus (part of the skip decision)."""

    group_sentences: int | None = None
    splitter: str | None = None
    sentences_field: str | None = None
    """Set only when grouping and not ``"auto"`` (so builds made before the option existed are still reused)."""
    layout: int = 1
    """:data:`LAYOUT` of the build (manifests written before it existed read as 1)."""


class Manifest(BaseModel):
    source: str
    source_sha256: str
    params: BuildParams
    documents: int
    entries: int
    empty_documents: list[str]
    versions: dict[str, str | None]
    build_seconds: float
    skipped: bool = False
    """Set on the returned value (never stored) when an up-to-date build was reused."""


def source_hash(path: Path) -> str:
    """SHA-256 over the input file, or over the relative path and bytes of every file a folder is read from
    (its ``.txt`` files, or the ``.jsonl``/``.json`` files of a ``JsonCollection``)."""
    digest = hashlib.sha256()
    files = source_files(path) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _write_index(collection: Path, index_dir: Path, entries_total: int, threads: int) -> None:
    from evigraph.corpora.jvm import jvm_call, start_jvm

    start_jvm()
    jvm_call(_index_collection, collection, index_dir, entries_total, threads)


def _stored_json(record: dict[str, str | None]) -> str:
    """The JSON Lucene stores as an entry's ``raw``: id, contents, title (when there is one) and ``doc_id``.

    Raw JSON, not Pyserini's ``add_batch_dict``: that keeps only ``id`` and ``contents``, which lost titles.
    Lucene still searches ``contents`` alone (the other fields are indexed under their own names), so scores are
    those of an index of ``id`` and ``contents``.
    """
    stored = {"id": record["id"], "contents": record["contents"]}
    if record.get("title"):
        stored["title"] = record["title"]
    stored["doc_id"] = record["doc_id"]
    return json.dumps(stored, ensure_ascii=False)


def _index_collection(collection: Path, index_dir: Path, entries_total: int, threads: int) -> None:
    """Index ``collection`` into ``index_dir`` (on the JVM thread, like every Java call)."""
    from pyserini.index.lucene import LuceneIndexer

    tmp = index_dir.with_name(index_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    indexer = LuceneIndexer(args=["-index", str(tmp), "-storeRaw"], threads=threads)
    batch: list[str] = []
    with collection.open(encoding="utf-8") as handle:
        for line in handle:
            batch.append(_stored_json(json.loads(line)))
            if len(batch) >= _BATCH:
                indexer.add_batch_raw(batch)
                batch = []
    if batch:
        indexer.add_batch_raw(batch)
    indexer.close()
    shutil.rmtree(index_dir, ignore_errors=True)
    tmp.rename(index_dir)
    logger.info("indexed %d entries into %s", entries_total, index_dir)


def build_corpus(
    source: str | Path,
    out: str | Path,
    *,
    group_sentences: int | None = None,
    splitter: SentenceSplitter | None = None,
    splitter_name: str | None = None,
    splitter_kind: str = "model",
    sentences_field: str = "auto",
    force: bool = False,
    threads: int = 1,
    on_progress: Callable[[int], None] | None = None,
    dense: str | None = None,
    dense_factory: str = "Flat",
    on_dense_progress: Callable[[int, int], None] | None = None,
) -> Manifest:
    """Build (or reuse) the corpus at ``out`` from ``source``.

    Args:
        source: JSONL, TSV or a folder of text files (see :mod:`corpora.documents`).
        out: the corpus directory.
        group_sentences: group every N consecutive sentences of a document into one entry.
        splitter: sentence splitter (default: ``splitter_kind``, see :func:`corpora.entries.load_sentence_splitter`);
            it must be picklable when ``threads > 1``.
        splitter_name: recorded in the manifest when a custom ``splitter`` is passed.
        splitter_kind: ``model`` (spaCy's statistical sentence recogniser) or ``rules`` (spaCy's sentencizer).
        sentences_field: JSON field of source-given sentences (``auto``: ``sentences`` or ``lines`` when present;
            ``none``: always split), see :func:`corpora.documents.read_documents`.
        force: rebuild even if the manifest says nothing changed.
        threads: sentence-splitting processes and Lucene indexing threads.
        on_progress: called with the number of documents read so far (for progress bars).
        dense: also embed the entries into a FAISS index with this encoder (``minilm``, ``e5-base-v2``, …; see
            :func:`evigraph.corpora.dense.build_dense`, which skips it when it is up to date).
        dense_factory: the FAISS index factory string for ``dense``.
        on_dense_progress: called with (entries encoded, total) while embedding.

    Raises:
        ConfigError: bad parameters or input path. InputDataError: a bad or duplicate record.
    """
    source, out = Path(source), Path(out)
    if dense is not None:  # a wrong encoder name or factory fails before the corpus is built
        from evigraph.corpora.dense import check_dense_options

        check_dense_options(dense, dense_factory)
    manifest = _build_bm25(
        source,
        out,
        group_sentences=group_sentences,
        splitter=splitter,
        splitter_name=splitter_name,
        splitter_kind=splitter_kind,
        sentences_field=sentences_field,
        force=force,
        threads=threads,
        on_progress=on_progress,
    )
    if dense is not None:
        from evigraph.corpora.dense import build_dense

        build_dense(out, dense, factory=dense_factory, force=force, on_progress=on_dense_progress)
    return manifest


def _build_bm25(
    source: Path,
    out: Path,
    *,
    group_sentences: int | None,
    splitter: SentenceSplitter | None,
    splitter_name: str | None,
    splitter_kind: str,
    sentences_field: str,
    force: bool,
    threads: int,
    on_progress: Callable[[int], None] | None,
) -> Manifest:
    if group_sentences is not None and group_sentences < 1:
        raise ConfigError(f"group_sentences must be ≥ 1, got {group_sentences}", source="--group-sentences")
    if not source.exists():
        raise ConfigError(f"input {source} does not exist")
    if threads < 1:
        raise ConfigError(f"threads must be ≥ 1, got {threads}", source="--threads")
    if group_sentences and splitter is None:
        splitter_name = default_splitter_name(splitter_kind)
    digest = source_hash(source)
    params = BuildParams(
        group_sentences=group_sentences,
        splitter=splitter_name if group_sentences else None,
        sentences_field=sentences_field if group_sentences and sentences_field != "auto" else None,
        layout=LAYOUT,
    )
    manifest_path = out / MANIFEST
    if manifest_path.is_file() and (out / "index").is_dir() and not force:
        previous = Manifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
        if previous.source_sha256 == digest and previous.params == params:
            logger.info("corpus at %s is up to date; skipping the build", out)
            return previous.model_copy(update={"skipped": True})
    plan = SplitPlan(group_sentences=group_sentences, splitter_kind=splitter_kind, splitter=splitter)
    started = time.perf_counter()
    (out / "collection").mkdir(parents=True, exist_ok=True)
    collection = out / "collection" / "docs.jsonl"
    documents = entries = 0
    empty: list[str] = []
    # No entry-id set is kept: ids are unique once document ids are (read_documents checks those), because
    # "<doc>_sentence_<k>" with a numeric k ends in exactly one "_sentence_<digits>", which names its document.
    with collection.open("w", encoding="utf-8") as handle:
        for produced in entry_lines(read_documents(source, sentences_field=sentences_field), plan, threads=threads):
            documents += 1
            if not produced.lines:
                empty.append(produced.id)
            for line in produced.lines:
                handle.write(line + "\n")
            entries += len(produced.lines)
            if on_progress is not None:
                on_progress(documents)
    if empty:
        logger.warning("%d document(s) with empty text were left out: %s", len(empty), ", ".join(empty[:10]))
    if entries == 0:
        raise ConfigError(f"input {source} produced no entries (all {documents} documents are empty)")
    _write_index(collection, out / "index", entries, threads)
    manifest = Manifest(
        source=str(source.resolve()),
        source_sha256=digest,
        params=params,
        documents=documents,
        entries=entries,
        empty_documents=empty,
        versions={name: _version(name) for name in ("evigraph", "pyserini", "spacy")},
        build_seconds=round(time.perf_counter() - started, 3),
    )
    atomic_write(manifest_path, manifest.model_dump_json(indent=2))
    return manifest
