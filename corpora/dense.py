"""A dense (FAISS) index beside a corpus's Lucene index, over the same entries.

Layout, inside the corpus directory::

    dense/index            the FAISS index (``faiss.write_index``), row i = entry i of the collection
    dense/docid            entry ids, one per line, in row order (Pyserini's FaissSearcher reads this layout)
    dense/offsets.npy      byte offset of each entry's line in collection/docs.jsonl (n + 1 values), so a hit's
                           id, title and exact text are read back without the JVM and without holding texts
    dense/manifest.json    encoder spec (model, prefixes, pooling, normalisation), dimension, index factory,
                           search parameters, entry count, collection size and SHA-256

The entries are streamed from ``collection/docs.jsonl`` (what Lucene indexed) and encoded in batches. A
``Flat`` index (exact inner product) is filled as it goes; a factory that needs training (``IVF…``, ``PQ…``,
``SQ8``) is trained on the first ``train_size`` vectors, which are then added with the rest, so only the
training sample is ever held in memory. The folder is written as ``dense.tmp`` and renamed when complete.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from evigraph.errors import ConfigError, MissingDependencyError
from evigraph.files import atomic_write
from evigraph.tools.encoders import EncoderSpec, TextEncoder, model_dimension, passage_text, resolve_encoder

__all__ = (
    "DENSE_DIR",
    "DenseManifest",
    "EntryStore",
    "build_dense",
    "check_dense_options",
    "default_search_params",
    "dense_is_current",
    "dense_manifest",
    "import_faiss",
    "new_index",
)

logger = logging.getLogger(__name__)

DENSE_DIR = "dense"
_WINDOW_BATCHES = 32
"""Entries handed to the encoder at once, in forward passes: it batches them by length (less padding)."""
_COLLECTION = Path("collection") / "docs.jsonl"


class DenseManifest(BaseModel):
    encoder: EncoderSpec
    dimension: int
    factory: str
    """``faiss.index_factory`` string (``Flat``, ``HNSW32``, ``IVF4096,PQ48``, ``SQ8`` …), inner product."""
    search_params: str
    """``faiss.ParameterSpace`` settings applied at search time (``nprobe=32``, ``efSearch=128``; may be empty)."""
    entries: int
    collection_bytes: int
    collection_mtime_ns: int = 0
    collection_sha256: str
    build_seconds: float
    entries_per_second: float
    skipped: bool = False
    """Set on the returned value (never stored) when an up-to-date dense index was reused."""


def import_faiss() -> Any:
    """The ``faiss`` module, or a clear error naming the install command."""
    try:
        import faiss
    except ImportError:
        raise MissingDependencyError("faiss-cpu", "pip install 'evigraph[dense]'") from None
    return faiss


def default_search_params(factory: str) -> str:
    """Search settings for a factory string: IVF probes 32 lists, HNSW explores 128 candidates."""
    params = []
    if "IVF" in factory:
        params.append("nprobe=32")
    if "HNSW" in factory:
        params.append("efSearch=128")
    return ",".join(params)


def dense_manifest(corpus_dir: Path) -> DenseManifest | None:
    """The manifest of the dense index beside ``corpus_dir``'s Lucene index, or ``None`` when it has none."""
    path = Path(corpus_dir) / DENSE_DIR / "manifest.json"
    if not path.is_file():
        return None
    return DenseManifest.model_validate_json(path.read_text(encoding="utf-8"))


def _entries(collection: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(byte offset of the line, record) for each entry of the collection."""
    with collection.open("rb") as handle:
        offset = 0
        for line in handle:
            if line.strip():
                yield offset, json.loads(line)
            offset += len(line)


class EntryStore:
    """Reads entries back from the collection by row: (id, text, title), as the Lucene index stores them.

    Holds the row offsets (8 bytes per entry) and one open file; reads use ``os.pread``, so concurrent searches
    may share it.
    """

    def __init__(self, corpus_dir: Path) -> None:
        self._offsets = np.load(Path(corpus_dir) / DENSE_DIR / "offsets.npy")
        self._fd = os.open(Path(corpus_dir) / _COLLECTION, os.O_RDONLY)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def get(self, row: int) -> tuple[str, str, str | None]:
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        record = json.loads(os.pread(self._fd, end - start, start))
        return record["id"], record["contents"], record.get("title") or None

    def close(self, _close: Callable[[int], None] = os.close) -> None:
        # os.close bound at definition: at interpreter exit __del__ may run after the os module was torn down.
        if self._fd >= 0:
            _close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        if hasattr(self, "_fd"):  # not when __init__ failed before opening the file
            self.close()


def dense_is_current(corpus_dir: Path, manifest: DenseManifest) -> bool:
    """Whether the dense index was built from the collection now in ``corpus_dir`` (size and time, else hash)."""
    collection = Path(corpus_dir) / _COLLECTION
    if not collection.is_file():
        return False
    stat = collection.stat()
    if stat.st_size != manifest.collection_bytes:
        return False
    return stat.st_mtime_ns == manifest.collection_mtime_ns or _file_sha256(collection) == manifest.collection_sha256


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def new_index(faiss: Any, factory: str, dimension: int) -> Any:
    """An empty inner-product index from a factory string.

    IVF-PQ indexes skip FAISS's polysemous training, which only serves Hamming-threshold search (never used
    here) and made training ~10x slower (87 s against 8 s for ``IVF64,PQ48`` on 10,000 vectors).

    Raises:
        ConfigError: FAISS rejects the factory string for this dimension.
    """
    try:
        index = faiss.index_factory(dimension, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as error:
        message = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        raise ConfigError(f"FAISS cannot build index {factory!r}: {message}", source="--dense-factory") from None
    if hasattr(index, "do_polysemous_training"):
        index.do_polysemous_training = False
    return index


def check_dense_options(encoder: str | EncoderSpec, factory: str, dimension: int | None = None) -> EncoderSpec:
    """The encoder's spec, once the encoder name and the factory string are known good (reads the model's
    config, never its weights).

    Raises:
        ConfigError: an unknown encoder, a hub model not cached, or a factory FAISS rejects for this dimension.
        MissingDependencyError: faiss or the encoder's package is not installed.
    """
    spec = encoder if isinstance(encoder, EncoderSpec) else resolve_encoder(encoder)
    faiss = import_faiss()
    new_index(faiss, factory, dimension if dimension is not None else model_dimension(spec))
    return spec


def build_dense(
    corpus_dir: str | Path,
    encoder: str | EncoderSpec = "minilm",
    *,
    factory: str = "Flat",
    train_size: int = 100_000,
    batch_size: int = 64,
    force: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    text_encoder: TextEncoder | None = None,
) -> DenseManifest:
    """Embed every entry of a built corpus into ``<corpus_dir>/dense/`` (skipped when it is up to date).

    Args:
        corpus_dir: a corpus directory made by :func:`evigraph.corpora.build.build_corpus`.
        encoder: a preset name, ``PRESET:DIR``, a model directory (:func:`tools.encoders.resolve_encoder`) or a spec.
        factory: the FAISS index factory string (inner product); ``Flat`` is exact.
        train_size: vectors a trained index (IVF, PQ, SQ) learns from (the first ones of the collection).
        batch_size: entries per forward pass.
        force: rebuild even when the manifest matches.
        on_progress: called with (entries encoded, total entries) after each window of ``32 × batch_size``.
        text_encoder: an already loaded encoder for ``encoder`` (saves loading it twice).

    Raises:
        ConfigError: no collection in ``corpus_dir``; an unknown encoder or a factory FAISS rejects (both before
            any model loads).
        MissingDependencyError: faiss or the encoder's weights are not installed.
    """
    corpus_dir = Path(corpus_dir)
    collection = corpus_dir / _COLLECTION
    if not collection.is_file():
        raise ConfigError(
            f"{corpus_dir} has no {_COLLECTION} (a dense index is built from a corpus made by `evigraph corpus "
            "build`; bare Lucene indexes and pyserini:NAME have no entry collection)",
            source="--dense",
        )
    if train_size < 1 or batch_size < 1:
        raise ConfigError(f"train_size and batch_size must be ≥ 1, got {train_size} and {batch_size}")
    spec = check_dense_options(encoder, factory, text_encoder.dimension if text_encoder is not None else None)
    faiss = import_faiss()
    search_params = default_search_params(factory)
    collection_bytes = collection.stat().st_size
    digest = _file_sha256(collection)
    previous = dense_manifest(corpus_dir)
    if (
        not force
        and previous is not None
        and (previous.encoder, previous.factory, previous.collection_sha256) == (spec, factory, digest)
        and (corpus_dir / DENSE_DIR / "index").is_file()
    ):
        logger.info("dense index at %s is up to date; skipping", corpus_dir / DENSE_DIR)
        return previous.model_copy(update={"skipped": True})
    with collection.open("rb") as handle:
        total = sum(1 for line in handle if line.strip())
    model = text_encoder or TextEncoder(spec, batch_size=batch_size)
    started = time.perf_counter()
    tmp = corpus_dir / (DENSE_DIR + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    index = new_index(faiss, factory, model.dimension)
    pending: list[np.ndarray] = []  # vectors waiting for the index to be trained
    offsets: list[int] = []
    done = 0
    with (tmp / "docid").open("w", encoding="utf-8") as ids:
        batch: list[dict[str, Any]] = []

        def flush() -> None:
            nonlocal done
            vectors = model.encode_passages([passage_text(r["contents"], r.get("title") or None) for r in batch])
            if index.is_trained:
                index.add(vectors)
            else:
                pending.append(vectors)
                if sum(len(p) for p in pending) >= min(train_size, total):
                    sample = np.concatenate(pending)
                    index.train(sample[:train_size])
                    index.add(sample)
                    pending.clear()
            done += len(batch)
            batch.clear()
            if on_progress is not None:
                on_progress(done, total)

        for offset, record in _entries(collection):
            if "\n" in record["id"]:
                raise ConfigError(f"entry id {record['id']!r} holds a line break; the dense docid file cannot")
            ids.write(record["id"] + "\n")
            offsets.append(offset)
            batch.append(record)
            if len(batch) >= batch_size * _WINDOW_BATCHES:
                flush()
        if batch:
            flush()
    if pending:  # fewer entries than a training sample: train on what there is
        sample = np.concatenate(pending)
        index.train(sample)
        index.add(sample)
    faiss.write_index(index, str(tmp / "index"))
    np.save(tmp / "offsets.npy", np.asarray([*offsets, collection_bytes], dtype=np.int64))
    seconds = time.perf_counter() - started
    manifest = DenseManifest(
        encoder=spec,
        dimension=model.dimension,
        factory=factory,
        search_params=search_params,
        entries=done,
        collection_bytes=collection_bytes,
        collection_mtime_ns=collection.stat().st_mtime_ns,
        collection_sha256=digest,
        build_seconds=round(seconds, 3),
        entries_per_second=round(done / seconds, 1) if seconds > 0 else 0.0,
    )
    atomic_write(tmp / "manifest.json", manifest.model_dump_json(indent=2))
    target = corpus_dir / DENSE_DIR
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    logger.info("embedded %d entries into %s (%.1f entries/s)", done, target, manifest.entries_per_second)
    return manifest
