"""RLSeek over span-annotated data: the real model, or a scripted oracle that quotes the source and lists the
gold spans back (the pipeline's upper bound: what span mapping and the metrics allow a perfect detector).

    .venv/bin/python examples/rlseek_eval.py --data ../shared/data/faithbench --limit 10 [--oracle] [--out DIR]

``--data`` is anything ``evigraph eval rlseek`` reads (our JSONL, a RAGTruth folder, FaithBench). Without
``--oracle`` this is ``evigraph eval rlseek`` with the configured model (``EVIGRAPH_MODEL``, default the
embedded one). Prints the report (span and sample metrics, format rate, quote statistics) and the wall time.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

import evigraph
from evigraph.agents.rlseek.data import RLSeekRecord, records_from
from evigraph.agents.rlseek.evaluation import EVALUATION
from evigraph.agents.rlseek.parsing import FINAL_KEY
from evigraph.agents.rlseek.prompts import render
from evigraph.config import GeneratorConfig
from evigraph.evaluation.pipeline import evaluate
from evigraph.evaluation.records import subset
from evigraph.generators.factory import make_generator
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.trajectory import Segment

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def oracle_reply(record: RLSeekRecord) -> str:
    """A perfect-format completion: one step per gold span quoting the source sentence that shares the most
    words with the span's sentence (verbatim, so no penalty), and the gold span texts as the final list."""
    texts = render(record.variant, record.source, record.response, record.question)
    sentences = [s.strip() for s in _SENTENCE.findall(texts.source) if s.strip()] or [texts.source[:200]]
    spans = record.gold.spans if record.gold else ()
    blocks, listed = [], []
    for n, (start, end) in enumerate(spans or [(0, 0)], start=1):
        piece = texts.response[start:end]
        words = set(texts.response[max(0, start - 80) : end + 80].lower().split())
        quote = max(sentences, key=lambda s: len(words & set(s.lower().split())))
        verdict = f'"{piece}" is not backed by the source.' if piece else "Everything checked is backed up."
        blocks.append(f"## Step {n}: Check a part of the response\n- Evidence: <quote>{quote}</quote>\n- {verdict}\n")
        if piece:
            listed.append(piece)
    final = f'{{"{FINAL_KEY}": {json.dumps(listed, ensure_ascii=False)}}}'
    if record.variant == "claim":
        return "".join(blocks) + f"<answer>{json.dumps(listed, ensure_ascii=False)}</answer>"
    return "".join(blocks) + f"## Final Output\n```json\n{final}\n```"


def oracle_generator(records: list[RLSeekRecord]) -> ScriptedGenerator:
    """Answers each prompt with :func:`oracle_reply` of the record whose response it shows."""
    by_response = {render(r.variant, r.source, r.response, r.question).response: r for r in records}

    def reply(transcript: list[Segment], _params: object) -> str:
        prompt = transcript[0].text
        for shown, record in by_response.items():
            if shown in prompt:
                return oracle_reply(record)
        raise LookupError("the prompt shows no known response")

    return ScriptedGenerator(reply, name="oracle")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--oracle", action="store_true", help="Scripted oracle instead of the model.")
    parser.add_argument("--model", default=None, help="Model spec (default: the configured model).")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="Run directory (default: a temporary one).")
    args = parser.parse_args()

    records = subset(list(records_from(args.data)), limit=args.limit, shuffle_seed=args.seed)
    if args.oracle:
        generator = oracle_generator(records)
    else:
        generator = make_generator(GeneratorConfig(model=args.model) if args.model else GeneratorConfig())
    graph = evigraph.agent("rlseek", model=generator)  # the generator object: the report names it
    out = args.out or Path(tempfile.mkdtemp(prefix="rlseek-eval-"))
    started = time.perf_counter()
    report = evaluate(
        EVALUATION,
        graph,
        records,
        out_dir=out,
        run_config={"generator": generator.name, "data": str(args.data)},
        options=EVALUATION.options(),
        concurrency=args.concurrency,
    )
    report["wall_s"] = round(time.perf_counter() - started, 1)
    report["generator"] = generator.name
    print(json.dumps(report, indent=2))
    print(f"run directory: {out}")
    if report["n_failed_runs"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
