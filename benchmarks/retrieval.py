"""Retrieval throughput: :class:`BM25Search` against raw Pyserini, the retrieval server, and bm25s.

Corpus (deterministic, offline; research notes §4): docstrings of the Python stdlib (read with ``ast`` from
the source files, nothing imported) and ``pydoc_data.topics``, split into sentences of 5–60 words,
de-duplicated, every 3 consecutive sentences → one passage; topped up with seeded synthetic sentences when
that gives fewer than ``--passages``. Queries: claim-like (a random sentence of a random passage, ~30 % of its
words dropped, ≤ 12 words), ``random.Random(13)``.

Measured, at k = 3, after a warm-up (a cold JVM runs the first queries ~10x slower):

* ``tool_qps``: ``BM25Search.batch_search`` (hits become ``Evidence`` with the stored text);
* ``raw_qps``: the baseline, ``LuceneSearcher.batch_search`` + ``json.loads(doc.raw())`` for every hit, same
  searcher, same thread count; ``tool_ratio = tool_qps / raw_qps`` (goal ≥ 0.9);
* ``p50_ms`` / ``p99_ms``: one ``BM25Search.search`` call per query;
* ``server_qps``: the retrieval server (own process, 127.0.0.1) through ``RemoteSearch.search`` (one query
  per request) from ``--clients`` concurrent threads, all in this process (with 2 cores, clients and server
  share the CPU); a line for batched requests (``RemoteSearch.batch_search``) is printed too; then a load
  check of ``--load-clients`` (64) concurrent clients for ``--load-seconds`` (0 skips it);
* ``bm25s_qps``: bm25s (numpy backend, its own tokenizer + PyStemmer), tokenizing included.

    .venv/bin/python benchmarks/retrieval.py [--passages 100000] [--queries 1000] [--out DIR] [--load-seconds 30]

The generated source and the built corpus are cached in ``--out``; a rerun reuses them.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import itertools
import json
import logging
import os
import random
import re
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SENTENCE = re.compile(r"(?<=[.!?])\s+")
PER_PASSAGE = 3
K = 3


# --------------------------------------------------------------------------------------------- corpus


def _docstrings(path: Path) -> Iterator[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield doc


def _texts() -> Iterator[str]:
    import pydoc_data.topics

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).parts
        if parts[0] in {"site-packages", "dist-packages", "test", "idlelib"} or "tests" in parts:
            continue
        yield from _docstrings(path)
    for key in sorted(pydoc_data.topics.topics):
        yield pydoc_data.topics.topics[key]


def _synthetic_sentences(seed: int = 7) -> Iterator[str]:
    """Endless seeded sentences over a Zipf-like vocabulary of pronounceable made-up words."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    vocabulary = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(30_000)})
    rng.shuffle(vocabulary)
    cumulative = list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(len(vocabulary))))
    while True:
        words = rng.choices(vocabulary, cum_weights=cumulative, k=rng.randint(6, 24))
        yield words[0].capitalize() + " " + " ".join(words[1:]) + "."


def generate_passages(n: int) -> list[str]:
    sentences: list[str] = []
    seen: set[str] = set()
    for text in _texts():
        for sentence in SENTENCE.split(" ".join(text.split())):
            if 5 <= len(sentence.split()) <= 60 and sentence not in seen:
                seen.add(sentence)
                sentences.append(sentence)
    passages = [" ".join(sentences[i : i + PER_PASSAGE]) for i in range(0, len(sentences), PER_PASSAGE)]
    real = len(passages)
    synthetic = _synthetic_sentences()
    while len(passages) < n:
        passages.append(" ".join(next(synthetic) for _ in range(PER_PASSAGE)))
    print(f"corpus: {min(real, n)} passages from docstrings, {max(0, n - real)} synthetic", flush=True)
    return passages[:n]


def generate_queries(passages: list[str], n: int) -> list[str]:
    rng = random.Random(13)
    queries: list[str] = []
    while len(queries) < n:
        sentence = rng.choice(SENTENCE.split(rng.choice(passages))).split()
        kept = [word for word in sentence if rng.random() > 0.3][:12]
        if len(kept) >= 3:
            queries.append(" ".join(kept))
    return queries


def prepare(out: Path, n_passages: int) -> tuple[Path, list[str]]:
    """The source JSONL (generated once per ``n_passages``) and its passages."""
    out.mkdir(parents=True, exist_ok=True)
    source, meta = out / "source.jsonl", out / "source.meta.json"
    if meta.is_file() and source.is_file() and json.loads(meta.read_text())["passages"] == n_passages:
        passages = [json.loads(line)["contents"] for line in source.open(encoding="utf-8")]
        print(f"corpus: reusing {len(passages)} passages from {source}", flush=True)
        return source, passages
    started = time.perf_counter()
    passages = generate_passages(n_passages)
    with source.open("w", encoding="utf-8") as handle:
        for i, text in enumerate(passages):
            handle.write(json.dumps({"id": f"p{i}", "contents": text}) + "\n")
    meta.write_text(json.dumps({"passages": n_passages}))
    print(f"corpus: generated in {time.perf_counter() - started:.1f} s", flush=True)
    return source, passages


# --------------------------------------------------------------------------------------------- timing


def best_qps(run: Callable[[], object], n: int, repeat: int) -> float:
    return max(n / _timed(run) for _ in range(repeat))


def _timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def raw_baseline(lucene: Any, queries: list[str], threads: int) -> list[list[dict[str, Any]]]:
    qids = [str(i) for i in range(len(queries))]
    hits = lucene.batch_search(queries, qids, K, threads)
    return [[json.loads(lucene.doc(h.docid).raw()) for h in hits[qid]] for qid in qids]


# --------------------------------------------------------------------------------------------- server

SERVER = """
import sys
from evigraph.tools.retrieval_server import serve
from evigraph.tools.search import BM25Search
serve(BM25Search(sys.argv[1], threads=int(sys.argv[3])), host="127.0.0.1", port=int(sys.argv[2]))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(corpus: Path, threads: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(corpus), str(port), str(threads)], stdout=handle, stderr=handle
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}; see {log}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"the server did not come up in 120 s; see {log}")


def concurrent_qps(url: str, queries: list[str], clients: int, batch: int = 1) -> float:
    """All queries spread over ``clients`` threads, ``batch`` per request (1: ``RemoteSearch.search``)."""
    from evigraph.tools.remote_search import RemoteSearch

    failures: list[BaseException] = []

    def work(share: list[str]) -> None:
        with RemoteSearch(url) as remote:
            for start in range(0, len(share), batch):
                try:
                    remote.batch_search(share[start : start + batch], K)
                except Exception as error:
                    failures.append(error)

    threads = [threading.Thread(target=work, args=(queries[i::clients],)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{len(failures)} server queries failed, e.g. {failures[0]!r}")
    return len(queries) / elapsed


def load_check(url: str, queries: list[str], clients: int, seconds: float) -> tuple[int, int, float, float]:
    """``clients`` threads querying back to back until ``seconds`` pass: requests, errors, p50 and p99 (ms)."""
    from evigraph.tools.remote_search import RemoteSearch

    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    deadline = time.monotonic() + seconds

    def work(index: int) -> None:
        rng = random.Random(index)
        with RemoteSearch(url, max_retries=0) as remote:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    if not remote.search(rng.choice(queries), K):
                        errors[index] += 1
                except Exception:
                    errors[index] += 1
                latencies[index].append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    flat = [value for per_client in latencies for value in per_client]
    return len(flat), sum(errors), percentile(flat, 0.5), percentile(flat, 0.99)


# --------------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "evigraph-bench-retrieval")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="Lucene search threads")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes per measurement (best is kept)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed passes over the queries first")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients for server_qps")
    parser.add_argument("--server-batch", type=int, default=25, help="queries per request, batched server line")
    parser.add_argument("--load-clients", type=int, default=64)
    parser.add_argument("--load-seconds", type=float, default=30.0)
    args = parser.parse_args()
    if args.passages < 1 or args.queries < 1 or args.load_seconds < 0 or args.repeat < 1:
        parser.error("--passages, --queries and --repeat must be ≥ 1 and --load-seconds ≥ 0")

    source, passages = prepare(args.out, args.passages)
    queries = generate_queries(passages, args.queries)

    from evigraph.corpora.build import build_corpus

    started = time.perf_counter()
    manifest = build_corpus(source, args.out / "corpus")
    wall = time.perf_counter() - started
    index_build_s = manifest.build_seconds
    state = "cached, from the manifest" if manifest.skipped else f"{wall:.1f} s wall incl. JVM start"
    print(f"index: {manifest.entries} entries, build {index_build_s:.1f} s ({state})", flush=True)

    from evigraph.tools.search import BM25Search

    tool = BM25Search(args.out / "corpus", threads=args.threads)
    lucene = tool._lucene
    for _ in range(args.warmup):  # JIT warm-up of both paths (a cold JVM is ~10x slower)
        tool.batch_search(queries, K)
        raw_baseline(lucene, queries, args.threads)
    assert [[e.text for e in hits] for hits in tool.batch_search(queries, K)] == [
        [d["contents"] for d in hits] for hits in raw_baseline(lucene, queries, args.threads)
    ], "the tool and the raw baseline disagree"
    tool_runs, raw_runs = [], []
    for _ in range(args.repeat):  # interleaved, so drift hits both alike
        tool_runs.append(len(queries) / _timed(lambda: tool.batch_search(queries, K)))
        raw_runs.append(len(queries) / _timed(lambda: raw_baseline(lucene, queries, args.threads)))
    tool_qps, raw_qps = max(tool_runs), max(raw_runs)
    tool_ratio = tool_qps / raw_qps
    print(
        f"batch k={K}, threads={args.threads}: tool {tool_qps:.0f} q/s, raw {raw_qps:.0f} q/s "
        f"(runs tool {[round(v) for v in tool_runs]}, raw {[round(v) for v in raw_runs]}); "
        f"ratio {tool_ratio:.3f} (goal ≥ 0.9)",
        flush=True,
    )

    latencies = []
    for query in queries:
        started = time.perf_counter()
        tool.search(query, K)
        latencies.append((time.perf_counter() - started) * 1000)
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    print(f"single search: p50 {p50:.2f} ms, p99 {p99:.2f} ms", flush=True)

    server_qps = server_ratio = p_load50 = p_load99 = float("nan")
    load_requests = load_errors = -1
    if all(importlib.util.find_spec(m) for m in ("evigraph.tools.retrieval_server", "evigraph.tools.remote_search")):
        process, url = start_server(args.out / "corpus", args.threads, args.out / "server.log")
        try:
            concurrent_qps(url, queries, args.clients)  # warm-up of the server's JVM
            concurrent_qps(url, queries, args.clients)
            server_qps = max(concurrent_qps(url, queries, args.clients) for _ in range(args.repeat))
            server_ratio = server_qps / raw_qps
            print(
                f"server ({args.clients} clients, RemoteSearch.search): {server_qps:.0f} q/s, "
                f"ratio to raw {server_ratio:.3f}",
                flush=True,
            )
            batched = max(concurrent_qps(url, queries, 4, args.server_batch) for _ in range(args.repeat))
            print(
                f"server, batched requests (4 clients x {args.server_batch} queries per request): {batched:.0f} q/s, "
                f"ratio to raw {batched / raw_qps:.3f}",
                flush=True,
            )
            if args.load_seconds > 0:
                load_requests, load_errors, p_load50, p_load99 = load_check(
                    url, queries, args.load_clients, args.load_seconds
                )
                print(
                    f"load: {args.load_clients} clients x {args.load_seconds:.0f} s: {load_requests} requests, "
                    f"{load_errors} errors, p50 {p_load50:.1f} ms, p99 {p_load99:.1f} ms "
                    f"({load_requests / args.load_seconds:.0f} q/s)",
                    flush=True,
                )
        finally:
            process.terminate()
            process.wait(30)
    else:
        print("server: SKIPPED (evigraph.tools.retrieval_server / remote_search not present)", flush=True)

    bm25s_qps = float("nan")
    if importlib.util.find_spec("bm25s") and importlib.util.find_spec("Stemmer"):
        import bm25s
        import Stemmer

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        stemmer = Stemmer.Stemmer("english")
        started = time.perf_counter()
        retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene", backend="numpy")
        tokens = bm25s.tokenize(passages, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever.index(tokens, show_progress=False)
        print(f"bm25s: indexed in {time.perf_counter() - started:.1f} s", flush=True)

        def bm25s_run() -> None:
            tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
            retriever.retrieve(tokens, k=K, show_progress=False, n_threads=args.threads)

        bm25s_run()
        bm25s_qps = best_qps(bm25s_run, len(queries), args.repeat)
        print(f"bm25s (numpy, own tokenizer + PyStemmer): {bm25s_qps:.0f} q/s", flush=True)
    else:
        print("bm25s: SKIPPED (bm25s / PyStemmer not installed)", flush=True)

    load_p = f" (load p50 {p_load50:.1f} ms, p99 {p_load99:.1f} ms)" if load_requests >= 0 else ""
    print(f"note: p50_ms/p99_ms are single in-process searches{load_p}", flush=True)
    print(
        f"RESULT index_build_s={index_build_s:.1f} tool_qps={tool_qps:.0f} raw_qps={raw_qps:.0f} "
        f"tool_ratio={tool_ratio:.3f} server_qps={server_qps:.0f} server_ratio={server_ratio:.3f} "
        f"p50_ms={p50:.2f} p99_ms={p99:.2f} load_requests={load_requests} load_errors={load_errors} "
        f"bm25s_qps={bm25s_qps:.0f}"
    )


if __name__ == "__main__":
    main()
