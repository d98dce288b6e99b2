"""BM25 search over a built corpus (Pyserini/Lucene), returning :class:`~evigraph.trajectory.Evidence`.

One code path: :meth:`BM25Search.search` is ``batch_search([query], k)[0]``. Results cross the boundary as
``Evidence`` (id, exact stored text, score, corpus name), so no Java object leaks out. The JVM starts in the
constructor (never at import). :func:`render_information` turns hits into the ``[[id]]: text`` lines agents
read, with the text escaped so a passage can never forge protocol tags or evidence lines.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from evigraph.errors import ConfigError, ToolError
from evigraph.protocol.escaping import neutralize
from evigraph.trajectory import Evidence

__all__ = (
    "RETRIEVALS",
    "BM25Search",
    "SearchInput",
    "SearchTool",
    "check_retrieval",
    "open_retrieval",
    "open_search",
    "render_information",
)

logger = logging.getLogger(__name__)


@runtime_checkable
class SearchTool(Protocol):
    """What graphs need from a retriever (local index or remote server)."""

    def search(self, query: str, k: int = 3) -> list[Evidence]: ...

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Evidence]]: ...


class SearchInput(BaseModel):
    """Arguments of the search tool as a model sees them."""

    query: str = Field(description="What to look up, in a few keywords or a short sentence.")
    k: int = Field(3, ge=1, le=50, description="How many entries to return.")


RETRIEVALS = ("bm25", "dense", "hybrid")
"""How a local corpus is searched (``--retrieval``): Lucene BM25, the FAISS index beside it, or their fusion."""


def check_retrieval(
    *, corpus: str | None = None, retriever_url: str | None = None, retrieval: str | None = None
) -> None:
    """Refuse, without opening anything (no JVM, no encoder, no bundled build), a ``retrieval`` that
    :func:`open_search` would refuse: for commands that check every flag before a model loads.

    Raises:
        ConfigError: an unknown retrieval; dense/hybrid with a server URL, without a corpus, on a Pyserini
            prebuilt index (BM25 only) or on a corpus without a dense index (naming the command that builds one).
    """
    if retrieval is None or retrieval == "bm25":
        return
    if retrieval not in RETRIEVALS:
        raise ConfigError(f"unknown retrieval {retrieval!r}; choose {', '.join(RETRIEVALS)}", source="--retrieval")
    if retriever_url:
        raise ConfigError(
            "a /retrieve server searches the way it was started (`evigraph corpus serve CORPUS --retrieval "
            f"{retrieval}`); --retrieval applies to a local --corpus",
            source="--retrieval",
        )
    if not corpus:
        raise ConfigError(f"--retrieval {retrieval} needs a local --corpus to search", source="--retrieval")
    from evigraph.corpora.prebuilt import prebuilt_name

    if prebuilt_name(corpus) is not None:
        raise ConfigError(
            f"{corpus} is a Pyserini BM25 index; --retrieval {retrieval} needs a corpus with a dense index "
            "(`evigraph corpus build SOURCE --out DIR --dense minilm`)",
            source="--retrieval",
        )
    from evigraph.corpora.registry import resolve_corpus
    from evigraph.tools.dense_search import require_dense_index

    require_dense_index(resolve_corpus(corpus, build_bundled=False), corpus)


def open_search(
    *, corpus: str | None = None, retriever_url: str | None = None, retrieval: str | None = None
) -> SearchTool:
    """The search tool a user names: a local corpus (a name from ``evigraph corpus list`` or a corpus
    directory) searched by ``retrieval`` (``bm25``, the default; ``dense``; ``hybrid``), or a Search-R1 style
    ``/retrieve`` server.

    Raises:
        ConfigError: both or neither given, an unknown corpus or retrieval, a retrieval with a server URL, or
            dense/hybrid on a corpus without a dense index (before any model loads).
    """
    if retrieval is not None and retrieval not in RETRIEVALS:
        raise ConfigError(f"unknown retrieval {retrieval!r}; choose {', '.join(RETRIEVALS)}", source="--retrieval")
    if corpus and retriever_url:
        raise ConfigError("give a corpus or a retriever URL, not both", source="--corpus/--retriever-url")
    if retriever_url:
        if retrieval not in (None, "bm25"):
            raise ConfigError(
                "a /retrieve server searches the way it was started (`evigraph corpus serve CORPUS --retrieval "
                f"{retrieval}`); --retrieval applies to a local --corpus",
                source="--retrieval",
            )
        from evigraph.tools.remote_search import RemoteSearch

        return RemoteSearch(retriever_url)
    if not corpus:
        raise ConfigError("a search tool needs --corpus NAME|DIR or --retriever-url URL")
    from evigraph.corpora.registry import resolve_corpus

    if retrieval in (None, "bm25"):
        return BM25Search(resolve_corpus(corpus), name=corpus)
    return open_retrieval(resolve_corpus(corpus), retrieval, name=corpus)


def open_retrieval(
    location: str | Path,
    retrieval: str = "bm25",
    *,
    name: str | None = None,
    k1: float = 0.9,
    b: float = 0.4,
    threads: int = 1,
    alpha: float = 0.1,
    normalization: bool = False,
    weight_on_dense: bool = False,
    depth: int = 100,
) -> SearchTool:
    """The searcher ``--retrieval`` names over a resolved corpus directory: :class:`BM25Search`, or
    :class:`~evigraph.tools.dense_search.DenseSearch` / :class:`~evigraph.tools.dense_search.HybridSearch`.

    Raises:
        ConfigError: an unknown retrieval; dense/hybrid on a corpus without a dense index (before the JVM
            starts or a model loads).
    """
    if retrieval not in RETRIEVALS:
        raise ConfigError(f"unknown retrieval {retrieval!r}; choose {', '.join(RETRIEVALS)}", source="--retrieval")
    label = name or Path(location).name
    if retrieval == "bm25":
        return BM25Search(location, k1=k1, b=b, threads=threads, name=label)
    from evigraph.tools.dense_search import DenseSearch, HybridSearch, require_dense_index

    require_dense_index(Path(location), label)
    dense = DenseSearch(location, name=label, threads=threads)
    if retrieval == "dense":
        return dense
    sparse = BM25Search(location, k1=k1, b=b, threads=threads, name=label)
    return HybridSearch(
        sparse,
        dense,
        alpha=alpha,
        normalization=normalization,
        weight_on_dense=weight_on_dense,
        depth=depth,
        name=label,
    )


def _open_searcher(path: Path, k1: float, b: float) -> Any:
    """A Pyserini searcher with BM25 set (runs on the JVM thread, like every Java call)."""
    from pyserini.search.lucene import LuceneSearcher

    searcher = LuceneSearcher(str(path))
    searcher.set_bm25(k1, b)
    return searcher


def _stored_entry(raw: str | None, contents: str | None) -> tuple[str, str | None] | None:
    """(text, title) of a stored Lucene document, or ``None`` when it stores no text.

    ``raw`` is the source record: a JSON object for JSON collections (``contents``, or BEIR's ``text``, with an
    optional ``title``), the source text as is for other collections (Pyserini's prebuilt TREC-style indexes);
    ``contents`` is the indexed text, kept by ``-storeContents``.
    """
    if raw is not None:
        try:
            record = json.loads(raw)
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict):
            text = record.get("contents", record.get("text"))
            title = record.get("title")
            if isinstance(text, str):
                return text, title if isinstance(title, str) and title else None
        if contents is None:
            return raw, None
    return (contents, None) if contents is not None else None


def render_information(hits: Sequence[Evidence]) -> str:
    """``[[id]]: text`` lines, one per hit, with ids and texts escaped (untrusted corpus content)."""
    return "\n".join(f"[[{neutralize(hit.id)}]]: {neutralize(' '.join(hit.text.split()))}" for hit in hits)


class BM25Search:
    """BM25 over a Lucene index built by :func:`evigraph.corpora.build.build_corpus`.

    Args:
        index_dir: the corpus directory (holding ``index/``), the index directory itself, or
            ``pyserini:NAME`` for Pyserini's cached prebuilt index (:mod:`evigraph.corpora.prebuilt`; downloaded
            only when ``EVIGRAPH_ALLOW_DOWNLOAD=1``).
        k1, b: BM25 parameters (Pyserini's defaults 0.9 / 0.4); changing them needs no re-index.
        threads: Lucene threads for :meth:`batch_search`.
        name: corpus name recorded on each ``Evidence.source``.

    Raises:
        ConfigError: no index at ``index_dir``; a prebuilt index unknown or not downloaded.
        MissingDependencyError: Pyserini is not installed.
    """

    def __init__(
        self, index_dir: str | Path, *, k1: float = 0.9, b: float = 0.4, threads: int = 1, name: str | None = None
    ) -> None:
        if k1 <= 0 or not 0 <= b <= 1:
            raise ConfigError(f"BM25 needs k1 > 0 and 0 ≤ b ≤ 1, got k1={k1}, b={b}")
        from evigraph.corpora.prebuilt import prebuilt_index_dir, prebuilt_name

        prebuilt = prebuilt_name(str(index_dir))
        path = prebuilt_index_dir(prebuilt) if prebuilt is not None else Path(index_dir)
        if (path / "index").is_dir():
            path = path / "index"
        if not path.is_dir():
            raise ConfigError(f"no Lucene index at {index_dir} (build one with `evigraph corpus build`)")
        from evigraph.corpora.jvm import jvm_call, start_jvm

        start_jvm()
        self._lucene = jvm_call(_open_searcher, path, k1, b)
        self.k1, self.b, self.threads = k1, b, threads
        self.name = name or prebuilt or path.parent.name

    def _evidence(self, docid: str, score: float) -> Evidence:
        document = self._lucene.doc(docid)
        stored = _stored_entry(document.raw(), document.contents()) if document is not None else None
        if stored is None:
            raise ToolError(
                f"entry {docid!r} has no stored text (the index was built without -storeRaw and -storeContents)"
            )
        text, title = stored
        return Evidence(id=docid, text=text, title=title, source=self.name, score=float(score))

    def _batch_scores(self, queries: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        if k < 1:
            raise ConfigError(f"k must be ≥ 1, got {k}")
        wanted = [(str(i), q) for i, q in enumerate(queries) if q.strip()]
        results: dict[str, list[tuple[str, float]]] = {}
        if wanted:  # one searcher on one thread; Lucene's own threads parallelise the batch
            hits = self._lucene.batch_search([q for _, q in wanted], [i for i, _ in wanted], k, self.threads)
            results = {qid: [(h.docid, float(h.score)) for h in hits[qid]] for qid, _ in wanted}
        return [results.get(str(i), []) for i in range(len(queries))]

    def _batch_search(self, queries: Sequence[str], k: int) -> list[list[Evidence]]:
        return [[self._evidence(i, score) for i, score in hits] for hits in self._batch_scores(queries, k)]

    def batch_scores(self, queries: Sequence[str], k: int = 3) -> list[list[tuple[str, float]]]:
        """Top-``k`` ``(entry id, BM25 score)`` per query, without reading stored texts (for score fusion)."""
        from evigraph.corpora.jvm import jvm_call

        return jvm_call(self._batch_scores, list(queries), k)

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Evidence]]:
        """Top-``k`` entries per query, in query order (empty queries get no hits)."""
        from evigraph.corpora.jvm import jvm_call

        return jvm_call(self._batch_search, list(queries), k)

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return self.batch_search([query], k)[0]

    def _lookup(self, ids: Sequence[str]) -> list[Evidence | None]:
        return [self._evidence(i, 0.0) if self._lucene.doc(i) is not None else None for i in ids]

    def lookup(self, ids: Sequence[str]) -> list[Evidence | None]:
        """The stored entries with these exact ids (``None`` for an id the index does not hold)."""
        from evigraph.corpora.jvm import jvm_call

        return jvm_call(self._lookup, list(ids))

    async def asearch(self, query: str, k: int = 3) -> list[Evidence]:
        """:meth:`search` without blocking the event loop (the JVM thread runs it)."""
        from evigraph.corpora.jvm import ajvm_call

        return (await ajvm_call(self._batch_search, [query], k))[0]

    def as_langchain_tool(self) -> Any:
        """A LangChain tool over this index, for host agents."""
        from langchain_core.tools import StructuredTool

        def run(query: str, k: int = 3) -> str:
            try:
                return render_information(self.search(query, k)) or "No entries matched."
            except ToolError as error:  # a tool failure is an observation the model can read
                return neutralize(f"Search failed: {error}")

        return StructuredTool.from_function(
            func=run,
            name="search",
            description=(
                "Search the evidence corpus. Returns one line per entry as [[id]]: text. "
                "Cite entries by their exact id in double brackets."
            ),
            args_schema=SearchInput,
        )
