"""The Search-R1-compatible retrieval server and its client: wire shapes, batching, limits, loopback binding.

Servers run in-process under uvicorn in a background thread (threads only: never fork once the JVM runs).
An in-memory dict search exercises the server logic without Java; the BM25 tests add the real index.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence

import httpx
import pytest
import uvicorn

from evigraph.errors import ConfigError, ToolError
from evigraph.tools.remote_search import RemoteSearch
from evigraph.tools.retrieval_server import create_app, serve
from evigraph.trajectory import Evidence
from tests.markers import requires_pyserini
from tests.servers import running

CORPUS = {
    "Hog Island Light": "Hog Island Light was a lighthouse in Virginia. It was first lit in 1853.",
    "Cape Charles Light_sentence_3": "Cape Charles Light stands on Smith Island. It was first lit in 1828.",
    "Garden": '"Garden"\nA garden with roses and a stone wall.',  # Search-R1's own corpus layout
    "Island trivia": "Island trivia: Smith Island is in Virginia.",
}
TITLES = {"Hog Island Light": "Hog Island Light (lighthouse)"}
"""Stored titles (the others have none)."""


def search_r1_passages(hits: list[dict]) -> list[tuple[str, str]]:
    """What Search-R1's generation loop shows its policy for one query's hits (rebuilt from its behaviour):
    it reads ``document.contents`` only, takes the first line as the title and the rest as the text."""
    shown = []
    for item in hits:
        title, _, text = item["document"]["contents"].partition("\n")
        shown.append((title, text))
    return shown


class DictSearch:
    """In-memory search over a dict corpus: score = number of shared lower-case words; records each batch."""

    def __init__(self, corpus: dict[str, str], *, delay_s: float = 0.0, fail: bool = False) -> None:
        self.corpus, self.delay_s, self.fail = corpus, delay_s, fail
        self.calls: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Evidence]]:
        with self._lock:
            self.calls.append((len(queries), k))
        time.sleep(self.delay_s)
        if self.fail:
            raise ToolError("index is gone")
        results = []
        for query in queries:
            words = set(query.lower().split())
            scored = sorted(((-len(words & set(t.lower().split())), i) for i, t in self.corpus.items()))
            results.append(
                [
                    Evidence(id=i, text=self.corpus[i], title=TITLES.get(i), source="dict", score=-s)
                    for s, i in scored
                    if s
                ][:k]
            )
        return results

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return self.batch_search([query], k)[0]


def same_hits(remote: list[list[Evidence]], local: list[list[Evidence]]) -> bool:
    return [[(e.id, e.text, e.score) for e in q] for q in remote] == [
        [(e.id, e.text, e.score) for e in q] for q in local
    ]


@pytest.fixture(scope="module")
def fake() -> DictSearch:
    return DictSearch(CORPUS)


@pytest.fixture(scope="module")
def url(fake: DictSearch) -> Iterator[str]:
    with running(create_app(fake, max_queries=4, max_query_chars=50, max_topk=5)) as base_url:
        yield base_url


def test_search_r1_shapes_with_and_without_scores(url: str) -> None:
    body = httpx.post(
        f"{url}/retrieve", json={"queries": ["first lit island", "roses"], "topk": 2, "return_scores": True}
    )
    assert body.status_code == 200
    result = body.json()["result"]
    assert [len(r) for r in result] == [2, 1]
    top = result[0][0]
    assert set(top) == {"document", "score"} and top["score"] == 3.0
    hog = CORPUS["Hog Island Light"]  # the stored title on the first line of contents, quoted as Search-R1 has it
    assert top["document"] == {
        "id": "Hog Island Light",
        "contents": f'"Hog Island Light (lighthouse)"\n{hog}',
        "title": "Hog Island Light (lighthouse)",
        "text": hog,
    }
    # Text already in Search-R1's layout keeps its quoted first line as the title.
    garden = result[1][0]["document"]
    assert (garden["contents"], garden["title"], garden["text"]) == (CORPUS["Garden"], "Garden", CORPUS["Garden"])

    bare = httpx.post(f"{url}/retrieve", json={"queries": ["island light virginia smith"]}).json()["result"]
    assert len(bare[0]) == 3 and all(set(doc) == {"id", "contents", "title", "text"} for doc in bare[0])  # topk 3
    nulled = httpx.post(f"{url}/retrieve", json={"queries": ["island light virginia smith"], "topk": None})
    assert nulled.json()["result"] == bare
    assert httpx.post(f"{url}/retrieve", json={"queries": []}).json() == {"result": []}
    assert httpx.get(f"{url}/health").json() == {"status": "ok"}


def test_search_r1_training_batch_in_one_post_is_parsed_by_its_client() -> None:
    """Search-R1 posts a whole rollout batch (train_batch_size 512 × n_agent 5) with return_scores and reads
    titles from contents: every hit must show a real title and a non-empty body, from one batch_search."""
    counting = DictSearch(CORPUS)
    queries = [f"{word} island light" for word in ("first", "smith", "virginia", "roses", "lit")] * 512
    with running(create_app(counting)) as base_url:
        response = httpx.post(f"{base_url}/retrieve", json={"queries": queries, "topk": 3, "return_scores": True})
    assert response.status_code == 200
    result = response.json()["result"]
    assert len(result) == 2560 and counting.calls == [(2560, 3)]
    shown = search_r1_passages(result[0]) + search_r1_passages(result[1])
    assert ('"Hog Island Light (lighthouse)"', CORPUS["Hog Island Light"]) in shown
    assert ('"Island trivia"', CORPUS["Island trivia"]) in shown  # no stored title: the document id
    assert ('"Cape Charles Light"', CORPUS["Cape Charles Light_sentence_3"]) in shown  # the id without _sentence_k
    assert all(title.strip('"') and text for title, text in shown)


def test_the_client_takes_the_endpoint_url_search_r1_configs_use(url: str, fake: DictSearch) -> None:
    with RemoteSearch(f"{url}/retrieve/") as remote:
        assert remote.base_url == url
        assert same_hits(remote.batch_search(["first lit"], k=2), fake.batch_search(["first lit"], k=2))
        assert remote.search("Hog Island lighthouse", k=1)[0].title == "Hog Island Light (lighthouse)"


def test_remote_search_equals_local_search(url: str, fake: DictSearch) -> None:
    queries = ["first lit", "roses wall", "", "island virginia"]
    with RemoteSearch(url) as remote:
        batched = remote.batch_search(queries, k=2)
        assert same_hits(batched, fake.batch_search(queries, k=2))
        assert batched[2] == [] and remote.search("first lit", k=2) == batched[0]
        assert all(e.source == url for e in batched[0])
        assert remote.batch_search([], k=2) == []
        assert asyncio.run(remote.asearch("roses wall", k=2)) == batched[1]
        with pytest.raises(ConfigError, match="k must be"):
            remote.search("x", k=0)


def test_concurrent_clients_are_batched_and_answered_correctly() -> None:
    slow = DictSearch(CORPUS, delay_s=0.05)  # while one batch runs, the other requests queue up
    queries = [f"{word} island" for word in ("first", "roses", "smith", "virginia")] * 4
    expected = [DictSearch(CORPUS).search(q, k=1 + i % 3) for i, q in enumerate(queries)]
    with running(create_app(slow)) as base_url, RemoteSearch(base_url) as remote:
        barrier = threading.Barrier(len(queries))
        answers: list[list[Evidence] | None] = [None] * len(queries)

        def client(i: int) -> None:
            barrier.wait()
            answers[i] = remote.search(queries[i], k=1 + i % 3)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(queries))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert same_hits(answers, expected)  # type: ignore[arg-type]
        thread_calls = len(slow.calls)
        assert sum(n for n, _ in slow.calls) == 16 and thread_calls < 16

        async def gather() -> list[list[Evidence]]:
            return await asyncio.gather(*(remote.asearch(q, k=1 + i % 3) for i, q in enumerate(queries)))

        assert same_hits(asyncio.run(gather()), expected)
        assert len(slow.calls) - thread_calls < 16


@pytest.mark.parametrize(
    ("content", "status", "message"),
    [
        ({}, 422, "missing"),  # no queries at all
        ({"queries": "first lit"}, 422, "list"),  # a string is not a list of queries
        ({"queries": [1, 2]}, 422, "string"),  # queries must be strings
        ({"queries": ["x"], "topk": "3"}, 422, "integer"),  # no string-to-int coercion
        ({"queries": ["x"], "return_scores": "yes"}, 422, "boolean"),
        ({"queries": ["x"], "topk": 0}, 422, "topk must be between 1 and 5, got 0"),
        ({"queries": ["x"], "topk": 6}, 422, "topk must be between 1 and 5, got 6"),
        ({"queries": ["x"] * 5}, 413, "5 queries exceed the limit of 4"),
        ({"queries": ["ok", "x" * 51]}, 413, "query 1 has 51 characters; limit 50"),
        (b"{not json", 422, "JSON"),
        (b'{"queries": ["' + b"a" * 5000 + b'"]}', 413, "exceeds the limit"),  # declared length too big
        (iter([b'{"queries": ["', b"a" * 5000, b'"]}']), 413, "exceeds the limit"),  # chunked, no length
    ],
)
def test_bad_requests_get_4xx_saying_why(url: str, content: object, status: int, message: str) -> None:
    if isinstance(content, dict):
        response = httpx.post(f"{url}/retrieve", json=content)
    else:
        response = httpx.post(f"{url}/retrieve", content=content, headers={"content-type": "application/json"})
    assert response.status_code == status
    assert message in json.dumps(response.json()["detail"])
    if status == 422 and isinstance(content, dict) and "topk" not in json.dumps(response.json()["detail"]):
        assert response.json()["detail"][0]["loc"][0] == "body"  # pydantic's field location is kept


def test_client_errors_carry_the_servers_message(url: str) -> None:
    with RemoteSearch(url) as remote, pytest.raises(ToolError, match=r"HTTP 422: topk must be between 1 and 5"):
        remote.search("island", k=6)
    with running(create_app(DictSearch(CORPUS, fail=True))) as base_url, RemoteSearch(base_url) as broken:
        with pytest.raises(ToolError, match="HTTP 500: search failed: ToolError: index is gone"):
            broken.search("island")
        assert httpx.get(f"{base_url}/health").status_code == 200  # the batcher survives a failed batch
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with RemoteSearch(closed, max_retries=1) as gone, pytest.raises(ToolError, match="after 2 attempts: Connect"):
        gone.search("island")


def test_server_binds_loopback_by_default(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert url.startswith("http://127.0.0.1:")
    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: seen.update(options))
    serve(DictSearch(CORPUS))
    assert seen["host"] == "127.0.0.1" and seen["port"] == 8000
    with pytest.raises(ConfigError, match="default_topk"):
        create_app(DictSearch(CORPUS), default_topk=0)


@pytest.fixture(scope="module")
def bm25(tmp_path_factory: pytest.TempPathFactory):
    from evigraph.corpora.build import build_corpus
    from evigraph.tools.search import BM25Search

    root = tmp_path_factory.mktemp("corpus")
    source = root / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in CORPUS.items()), encoding="utf-8")
    build_corpus(source, root / "built")
    return BM25Search(root / "built", name="demo")


@pytest.fixture(scope="module")
def bm25_url(bm25) -> Iterator[str]:
    with running(create_app(bm25)) as base_url:
        yield base_url


@pytest.mark.java
@requires_pyserini
@pytest.mark.parametrize("k", [1, 3])
def test_bm25_over_http_equals_local_bm25(bm25, bm25_url: str, k: int) -> None:
    queries = ["Hog Island Light first lit", "roses wall", "", "Smith Island Virginia"]
    with RemoteSearch(bm25_url) as remote:
        remote_hits = remote.batch_search(queries, k=k)
    assert same_hits(remote_hits, bm25.batch_search(queries, k=k)) and remote_hits[0][0].id == "Hog Island Light"
    raw = httpx.post(f"{bm25_url}/retrieve", json={"queries": ["Hog Island Light"], "topk": 1}).json()["result"]
    assert raw[0][0]["contents"] == f'"Hog Island Light"\n{CORPUS["Hog Island Light"]}'  # untitled: the document id
