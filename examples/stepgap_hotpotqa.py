"""StepGap end to end on HotpotQA: a Search-R1 policy answers multi-hop questions over a BM25 index of their
paragraphs, and the checker labels every step (no-gap / CC / IE / MB with a repair action).

    .venv/bin/python examples/stepgap_hotpotqa.py --data ../shared/data/hotpotqa-dev-ircot500/dev_subsampled.jsonl \\
        --questions 5 [--model smollm2] [--judge MODEL] [--nli NLI_CHECKPOINT_DIR] [--out report.json]

The paragraphs of the chosen questions (ten each, two of them supporting) become one corpus, one entry per
paragraph, built into the evigraph cache. Without ``--nli`` the judge scores entailment by label-token logprobs,
which is weaker than a cross-encoder; the report names which NLI ran. Prints each question's answer, EM and step
labels, then the gap-type distribution and the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from evigraph.agents.stepgap.data import QuestionRecord, question_record
from evigraph.agents.stepgap.schemas import StepGapConfig
from evigraph.config import GeneratorConfig
from evigraph.corpora.build import build_corpus
from evigraph.corpora.registry import corpora_dir
from evigraph.generators.factory import make_generator
from evigraph.graphs.stepgap import build_stepgap_graph
from evigraph.tools.nli import make_nli
from evigraph.tools.search import BM25Search

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/hotpotqa-dev-ircot500/dev_subsampled.jsonl"


def read_questions(path: Path, n: int) -> list[QuestionRecord]:
    with path.open(encoding="utf-8") as handle:
        return [question_record(json.loads(line)) for line, _ in zip(handle, range(n), strict=False)]


def paragraph_corpus(questions: list[QuestionRecord]) -> Path:
    """A BM25 corpus with one entry per paragraph of ``questions`` (built once into the cache)."""
    paragraphs = {p["id"]: p for q in questions for p in q.paragraphs}
    key = hashlib.sha256("\n".join(sorted(paragraphs)).encode()).hexdigest()[:12]
    target = corpora_dir() / f"hotpotqa-paragraphs-{key}"
    source = target.with_name(f"{target.name}-docs.jsonl")
    if not source.is_file():
        source.parent.mkdir(parents=True, exist_ok=True)
        lines = (json.dumps({"id": p["id"], "title": p["title"], "text": p["text"]}) for p in paragraphs.values())
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_corpus(source, target, group_sentences=1000)  # one entry per paragraph
    return target


async def main(args: argparse.Namespace) -> dict[str, Any]:
    questions = read_questions(args.data, args.questions)
    search = BM25Search(paragraph_corpus(questions), name="hotpotqa-paragraphs")
    policy = make_generator(GeneratorConfig(model=args.model))
    judge = make_generator(GeneratorConfig(model=args.judge)) if args.judge else None
    nli = make_nli(args.nli) if args.nli else None
    config = StepGapConfig(max_new_tokens=args.max_new_tokens, judge_max_new_tokens=args.judge_max_new_tokens)
    graph = build_stepgap_graph(policy, search=search, nli=nli, judge=judge, config=config)
    started = time.perf_counter()
    rows = []
    for record in questions:
        result = await graph.ainvoke({"question": record.question, "id": record.id, "golds": record.golds})
        output = result["output"]
        rows.append(
            {
                "id": record.id,
                "answer": output.answer,
                "em": output.em,
                "searches": output.n_searches,
                "labels": output.labels,
                "paths": [c.pipeline_path for c in output.checks.steps],
                "nli": output.checks.nli,
            }
        )
        print(f"{record.question}\n  answer={output.answer!r} em={output.em} labels={output.labels}", flush=True)
    wall = time.perf_counter() - started
    labels = [label or "unchecked" for row in rows for label in row["labels"]]
    counts = collections.Counter(labels)
    report = {
        "questions": len(rows),
        "steps": len(labels),
        "distribution": {k: round(v / max(1, len(labels)), 3) for k, v in sorted(counts.items())},
        "em": sum(r["em"] or 0 for r in rows) / max(1, len(rows)),
        "mean_searches": sum(r["searches"] for r in rows) / max(1, len(rows)),
        "nli": sorted({r["nli"] for r in rows if r["nli"]}),
        "judge": args.judge or args.model,
        "wall_s": round(wall, 1),
        "s_per_question": round(wall / max(1, len(rows)), 1),
        "runs": rows,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--model", default="smollm2", help="The policy (any evigraph model string).")
    parser.add_argument("--judge", default=None, help="The checker's LLM (default: the policy).")
    parser.add_argument("--nli", type=Path, default=None, help="A local 3-way NLI checkpoint directory.")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="Policy tokens per turn (spec: 1024).")
    parser.add_argument("--judge-max-new-tokens", type=int, default=512, help="Tokens of one judge reply.")
    parser.add_argument("--out", type=Path, default=None)
    asyncio.run(main(parser.parse_args()))
