"""Grouped BM25 builds at scale: ``evigraph corpus build --group-sentences 3`` against Pyserini's own indexer.

Source (deterministic, offline): a seeded generator of Wikipedia-like pages (a title, 1–4 paragraphs of 2–7
sentences of Zipf-distributed pseudo-words, with years, parentheses and the abbreviations that trip sentence
splitters: "Dr.", "U.S.", "c."), written as one JSONL with both ``text`` and FEVER's ``lines`` field, until
the pages make ``--entries`` 3-sentence entries.

Each measured step runs in its own process (its own JVM, its own peak RSS), with ``--threads`` for everything:

* ``given``: ``build_corpus(..., group_sentences=3)`` using the source's ``lines`` as they are (FEVER's case);
* ``rules`` (and any other ``--builds`` splitter: ``model``, ``sentencex``): the same pages with
  ``sentences_field="none"``, so ``text`` is split by that splitter on ``--threads`` processes;
* the peer: Pyserini's ``LuceneIndexer`` (``-storeRaw``, ``add_batch_dict`` batches of 2,000, same threads)
  indexing exactly the entries that build wrote (its ``collection/docs.jsonl``), timed from the JVM being up;
  ``build_ratio_vs_pyserini = build_s / pyserini_s`` (goal ≤ 2; the whole build, reading and writing
  included, against indexing alone);
* search on the ``given`` index: ``BM25Search.batch_search`` against raw ``LuceneSearcher.batch_search`` (+ the
  stored JSON of every hit), same queries (a random sentence with ~30 % of its words dropped, ≤ 12 words),
  same threads, interleaved runs, best of ``--repeat``: ``qps_ratio`` (goal ≥ 0.9); ``p99_ms``: one
  ``BM25Search.search`` per query;
* ``/retrieve`` under load (``--retrieve-clients``, default 64; 0 skips it): ``evigraph corpus serve`` on the
  ``given`` index (its own process, a free loopback port, ``--threads``), driven by that many keep-alive HTTP/1.1
  clients in this process, each POSTing ``{"queries": [one query], "topk": 3}`` back to back; the peer is the
  same queries in-process, ``BM25Search.batch_search`` of ``clients`` queries at a time. That is the fair peer:
  the server answers with exactly that call on the requests that arrive together (so the ratio is what HTTP,
  JSON and the batching window cost), and ``BM25Search`` against raw ``LuceneSearcher`` is ``qps_ratio`` above
  (``retrieve_ratio_vs_raw`` chains the two ratios; it is not measured directly). Two interleaved rounds of
  ``--retrieve-seconds / 2`` per side after 2 s of warm-up; the hits over HTTP are first checked equal to the
  in-process ones. ``retrieve_qps``, ``retrieve_p50_ms`` / ``retrieve_p99_ms`` (per request, as a client sees
  it), ``retrieve_errors`` (anything but a 200 with 3 hits; goal 0), ``retrieve_ratio`` (goal ≥ 0.9 would mean
  HTTP is nearly free; the clients share the cores with the server).

Peak RSS is the build process's own (the JVM included); split builds also report the largest worker's.

``--splitter-text FILE`` instead compares the splitters on real text (every ``paragraph_text`` / ``text`` /
``contents`` string of a JSONL, e.g. ``../shared/data/hotpotqa-dev-ircot500/dev_subsampled.jsonl``), one
process each: sentences/s, and agreement with ``model`` (shared sentence ends over all ends, the share of
``model``'s ends found, the share of texts split identically). ``rules`` and ``model`` always; ``sentencex``
and ``blingfire`` when installed.

    .venv/bin/python benchmarks/corpus_scale.py [--entries 100000] [--threads N] [--builds given,rules] [--out DIR]
    .venv/bin/python benchmarks/corpus_scale.py --splitter-text TEXTS.jsonl [--texts 4000]

On a user's machine, the issue's size: ``--entries 2000000 --threads $(nproc)`` (about 1.3 GB of source and
1.6 GB of corpus on disk; see docs/corpora.md for the per-entry costs measured here).

Length: one benchmark script whose phases (source, build, peer build, search, /retrieve load, splitter
comparison) share the source and each run in a child of the same file; split, each would need the others.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lean_http import Connection, uvicorn_subprocess  # a sibling script (this folder is on sys.path)

K = 3
GROUP = 3
ABBREVIATIONS = ("Dr.", "U.S.", "c.", "St.", "Mr.", "Inc.")


# --------------------------------------------------------------------------------------------- source


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    syllables = [a + b for a in "bcdfghjklmnprstvwz" for b in "aeiou"] + ["ar", "en", "is", "on", "ul", "th"]
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.choice((1, 2, 2, 3, 3, 4)))))
    return sorted(words)


class PageMaker:
    """Wikipedia-like pages from a seed: the same seed gives the same pages."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = _vocabulary(self.rng, 30_000)
        # Zipf-like weights: a few very common words, a long tail (as in real text, which BM25 cares about).
        self.cumulative = list(itertools.accumulate(1 / (rank + 1) ** 1.05 for rank in range(len(self.words))))

    def sentence(self, title: str) -> str:
        rng = self.rng
        words = rng.choices(self.words, cum_weights=self.cumulative, k=rng.randint(6, 28))
        if rng.random() < 0.35:
            words.insert(rng.randrange(len(words)), str(rng.randint(1500, 2024)))
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), rng.choice(ABBREVIATIONS))
        if rng.random() < 0.15:
            at = rng.randrange(len(words))
            words[at] = f"({words[at]}"
            words[-1] = words[-1] + ")"
        if rng.random() < 0.3:
            words[0:1] = title.split()
        if rng.random() < 0.25:
            words[rng.randrange(1, len(words))] += ","
        return " ".join(words)[:1].upper() + " ".join(words)[1:] + rng.choice(".....!?")

    def page(self, number: int) -> dict[str, Any]:
        rng = self.rng
        title = " ".join(w.capitalize() for w in rng.choices(self.words[2000:], k=rng.randint(1, 3)))
        title = f"{title} ({number})"  # unique, like Wikipedia's disambiguated titles
        sentences = [self.sentence(title) for _ in range(sum(rng.randint(2, 7) for _ in range(rng.randint(1, 4))))]
        lines = "\n".join(f"{i}\t{s}" for i, s in enumerate(sentences))
        return {"id": title.replace(" ", "_"), "title": title, "text": " ".join(sentences), "lines": lines}


def write_source(path: Path, entries: int, seed: int) -> tuple[int, int]:
    """Pages until their sentences make ``entries`` groups of 3; returns (pages, sentences)."""
    maker, made, pages, sentences = PageMaker(seed), 0, 0, 0
    with path.open("w", encoding="utf-8") as handle:
        while made < entries:
            page = maker.page(pages)
            count = page["lines"].count("\n") + 1
            handle.write(json.dumps(page) + "\n")
            made += math.ceil(count / GROUP)
            pages += 1
            sentences += count
    return pages, sentences


def queries_from(path: Path, count: int, seed: int) -> list[str]:
    """Claim-like queries: a random sentence of a random page (reservoir over the file), ~30 % of words dropped."""
    rng = random.Random(seed)
    reservoir: list[str] = []
    with path.open(encoding="utf-8") as handle:
        for seen, line in enumerate(handle):
            if seen < count:
                reservoir.append(line)
            elif (slot := rng.randrange(seen + 1)) < count:
                reservoir[slot] = line
    queries = []
    for line in reservoir:
        sentence = rng.choice(json.loads(line)["lines"].split("\n")).split("\t")[1]
        words = [w.strip(".,!?()") for w in sentence.split() if rng.random() > 0.3]
        queries.append(" ".join(words[:12]) or sentence)
    return queries


# --------------------------------------------------------------------------------------------- phases


def _mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def _peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def phase_build(source: Path, out: Path, kind: str, threads: int) -> dict[str, Any]:
    from evigraph.corpora.build import build_corpus
    from evigraph.corpora.jvm import start_jvm

    start_jvm()  # both sides are timed from a running JVM
    started = time.perf_counter()
    manifest = build_corpus(
        source,
        out,
        group_sentences=GROUP,
        splitter_kind="rules" if kind == "given" else kind,
        sentences_field="auto" if kind == "given" else "none",
        threads=threads,
        force=True,
    )
    return {
        "seconds": time.perf_counter() - started,
        "entries": manifest.entries,
        "peak_rss_mb": _peak_mb(resource.RUSAGE_SELF),
        "worker_rss_mb": _peak_mb(resource.RUSAGE_CHILDREN),
        "index_mb": _mb(out / "index"),
        "collection_mb": _mb(out / "collection"),
    }


def phase_pyserini(collection: Path, index: Path, threads: int) -> dict[str, Any]:
    from evigraph.corpora.jvm import start_jvm

    start_jvm()
    from pyserini.index.lucene import LuceneIndexer

    started = time.perf_counter()
    indexer = LuceneIndexer(args=["-index", str(index), "-storeRaw"], threads=threads)
    batch: list[dict[str, str]] = []
    entries = 0
    with collection.open(encoding="utf-8") as handle:
        for line in handle:
            batch.append(json.loads(line))
            if len(batch) >= 2000:
                indexer.add_batch_dict(batch)
                entries += len(batch)
                batch = []
    if batch:
        indexer.add_batch_dict(batch)
        entries += len(batch)
    indexer.close()
    return {
        "seconds": time.perf_counter() - started,
        "entries": entries,
        "peak_rss_mb": _peak_mb(resource.RUSAGE_SELF),
        "index_mb": _mb(index),
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def phase_search(corpus: Path, queries: list[str], threads: int, repeat: int) -> dict[str, Any]:
    from evigraph.tools.search import BM25Search

    tool = BM25Search(corpus, threads=threads)
    lucene = tool._lucene
    qids = [str(i) for i in range(len(queries))]

    def raw() -> list[list[dict[str, Any]]]:
        hits = lucene.batch_search(queries, qids, K, threads)
        return [[json.loads(lucene.doc(h.docid).raw()) for h in hits[qid]] for qid in qids]

    for _ in range(2):  # JIT warm-up of both paths
        tool.batch_search(queries, K)
        raw()
    assert [[e.text for e in hits] for hits in tool.batch_search(queries, K)] == [
        [d["contents"] for d in hits] for hits in raw()
    ], "the tool and the raw baseline disagree"
    tool_qps, raw_qps = 0.0, 0.0
    for _ in range(repeat):  # interleaved, so drift hits both alike
        started = time.perf_counter()
        tool.batch_search(queries, K)
        tool_qps = max(tool_qps, len(queries) / (time.perf_counter() - started))
        started = time.perf_counter()
        raw()
        raw_qps = max(raw_qps, len(queries) / (time.perf_counter() - started))
    latencies = []
    for query in queries:
        started = time.perf_counter()
        tool.search(query, K)
        latencies.append((time.perf_counter() - started) * 1000)
    return {
        "tool_qps": tool_qps,
        "raw_qps": raw_qps,
        "p50_ms": _percentile(latencies, 0.5),
        "p99_ms": _percentile(latencies, 0.99),
    }


@contextlib.contextmanager
def _corpus_server(corpus: Path, threads: int) -> Iterator[tuple[int, int]]:
    """``evigraph corpus serve`` on a free loopback port (the system picks it); yields (port, pid)."""
    argv = [sys.executable, "-m", "evigraph.cli.app", "corpus", "serve", str(corpus), "--host", "127.0.0.1",
            "--port", "0", "--topk", str(K), "--threads", str(threads)]  # fmt: skip
    with uvicorn_subprocess(argv, name="evigraph corpus serve", timeout_s=300) as found:
        yield found


def _peak_rss_of(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _http_load(port: int, queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` keep-alive connections, each POSTing ``/retrieve`` (one query, ``topk`` K) back to back for
    ``seconds``; anything but a 200 with K hits for the one query is an error."""
    latencies: list[float] = []
    errors: list[str] = []
    bodies = [json.dumps({"queries": [q], "topk": K}).encode() for q in queries]
    turn = itertools.count()
    stop = time.perf_counter() + seconds

    async def client() -> None:
        connection = Connection("127.0.0.1", port)
        try:
            while time.perf_counter() < stop:
                body = bodies[next(turn) % len(bodies)]
                started = time.perf_counter()
                try:
                    status, payload = await connection.post("/retrieve", body)
                    result = json.loads(payload)["result"] if status == 200 else None
                    ok = result is not None and len(result) == 1 and len(result[0]) == K
                    error = None if ok else f"HTTP {status}: {payload[:200]!r}"
                except Exception as failure:
                    error = f"{type(failure).__name__}: {failure}"
                if error is None:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors.append(error)
        finally:
            connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return {"latencies": latencies, "errors": errors, "seconds": time.perf_counter() - started}


def _batched_load(tool: Any, queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """The in-process peer: ``clients`` queries outstanding at a time, answered together by one
    ``BM25Search.batch_search`` (what the server itself does with the requests that arrive together); each
    query's latency is its batch's time."""
    latencies: list[float] = []
    turn = itertools.count()
    stop = started = time.perf_counter()
    stop += seconds
    while time.perf_counter() < stop:
        batch = [queries[next(turn) % len(queries)] for _ in range(clients)]
        began = time.perf_counter()
        tool.batch_search(batch, K)
        latencies += [time.perf_counter() - began] * clients
    return {"latencies": latencies, "errors": [], "seconds": time.perf_counter() - started}


def phase_retrieve(corpus: Path, queries: list[str], threads: int, clients: int, seconds: float) -> dict[str, Any]:
    """``POST /retrieve`` under ``clients`` concurrent clients against the in-process batched peer, in two
    interleaved rounds of ``seconds / 2`` each (drift from other jobs falls on both)."""
    from evigraph.tools.search import BM25Search

    tool = BM25Search(corpus, threads=threads)
    with _corpus_server(corpus, threads) as (port, pid):
        # The same hits over HTTP as in-process, before any timing.
        sample = queries[:50]
        body = json.dumps({"queries": sample}).encode()
        status, payload = asyncio.run(Connection("127.0.0.1", port).post("/retrieve", body))
        assert status == 200, payload[:500]
        remote = [[doc["id"] for doc in hits] for hits in json.loads(payload)["result"]]
        assert remote == [[e.id for e in hits] for hits in tool.batch_search(sample, K)], "HTTP and in-process differ"
        asyncio.run(_http_load(port, queries, clients, 2.0))  # warm-up of both
        _batched_load(tool, queries, clients, 2.0)
        http: dict[str, Any] = {"latencies": [], "errors": [], "seconds": 0.0}
        local: dict[str, Any] = {"latencies": [], "errors": [], "seconds": 0.0}
        for round_ in range(2):
            runs = [("http", http), ("local", local)]
            for name, into in runs if round_ == 0 else reversed(runs):
                if name == "http":
                    got = asyncio.run(_http_load(port, queries, clients, seconds / 2))
                else:
                    got = _batched_load(tool, queries, clients, seconds / 2)
                for key in into:
                    into[key] += got[key]
        server_rss = _peak_rss_of(pid)
    ms = [1000 * x for x in http["latencies"]]
    local_ms = [1000 * x for x in local["latencies"]]
    return {
        "qps": len(ms) / http["seconds"],
        "p50_ms": _percentile(ms, 0.5) if ms else float("nan"),
        "p99_ms": _percentile(ms, 0.99) if ms else float("nan"),
        "errors": len(http["errors"]),
        "first_errors": list(dict.fromkeys(http["errors"]))[:3],
        "peer_qps": len(local_ms) / local["seconds"],
        "peer_p50_ms": _percentile(local_ms, 0.5),
        "peer_p99_ms": _percentile(local_ms, 0.99),
        "server_rss_mb": server_rss,
    }


def retrieve_summary(found: dict[str, Any], clients: int, qps_ratio: float) -> str:
    """Print the /retrieve measurement; returns its RESULT fields (the ratio against raw Lucene chains the two
    measured ratios: HTTP/in-process batched × BM25Search/raw)."""
    ratio = found["qps"] / found["peer_qps"]
    print(
        f"/retrieve ({clients} clients, 1 query each, k={K}): {found['qps']:.0f} q/s, p50 {found['p50_ms']:.1f} ms, "
        f"p99 {found['p99_ms']:.1f} ms, {found['errors']} errors | in-process BM25Search.batch_search of {clients} "
        f"at a time: {found['peer_qps']:.0f} q/s, p50 {found['peer_p50_ms']:.1f} ms, p99 {found['peer_p99_ms']:.1f} ms "
        f"| ratio {ratio:.3f}; server peak RSS {found['server_rss_mb']:.0f} MB",
        flush=True,
    )
    for error in found["first_errors"]:
        print(f"  error: {error}", flush=True)
    return (
        f"retrieve_clients={clients} retrieve_qps={found['qps']:.0f} retrieve_p50_ms={found['p50_ms']:.1f} "
        f"retrieve_p99_ms={found['p99_ms']:.1f} retrieve_errors={found['errors']} "
        f"retrieve_peer_qps={found['peer_qps']:.0f} retrieve_ratio={ratio:.3f} "
        f"retrieve_ratio_vs_raw={ratio * qps_ratio:.3f} retrieve_server_rss_mb={found['server_rss_mb']:.0f}"
    )


def _texts(path: Path, limit: int) -> list[str]:
    texts: dict[str, None] = {}

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("paragraph_text", "text", "contents") and isinstance(item, str) and item.strip():
                    texts.setdefault(item.strip())
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    with path.open(encoding="utf-8") as handle:
        for line in handle:
            walk(json.loads(line))
            if len(texts) >= limit:
                break
    return list(texts)[:limit]


def compare_splitters(path: Path, limit: int) -> None:
    import importlib.util

    from evigraph.corpora.entries import load_sentence_splitter

    texts = _texts(path, limit)
    candidates = {kind: load_sentence_splitter(kind)[0] for kind in ("model", "rules")}
    if importlib.util.find_spec("sentencex"):
        candidates["sentencex"] = load_sentence_splitter("sentencex")[0]
    if importlib.util.find_spec("blingfire"):
        import blingfire

        def blingfire_split(text: str) -> list[tuple[int, int]]:
            return [(a, b) for a, b in blingfire.text_to_sentences_and_offsets(text)[1] if text[a:b].strip()]

        candidates["blingfire"] = blingfire_split
    spans, summary = {}, []
    for kind, split in candidates.items():
        split(texts[0])  # first-call set-up
        started = time.perf_counter()
        spans[kind] = [split(text) for text in texts]
        seconds = time.perf_counter() - started
        count = sum(map(len, spans[kind]))
        shared = union = reference = identical = 0
        for mine, theirs in zip(spans[kind], spans["model"], strict=True):
            ends, model_ends = {end for _, end in mine}, {end for _, end in theirs}
            shared, union = shared + len(ends & model_ends), union + len(ends | model_ends)
            reference, identical = reference + len(model_ends), identical + (mine == theirs)
        print(
            f"{kind:>9}: {count} sentences of {len(texts)} texts, {count / seconds:.0f} sentences/s; agreement with "
            f"model {shared / union:.4f} (ends shared / all ends), model's ends found {shared / reference:.4f}, "
            f"texts split identically {identical / len(texts):.4f}",
            flush=True,
        )
        summary.append(f"{kind}_sentences_per_s={count / seconds:.0f} {kind}_agreement={shared / union:.4f}")
    print(f"RESULT texts={len(texts)} {' '.join(summary)}", flush=True)


def _in_child(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--phase", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    if done.returncode != 0:
        raise SystemExit(f"phase {args[0]} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--builds", default="given,rules", help="given and/or splitters: rules, model, sentencex")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    parser.add_argument("--splitter-text", type=Path, help="compare the splitters on this JSONL's texts instead")
    parser.add_argument("--texts", type=int, default=4000, help="texts for --splitter-text")
    parser.add_argument("--retrieve-clients", type=int, default=64, help="clients of POST /retrieve (0: skip)")
    parser.add_argument("--retrieve-seconds", type=float, default=20.0, help="seconds of /retrieve load per side")
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.splitter_text:
        compare_splitters(args.splitter_text, args.texts)
        return
    if args.phase:
        name, *rest = args.phase
        if name == "build":
            result = phase_build(Path(rest[0]), Path(rest[1]), rest[2], int(rest[3]))
        elif name == "pyserini":
            result = phase_pyserini(Path(rest[0]), Path(rest[1]), int(rest[2]))
        elif name == "retrieve":
            queries = json.loads(Path(rest[1]).read_text(encoding="utf-8"))
            result = phase_retrieve(Path(rest[0]), queries, int(rest[2]), int(rest[3]), float(rest[4]))
        else:
            queries = json.loads(Path(rest[1]).read_text(encoding="utf-8"))
            result = phase_search(Path(rest[0]), queries, int(rest[2]), int(rest[3]))
        print(json.dumps(result))
        return

    work = args.out or Path(tempfile.mkdtemp(prefix="corpus-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        source = work / "pages.jsonl"
        started = time.perf_counter()
        pages, sentences = write_source(source, args.entries, args.seed)
        print(
            f"source: {pages:,} pages, {sentences:,} sentences, {source.stat().st_size / 2**20:.0f} MB "
            f"({time.perf_counter() - started:.1f} s to generate); threads={args.threads}",
            flush=True,
        )
        results: dict[str, dict[str, Any]] = {}
        for kind in args.builds.split(","):
            build = _in_child("build", str(source), str(work / kind), kind, str(args.threads))
            shutil.rmtree(work / f"{kind}-peer", ignore_errors=True)
            peer = _in_child(
                "pyserini",
                str(work / kind / "collection" / "docs.jsonl"),
                str(work / f"{kind}-peer"),
                str(args.threads),
            )
            assert peer["entries"] == build["entries"]
            ratio = build["seconds"] / peer["seconds"]
            results[kind] = {**build, "peer": peer, "ratio": ratio}
            per_entry_us = build["seconds"] / build["entries"] * 1e6
            print(
                f"{kind:>9}: {build['entries']:,} entries in {build['seconds']:.1f} s ({per_entry_us:.0f} µs/entry), "
                f"peak RSS {build['peak_rss_mb']:.0f} MB (workers {build['worker_rss_mb']:.0f} MB), "
                f"index {build['index_mb']:.0f} MB | Pyserini {peer['seconds']:.1f} s, "
                f"RSS {peer['peak_rss_mb']:.0f} MB, index {peer['index_mb']:.0f} MB | ratio {ratio:.2f} (goal ≤ 2)",
                flush=True,
            )
        first = next(iter(results))
        query_file = work / "queries.json"
        query_file.write_text(json.dumps(queries_from(source, args.queries, args.seed)), encoding="utf-8")
        search = _in_child("search", str(work / first), str(query_file), str(args.threads), str(args.repeat))
        qps_ratio = search["tool_qps"] / search["raw_qps"]
        print(
            f"search ({first}, k={K}, threads={args.threads}): BM25Search {search['tool_qps']:.0f} q/s, raw "
            f"LuceneSearcher {search['raw_qps']:.0f} q/s, ratio {qps_ratio:.3f} (goal ≥ 0.9); single search p50 "
            f"{search['p50_ms']:.2f} ms, p99 {search['p99_ms']:.2f} ms",
            flush=True,
        )
        retrieve = ""
        if args.retrieve_clients > 0:
            found = _in_child(
                "retrieve",
                str(work / first),
                str(query_file),
                str(args.threads),
                str(args.retrieve_clients),
                str(args.retrieve_seconds),
            )
            retrieve = retrieve_summary(found, args.retrieve_clients, search["tool_qps"] / search["raw_qps"]) + " "
        main_build = results[first]
        extra = " ".join(
            f"{kind}_build_s={r['seconds']:.1f} {kind}_ratio_vs_pyserini={r['ratio']:.2f}"
            for kind, r in results.items()
            if kind != first
        )
        print(
            f"RESULT entries={main_build['entries']} build_s={main_build['seconds']:.1f} "
            f"build_ratio_vs_pyserini={main_build['ratio']:.2f} pyserini_s={main_build['peer']['seconds']:.1f} "
            f"peak_rss_mb={main_build['peak_rss_mb']:.0f} pyserini_rss_mb={main_build['peer']['peak_rss_mb']:.0f} "
            f"index_mb={main_build['index_mb']:.0f} {extra + ' ' if extra else ''}qps_ratio={qps_ratio:.3f} "
            f"p99_ms={search['p99_ms']:.2f} {retrieve}threads={args.threads}",
            flush=True,
        )
    finally:
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
