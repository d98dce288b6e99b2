"""Dense and hybrid search over a built corpus, returning the same :class:`~evigraph.trajectory.Evidence` as BM25.

- :class:`DenseSearch`: the FAISS index beside the Lucene one (:mod:`evigraph.corpora.dense`), queries encoded
  with the encoder, prefixes and pooling the passages were built with (read from its manifest). Hits carry the
  entry's id, title and exact stored text, read from the corpus collection (what Lucene stores too).
- :class:`HybridSearch`: BM25 and dense fused by Pyserini's rule (``pyserini.search.hybrid.HybridSearcher``):
  both retrieve ``depth`` hits; an entry missing from one list takes that list's lowest score; with
  ``normalization`` each score becomes ``(s - (min + max) / 2) / (max - min)`` over its list; the fused score
  is ``alpha · sparse + dense`` (``weight_on_dense``: ``sparse + alpha · dense``); the top ``k`` are kept.
  Pyserini's defaults: ``alpha = 0.1``, no normalisation, weight on sparse. Ties are broken by entry id
  (Pyserini leaves them to set order).

``batch_search`` encodes all its queries in one forward pass (up to the encoder's ``max_query_batch``), and
``asearch`` merges the searches that are in flight at the same moment (a rollout batch's agents each
searching once) into one ``batch_search`` (:class:`~evigraph.tools.batching.SearchBatcher`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from evigraph.corpora.dense import DENSE_DIR, EntryStore, dense_is_current, dense_manifest, import_faiss
from evigraph.errors import ConfigError
from evigraph.tools.batching import SearchBatcher
from evigraph.tools.encoders import TextEncoder
from evigraph.trajectory import Evidence

__all__ = ("DenseSearch", "HybridSearch", "SparseScorer", "fuse", "require_dense_index")

_WINDOW_S = 0.002


class _Batched:
    """``asearch`` through a per-event-loop :class:`SearchBatcher` (concurrent searches become one batch)."""

    def _batchers(self) -> weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SearchBatcher]:
        batchers = self.__dict__.get("_loop_batchers")
        if batchers is None:
            batchers = self.__dict__["_loop_batchers"] = weakref.WeakKeyDictionary()
        return batchers

    async def asearch(self, query: str, k: int = 3) -> list[Evidence]:
        loop = asyncio.get_running_loop()
        batchers = self._batchers()
        if loop not in batchers:
            batchers[loop] = SearchBatcher(self, max_queries=1024, window_s=_WINDOW_S)
        return (await batchers[loop].submit([query], k))[0]


class SparseScorer(Protocol):
    """What hybrid search needs from BM25 (:class:`~evigraph.tools.search.BM25Search`)."""

    def batch_scores(self, queries: Sequence[str], k: int = 3) -> list[list[tuple[str, float]]]: ...

    def lookup(self, ids: Sequence[str]) -> list[Evidence | None]: ...


def require_dense_index(corpus_dir: Path, corpus: str) -> None:
    """Raise before anything loads when ``corpus_dir`` has no dense index.

    Raises:
        ConfigError: naming the command that builds one.
    """
    if dense_manifest(corpus_dir) is None:
        raise ConfigError(
            f"corpus {corpus!r} has no dense index; build one with `evigraph corpus embed {corpus} --dense minilm` "
            "(or `evigraph corpus build SOURCE --out DIR --dense minilm`)",
            source="--retrieval",
        )


class DenseSearch(_Batched):
    """Inner-product search of a corpus's FAISS index.

    Args:
        corpus_dir: the corpus directory (holding ``dense/`` and ``collection/``).
        name: corpus name recorded on each ``Evidence.source``.
        threads: FAISS search threads (process-wide OpenMP setting).
        search_params: ``faiss.ParameterSpace`` settings overriding the manifest's (``nprobe=64``).
        encoder: an already loaded encoder (it must be the one the index was built with).
        max_query_batch: queries per forward pass.

    Raises:
        ConfigError: no dense index, or one older than the collection (checked before the model loads).
        MissingDependencyError: faiss or the encoder's weights are not installed.
    """

    def __init__(
        self,
        corpus_dir: str | Path,
        *,
        name: str | None = None,
        threads: int = 1,
        search_params: str | None = None,
        encoder: TextEncoder | None = None,
        max_query_batch: int = 1024,
    ) -> None:
        path = Path(corpus_dir)
        self.name = name or path.name
        require_dense_index(path, self.name)
        manifest = dense_manifest(path)
        assert manifest is not None
        if not dense_is_current(path, manifest):
            raise ConfigError(
                f"the dense index of {self.name!r} was built from another collection (the corpus was rebuilt); "
                f"rebuild it with `evigraph corpus embed {self.name} --dense {manifest.encoder.name} --force`",
                source="--retrieval",
            )
        if threads < 1:
            raise ConfigError(f"threads must be ≥ 1, got {threads}", source="--threads")
        faiss = import_faiss()
        self._faiss = faiss
        self._index = faiss.read_index(str(path / DENSE_DIR / "index"))
        params = manifest.search_params if search_params is None else search_params
        if params:
            try:
                faiss.ParameterSpace().set_index_parameters(self._index, params)
            except RuntimeError as error:
                raise ConfigError(f"FAISS rejects search parameters {params!r}: {error}") from None
        self._store = EntryStore(path)
        self.manifest, self.threads = manifest, threads
        self.encoder = encoder or TextEncoder(manifest.encoder, max_query_batch=max_query_batch)
        if self.encoder.spec != manifest.encoder or self.encoder.dimension != manifest.dimension:
            raise ConfigError(f"the encoder given is not the one {self.name!r}'s dense index was built with")

    def batch_rows(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """Top-``k`` ``(row, inner product)`` per query; empty queries get none. One encoding pass."""
        if k < 1:
            raise ConfigError(f"k must be ≥ 1, got {k}")
        wanted = [i for i, q in enumerate(queries) if q.strip()]
        results: list[list[tuple[int, float]]] = [[] for _ in queries]
        if not wanted:
            return results
        vectors = self.encoder.encode_queries([queries[i] for i in wanted])
        self._faiss.omp_set_num_threads(self.threads)
        scores, rows = self._index.search(vectors, min(k, self._index.ntotal))
        for position, i in enumerate(wanted):
            results[i] = [(int(r), float(s)) for r, s in zip(rows[position], scores[position], strict=True) if r >= 0]
        return results

    def entry(self, row: int, score: float | None) -> Evidence:
        """The stored entry at ``row`` as ``Evidence``, exactly as :class:`BM25Search` returns it."""
        entry_id, text, title = self._store.get(row)
        # The collection line Lucene's stored raw JSON is made from, so the title is the one BM25 returns (an
        # index built before layout 3 stored none: `evigraph corpus build` rebuilds it).
        return Evidence(id=entry_id, text=text, title=title or None, source=self.name, score=score)

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Evidence]]:
        """Top-``k`` entries per query, in query order (empty queries get no hits)."""
        return [[self.entry(row, score) for row, score in hits] for hits in self.batch_rows(queries, k)]

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return self.batch_search([query], k)[0]


def fuse(
    dense: Sequence[tuple[str, float]],
    sparse: Sequence[tuple[str, float]],
    *,
    k: int,
    alpha: float = 0.1,
    normalization: bool = False,
    weight_on_dense: bool = False,
) -> list[tuple[str, float]]:
    """Pyserini's hybrid score fusion (``HybridSearcher._hybrid_results``) of two ``(id, score)`` lists."""
    dense_hits, sparse_hits = dict(dense), dict(sparse)
    min_dense = min(dense_hits.values()) if dense_hits else 0.0
    max_dense = max(dense_hits.values()) if dense_hits else 1.0
    min_sparse = min(sparse_hits.values()) if sparse_hits else 0.0
    max_sparse = max(sparse_hits.values()) if sparse_hits else 1.0
    fused = []
    for doc in dense_hits.keys() | sparse_hits.keys():
        sparse_score = sparse_hits.get(doc, min_sparse)
        dense_score = dense_hits.get(doc, min_dense)
        if normalization:  # Pyserini divides by the spread as is; a one-hit list (spread 0) is kept at 0
            sparse_spread, dense_spread = max_sparse - min_sparse, max_dense - min_dense
            sparse_score = (sparse_score - (min_sparse + max_sparse) / 2) / sparse_spread if sparse_spread else 0.0
            dense_score = (dense_score - (min_dense + max_dense) / 2) / dense_spread if dense_spread else 0.0
        score = sparse_score + alpha * dense_score if weight_on_dense else alpha * sparse_score + dense_score
        fused.append((doc, score))
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused[:k]


class HybridSearch(_Batched):
    """BM25 and dense search fused by Pyserini's rule (see the module docstring).

    Args:
        sparse, dense: the two searchers over the same corpus.
        alpha, normalization, weight_on_dense: Pyserini's fusion settings (defaults are Pyserini's).
        depth: hits each searcher contributes before fusion (Pyserini's ``k0``; at least ``k``).
    """

    def __init__(
        self,
        sparse: SparseScorer,
        dense: DenseSearch,
        *,
        alpha: float = 0.1,
        normalization: bool = False,
        weight_on_dense: bool = False,
        depth: int = 100,
        name: str | None = None,
    ) -> None:
        if depth < 1:
            raise ConfigError(f"depth must be ≥ 1, got {depth}")
        self.sparse, self.dense = sparse, dense
        self.alpha, self.normalization, self.weight_on_dense, self.depth = alpha, normalization, weight_on_dense, depth
        self.name = name or dense.name

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Evidence]]:
        """Top-``k`` fused entries per query (one encoding pass, one Lucene batch)."""
        depth = max(self.depth, k)
        dense_rows = self.dense.batch_rows(queries, depth)
        sparse_hits = self.sparse.batch_scores(queries, depth)
        results: list[list[Evidence]] = []
        for rows, sparse in zip(dense_rows, sparse_hits, strict=True):
            row_of = {}
            dense = []
            for row, score in rows:
                entry_id = self.dense.entry(row, None).id
                row_of[entry_id] = row
                dense.append((entry_id, score))
            fused = fuse(
                dense,
                sparse,
                k=k,
                alpha=self.alpha,
                normalization=self.normalization,
                weight_on_dense=self.weight_on_dense,
            )
            only_sparse = [i for i, _ in fused if i not in row_of]
            looked_up = dict(zip(only_sparse, self.sparse.lookup(only_sparse), strict=True)) if only_sparse else {}
            hits = []
            for entry_id, score in fused:
                if entry_id in row_of:
                    hits.append(self.dense.entry(row_of[entry_id], score))
                else:
                    stored = looked_up[entry_id]
                    assert stored is not None  # BM25 just returned it
                    hits.append(stored.model_copy(update={"score": score, "source": self.name}))
            results.append(hits)
        return results

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return self.batch_search([query], k)[0]
