"""Recall of gold evidence on Veri-R1's real claims: BM25, dense (all-MiniLM-L6-v2) and hybrid, side by side.

Corpus: every entry Veri-R1's released files hold text for, the ``[[id]]: text`` candidate passages embedded
in the prompts of ``test_offline.jsonl`` (the other files carry ids and claims only), ids as given, first text
wins (:func:`evigraph.agents.veri_r1.data.offline_corpus`); built with ``build_corpus(..., dense=ENCODER)``
(``--dense``, default ``minilm``), one entry per passage (no grouping), the FAISS index flat.

Claims: each claim is the query, as is. Two sets: the 512 claims of ``test_offline.jsonl`` (every gold id is in
the corpus), and every claim of every released file whose gold ids are all in the corpus (deduplicated by
claim text). Per claim, ``recall@k`` = gold ids among the top k / gold ids; ``all@k`` = 1 when every gold id is
in the top k; both averaged over claims.

Hybrid is Pyserini's fusion (``HybridSearcher``): depth 100 from each side, ``alpha · BM25 + dense`` with
alpha 0.1 and no normalisation (Pyserini's defaults), and the same with ``--normalization``.

    .venv/bin/python benchmarks/recall_real.py [--data ../shared/data/veri-r1-claim-verification] [--out DIR]
        [--dense minilm|e5-base-v2|e5-base-v2:DIR]

Ends with ``RESULT`` (recall@3 / @5 per method on the 512 claims). The ratios are against BM25 in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

from evigraph.agents.veri_r1.data import claim_record_from_mapping, offline_corpus
from evigraph.jsonl import iter_json_objects

KS = (3, 5)


def claims_of(data: Path) -> tuple[list[tuple[str, frozenset[str]]], list[tuple[str, frozenset[str]]], set[str]]:
    """(test_offline claims, every fully covered claim of every file, corpus ids)."""
    ids = {e.id for e in offline_corpus(data / "test_offline.jsonl")}
    offline: list[tuple[str, frozenset[str]]] = []
    every: dict[str, frozenset[str]] = {}
    for path in sorted(data.glob("*.jsonl")):
        for _, record in iter_json_objects(path):
            try:
                claim = claim_record_from_mapping(record)
            except ValueError:
                continue
            gold = frozenset(claim.gold.evidence) if claim.gold else frozenset()
            if not gold or not gold <= ids:
                continue
            if path.name == "test_offline.jsonl":
                offline.append((claim.claim, gold))
            every.setdefault(claim.claim, gold)
    return offline, list(every.items()), ids


def score(hits: Sequence[Sequence[str]], claims: Sequence[tuple[str, frozenset[str]]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in KS:
        recall = [len(gold & set(h[:k])) / len(gold) for h, (_, gold) in zip(hits, claims, strict=True)]
        complete = [float(gold <= set(h[:k])) for h, (_, gold) in zip(hits, claims, strict=True)]
        out[f"recall@{k}"] = sum(recall) / len(recall)
        out[f"all@{k}"] = sum(complete) / len(complete)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # The project's shared data sits beside the repository (../shared/data).
    default_data = Path(__file__).resolve().parents[2] / "shared" / "data" / "veri-r1-claim-verification"
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a temp folder per encoder)")
    parser.add_argument("--dense", default="minilm", help="encoder preset (e5-base-v2 needs the hub or PRESET:DIR)")
    parser.add_argument("--depth", type=int, default=100, help="hits from each side before hybrid fusion")
    args = parser.parse_args()

    from evigraph.agents.veri_r1.data import write_offline_corpus
    from evigraph.corpora.build import build_corpus
    from evigraph.tools.dense_search import DenseSearch, HybridSearch
    from evigraph.tools.search import BM25Search

    if args.out is None:
        args.out = Path(tempfile.gettempdir()) / f"evigraph-recall-real-{args.dense.replace('/', '_')}"
    offline, every, ids = claims_of(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    source = args.out / "entries.jsonl"
    entries = write_offline_corpus(args.data / "test_offline.jsonl", source)
    started = time.perf_counter()
    build_corpus(source, args.out / "corpus", dense=args.dense)
    print(f"corpus: {entries} entries ({len(ids)} ids) built or reused in {time.perf_counter() - started:.1f} s")
    print(f"claims: {len(offline)} of test_offline.jsonl; {len(every)} fully covered claims across every file")

    bm25 = BM25Search(args.out / "corpus", threads=2)
    dense = DenseSearch(args.out / "corpus", threads=2)
    methods: dict[str, Any] = {
        "bm25": bm25,
        f"dense ({args.dense})": dense,
        "hybrid (alpha 0.1)": HybridSearch(bm25, dense, depth=args.depth),
        "hybrid (alpha 0.1, normalised)": HybridSearch(bm25, dense, depth=args.depth, normalization=True),
    }
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name, tool in methods.items():
        for label, claims in (("offline", offline), ("every", every)):
            started = time.perf_counter()
            hits = tool.batch_search([c for c, _ in claims], max(KS))
            seconds = time.perf_counter() - started
            results.setdefault(name, {})[label] = {
                **score([[h.id for h in q] for q in hits], claims),
                "qps": len(claims) / seconds,
            }

    print()
    print(
        f"| method | recall@3 | recall@5 | all gold @5 | recall@3 (all files, n={len(every)}) | recall@5 (all files) |"
    )
    print("|---|---|---|---|---|---|")
    for name, row in results.items():
        o, e = row["offline"], row["every"]
        print(
            f"| {name} | {o['recall@3']:.3f} | {o['recall@5']:.3f} | {o['all@5']:.3f} | {e['recall@3']:.3f} | "
            f"{e['recall@5']:.3f} |"
        )
    base = results["bm25"]["offline"]
    print()
    for name, row in results.items():
        o = row["offline"]
        print(
            f"{name}: recall@5 / bm25 = {o['recall@5'] / base['recall@5']:.3f}, "
            f"{o['qps']:.0f} claims/s ({len(offline)} claims, one batch)"
        )
    keys = {
        "bm25": "bm25",
        f"dense ({args.dense})": "dense",
        "hybrid (alpha 0.1)": "hybrid",
        "hybrid (alpha 0.1, normalised)": "hybrid_norm",
    }
    fields = " ".join(
        f"{keys[name]}_r{k}={row['offline'][f'recall@{k}']:.3f}" for name, row in results.items() for k in KS
    )
    best = max(results, key=lambda n: results[n]["offline"]["recall@5"])
    print(f"RESULT claims={len(offline)} entries={entries} {fields} best_r5={keys[best]}")
    (args.out / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
