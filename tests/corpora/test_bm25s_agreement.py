"""Pyserini's BM25 ranks like an independent implementation (bm25s, ``method="lucene"``) fed Lucene's own tokens.

The corpus is real technical English, built deterministically offline: the Python reference topics shipped
with the interpreter (``pydoc_data.topics``) and the docstrings of a few stdlib packages (read with ``ast``),
split into sentences of 5–60 words, de-duplicated, two consecutive sentences per passage (at most 4,000).
Queries are claim-like: one sentence of a passage with about 30 % of its words dropped (``random.Random(13)``).
Passages and queries are tokenized with Lucene's English analyzer through Pyserini, so the only differences
left are scoring details (Lucene's lossy 1-byte length norms) and tie-breaking; the research notes measured
99.5 % top-1 agreement on a 90k-passage corpus. Ties count as agreement.
"""

from __future__ import annotations

import ast
import json
import random
import re
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.markers import requires

pytestmark = [pytest.mark.java, requires("jnius", "pyserini", "bm25s")]

K1, B = 0.9, 0.4
N_QUERIES = 200
TIE = 1e-4  # relative score difference treated as a tie
MAX_PASSAGES = 4000
STDLIB_PACKAGES = ("asyncio", "collections", "concurrent", "email", "http", "importlib", "json", "logging", "unittest")


def _texts() -> Iterator[str]:
    import pydoc_data.topics

    for key in sorted(pydoc_data.topics.topics):
        yield pydoc_data.topics.topics[key]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for package in STDLIB_PACKAGES:  # docstrings read with ast: nothing is imported
        for path in sorted((stdlib / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    yield ast.get_docstring(node) or ""


def _passages() -> list[dict[str, str]]:
    sentences: list[str] = []
    seen: set[str] = set()
    for text in _texts():
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
            if 5 <= len(sentence.split()) <= 60 and sentence not in seen:
                seen.add(sentence)
                sentences.append(sentence)
    passages = [" ".join(sentences[i : i + 2]) for i in range(0, len(sentences) - 1, 2)][:MAX_PASSAGES]
    return [{"id": f"p{i}", "contents": text} for i, text in enumerate(passages)]


def _queries(passages: list[dict[str, str]]) -> list[str]:
    rng = random.Random(13)
    queries: list[str] = []
    while len(queries) < N_QUERIES:
        passage = rng.choice(passages)["contents"]
        sentence = rng.choice(re.split(r"(?<=[.!?])\s+", passage)).split()
        kept = [word for word in sentence if rng.random() > 0.3][:12]
        if len(kept) >= 3:
            queries.append(" ".join(kept))
    return queries


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from evigraph.corpora.build import build_corpus
    from evigraph.tools.search import BM25Search

    passages = _passages()
    root: Path = tmp_path_factory.mktemp("agreement")
    source = root / "passages.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    manifest = build_corpus(source, root / "corpus")
    search = BM25Search(root / "corpus", k1=K1, b=B)  # starts the JVM

    import bm25s
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    analyzer = Analyzer(get_lucene_analyzer())
    retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
    retriever.index([analyzer.analyze(p["contents"]) for p in passages], show_progress=False)
    return {
        "passages": passages,
        "entries": manifest.entries,
        "search": search,
        "analyzer": analyzer,
        "bm25s": retriever,
    }


def _tied_top(hits: list[tuple[str, float]]) -> set[str]:
    top = hits[0][1]
    return {docid for docid, score in hits if score >= top - TIE * abs(top)}


def test_corpus_is_a_few_thousand_passages(engines: dict[str, Any]) -> None:
    assert engines["entries"] == len(engines["passages"]) >= 2000


def test_top1_agrees_with_bm25s_on_lucene_tokens(engines: dict[str, Any]) -> None:
    passages, analyzer, retriever = engines["passages"], engines["analyzer"], engines["bm25s"]
    lucene = engines["search"]._lucene
    queries = _queries(passages)
    token_lists = [analyzer.analyze(q) for q in queries]
    assert all(token_lists)
    hits = lucene.batch_search(queries, [str(i) for i in range(len(queries))], 10, 1)
    ids, scores = retriever.retrieve(token_lists, k=10, show_progress=False, n_threads=1)
    agree, disagreements = 0, []
    for i, query in enumerate(queries):
        ours = [(h.docid, float(h.score)) for h in hits[str(i)]]
        theirs = [(passages[int(j)]["id"], float(s)) for j, s in zip(ids[i], scores[i], strict=True)]
        assert ours and theirs, query
        if ours[0][0] == theirs[0][0] or theirs[0][0] in _tied_top(ours) or ours[0][0] in _tied_top(theirs):
            agree += 1
        else:
            disagreements.append((query, ours[:2], theirs[:2]))
        # The same formula on the same tokens: scores agree up to Lucene's lossy length norms.
        assert theirs[0][1] == pytest.approx(ours[0][1], rel=0.05), query
    assert agree / len(queries) >= 0.95, disagreements[:5]
