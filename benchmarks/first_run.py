"""Does the embedded model's first run follow the claim? The README's `evigraph verify` path, measured.

Runs the online Veri-R1 graph with the embedded SmolLM2 (CPU, greedy) the way `evigraph verify` does, over

- ``demo``: 10 claims about the bundled demo corpus (written for this benchmark, gold entries known), and
- ``test``: N claims of the shared ``test_online.jsonl`` (seeded sample) over the test corpus built from
  ``test_offline.jsonl`` (issue 4's recipe; built once into the evigraph cache as ``veri-r1-first-run``).

Per set: ``follows`` = share of runs that searched and whose every query shares a content word with the claim;
``searched`` = share of runs with at least one search; ``gold`` = share of runs that retrieved a gold entry;
``format`` = format rate (F1–F8); ``label`` = label accuracy (clean mode). Peers measured in the same run:
``gold_claim`` = the same share when the claim itself is the query (BM25, top-3: what searching with the
claim's words can reach), and ``label_majority`` = the accuracy of always answering the set's commonest gold
label. It takes a while (a 135M model on CPU); it is a measurement, not a test.

    python benchmarks/first_run.py [--data ../shared/data/veri-r1-claim-verification] [--test-claims 50]
                                   [--concurrency 4] [--constrained/--no-constrained] [--seed 0]

Written against APIs that also exist before issue 9 (``build_veri_r1_graph(generator, search, config)``), so
the "before" numbers come from the same script: run it with the older checkout first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import re
import time
from pathlib import Path
from typing import Any

from evigraph.agents.veri_r1.labels import label_matches, normalize_gold_label, normalize_id
from evigraph.agents.veri_r1.schemas import VeriR1Config
from evigraph.config import GeneratorConfig
from evigraph.corpora.registry import resolve_corpus
from evigraph.generators.factory import make_generator
from evigraph.graphs.veri_r1 import build_veri_r1_graph
from evigraph.tools.search import BM25Search

DEMO_CLAIMS = [
    ("Hog Island Light was first lit in 1853.", "REFUTE", ["Hog Island Light_sentence_0"]),
    ("Cape Charles Light stands on Smith Island.", "SUPPORT", ["Cape Charles Light_sentence_0"]),
    ("Assateague Light has red and white stripes.", "SUPPORT", ["Assateague Light_sentence_0"]),
    ("The Fresnel lens was invented by Augustin-Jean Fresnel.", "SUPPORT", ["Fresnel lens_sentence_0"]),
    ("The Chesapeake Bay is the smallest estuary in the United States.", "REFUTE", ["Chesapeake Bay_sentence_0"]),
    ("The old Cape Henry Light tower was completed in 1792.", "SUPPORT", ["Cape Henry Light_sentence_0"]),
    (
        "The United States Lighthouse Board was replaced by the Bureau of Lighthouses in 1910.",
        "SUPPORT",
        ["United States Lighthouse Board_sentence_3"],
    ),
    ("Barrier islands run perpendicular to the mainland coast.", "REFUTE", ["Barrier island_sentence_0"]),
    ("Cape Charles Light was automated in 1963.", "SUPPORT", ["Cape Charles Light_sentence_3"]),
    ("Assateague Light is about 300 feet tall.", "REFUTE", ["Assateague Light_sentence_3"]),
]

_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


def content_words(text: str) -> set[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1}


def test_claims(data: Path, n: int, seed: int) -> list[tuple[str, str, list[str]]]:
    rows = [json.loads(line) for line in (data / "test_online.jsonl").read_text(encoding="utf-8").splitlines()]
    random.Random(seed).shuffle(rows)
    return [(r["question"], r["golden_answers"]["label"], r["golden_answers"]["evidence"]) for r in rows[:n]]


def test_corpus(data: Path) -> Path:
    from evigraph.agents.veri_r1.data import write_offline_corpus
    from evigraph.corpora.build import build_corpus
    from evigraph.corpora.registry import corpora_dir

    target = corpora_dir() / "veri-r1-first-run"
    docs = target.with_name("veri-r1-first-run-docs.jsonl")
    if not docs.is_file():
        write_offline_corpus(data / "test_offline.jsonl", docs)
    build_corpus(docs, target)
    return target


async def run_set(name: str, claims: list[tuple[str, str, list[str]]], graph: Any, search: Any, concurrency: int):
    limit = asyncio.Semaphore(concurrency)

    async def one(claim: str) -> dict[str, Any]:
        async with limit:
            result = await graph.ainvoke({"claim": claim})
        return result["output"]

    started = time.perf_counter()
    outputs = await asyncio.gather(*(one(c) for c, _, _ in claims))
    wall = time.perf_counter() - started
    follows = searched = gold_hit = gold_claim = formatted = correct = 0
    for (claim, label, evidence), output in zip(claims, outputs, strict=True):
        words = content_words(claim)
        gold = {normalize_id(i) for i in evidence}
        searched += bool(output.queries)
        follows += bool(output.queries) and all(content_words(q) & words for q in output.queries)
        gold_hit += bool(gold & {normalize_id(i) for i in output.retrieved_ids})
        gold_claim += bool(gold & {normalize_id(h.id) for h in search.search(claim, 3)})
        formatted += output.format_ok
        correct += label_matches(output.label, normalize_gold_label(label))
    n = len(claims)
    majority = collections.Counter(normalize_gold_label(label) for _, label, _ in claims).most_common(1)[0][1]
    figures = {
        "n": n,
        "follows": follows / n,
        "searched": searched / n,
        "gold": gold_hit / n,
        "gold_claim": gold_claim / n,
        "format": formatted / n,
        "label": correct / n,
        "label_majority": majority / n,
        "s_per_claim": wall / n,
    }
    print(f"{name}: " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()))
    for (claim, _, _), output in list(zip(claims, outputs, strict=True))[:3]:
        print(f"  {claim!r}: queries {output.queries} -> {output.label} {output.evidence}")
    for (claim, _, _), output in zip(claims, outputs, strict=True):
        if not output.format_ok:  # what broke the format, for the record
            print(f"  format failed {output.format_failed} ({output.n_turns} turns): {claim!r}")
    return figures


async def main(args: argparse.Namespace) -> None:
    generator = make_generator(GeneratorConfig(model="smollm2", constrained=args.constrained))
    config = VeriR1Config(constrained=args.constrained)
    sets = [("demo", DEMO_CLAIMS, BM25Search(resolve_corpus("demo"), name="demo"))]
    if args.test_claims:
        corpus = BM25Search(test_corpus(args.data), name="veri-r1-first-run")
        sets.append(("test", test_claims(args.data, args.test_claims, args.seed), corpus))
    results = {}
    for name, claims, search in sets:
        graph = build_veri_r1_graph(generator, search, config)
        results[name] = await run_set(name, claims, graph, search, args.concurrency)
    headline = " ".join(
        f"{name}_{key}={value:.3f}"
        for name, figures in results.items()
        for key, value in figures.items()
        if key in ("follows", "gold", "gold_claim", "format", "label", "label_majority", "s_per_claim")
    )
    ratio = {name: f["gold"] / f["gold_claim"] if f["gold_claim"] else 0.0 for name, f in results.items()}
    print(f"RESULT {headline} " + " ".join(f"{n}_gold_vs_claim_query={r:.2f}" for n, r in ratio.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/veri-r1-claim-verification"
    )
    parser.add_argument("--test-claims", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--constrained", action=argparse.BooleanOptionalAction, default=True)
    asyncio.run(main(parser.parse_args()))
