"""The JVM boot lets Pyserini 1.6.0 index and search in-process, with Lucene's BM25 scores.

Scores are checked against the Lucene BM25 formula computed by hand (k1 = 0.9, b = 0.4):
``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``, ``score = Σ idf · tf / (tf + k1 · (1 - b + b · dl / avgdl))``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.markers import requires_pyserini

pytestmark = [pytest.mark.java, requires_pyserini]

DOCS = [
    {"id": "a", "contents": "red light red light harbor"},
    {"id": "b", "contents": "green harbor boat"},
    {"id": "c", "contents": "red boat"},
    {"id": "d", "contents": "tower stone wall garden gate"},
]


def lucene_bm25(
    query_terms: list[str], doc: list[str], corpus: list[list[str]], k1: float = 0.9, b: float = 0.4
) -> float:
    n_docs = len(corpus)
    avgdl = sum(len(d) for d in corpus) / n_docs
    score = 0.0
    for term in query_terms:
        df = sum(term in d for d in corpus)
        tf = doc.count(term)
        if not tf:
            continue
        idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        score += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
    return score


def test_hand_computed_bm25_matches_lucene(tmp_path: Path) -> None:
    from evigraph.corpora.jvm import jvm_started, start_jvm

    info = start_jvm()
    assert start_jvm() is info and jvm_started() is info  # once per process
    from pyserini.index.lucene import LuceneIndexer
    from pyserini.search.lucene import LuceneSearcher

    indexer = LuceneIndexer(args=["-index", str(tmp_path), "-storeRaw"], threads=1)
    indexer.add_batch_dict(DOCS)
    indexer.close()
    searcher = LuceneSearcher(str(tmp_path))
    hits = searcher.search("red harbor", k=4)
    # These words pass Lucene's English analyzer unchanged (no stop words, Porter-stable), and the
    # documents are short enough that Lucene's 1-byte length norm is exact.
    corpus = [d["contents"].split() for d in DOCS]
    expected = {d["id"]: lucene_bm25(["red", "harbor"], toks, corpus) for d, toks in zip(DOCS, corpus, strict=True)}
    assert [h.docid for h in hits] == ["a", "c", "b"]
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.docid], abs=1e-4)
        assert (
            json.loads(searcher.doc(hit.docid).raw())["contents"]
            == DOCS[[d["id"] for d in DOCS].index(hit.docid)]["contents"]
        )
    assert expected["a"] == pytest.approx(0.8022, abs=1e-4)  # worked by hand: 0.4590 (red) + 0.3431 (harbor)
