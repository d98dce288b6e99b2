"""StepGap's repair loop: a Search-R1 policy answers a question over the demo corpus while the StepGap checker
reviews each step as it is taken; a gap sends the policy a note (CC: retract and correct, IE: search again with a
reformulated query, MB: search for the missing link) and a gapped answer is reopened. Prints every step with its
label and repair action, the answers in the order they were given, and the final answer.

    .venv/bin/python examples/repair_loop.py [--question "..." --gold 1852] [--model smollm2] \\
        [--judge MODEL] [--nli DIR]

The run is kept small for a CPU (one search before the answer, the top passage only, one repair).

Expected output (embedded model as policy and judge, no NLI checkpoint; one run: 142 s in all on 2 CPU cores
shared with a background benchmark, model loading included). The checker flags the first search (a wrong
abstention, CC), the note is sent, the policy searches the same words again and answers with a fragment; the
one repair is spent, so the answer stays. Whether the answer changes depends on what a 135M model writes::

    Q: In which year was the first tower on Hog Island lit?
    step 1 search 'Hog Island tower' -> Hog Island Light_sentence_0
        CC -> retract  (stageA:on_target, stageB:wrong_abstention)
    step 2 search 'Hog Island tower' -> Hog Island Light_sentence_0
        CC -> retract  (stageA:on_target, stageB:wrong_abstention)
    step 3 answer 'The passage says the first tower on Hog Island was built in'
        IE -> re-search  (stageA:on_target, stageB:not_abstention, stageC:no_quote, stageE:no_entailing_prior)
    answers given: 'The passage says the first tower on Hog Island was built in'
    final answer 'The passage says the first tower on Hog Island was built in' (EM 0), 1 repair note(s)
    took 129.3 s

With a scripted policy and judge (the tests), the same run shows the loop at work: the policy answers 1896 (the
year the tower was replaced), the checker finds the answer contradicted by the passage (CC), and after the
"Actually, ..." note the policy answers 1852::

    step 2 answer '1896'
        CC -> retract  (stageA:on_target, stageB:not_abstention, stageC:quote_found, stageD:contradiction)
    step 3 answer '1852'
        no-gap -> none  (stageA:on_target, stageB:not_abstention, stageC:quote_found, stageD:entailment)
    answers given: '1896' -> '1852'
    final answer '1852' (EM 1), 1 repair note(s)
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from evigraph.agents.stepgap.schemas import StepGapConfig, StepGapOutput
from evigraph.config import GeneratorConfig
from evigraph.corpora.registry import resolve_corpus
from evigraph.generators.base import Generator
from evigraph.generators.factory import make_generator
from evigraph.graphs.stepgap_repair import build_repair_graph
from evigraph.tools.nli import make_nli
from evigraph.tools.search import BM25Search, SearchTool

QUESTION = "In which year was the first tower on Hog Island lit?"
GOLDS = ["1852"]
CONFIG = StepGapConfig(
    max_searches=1, repair_budget=1, top_k=1, max_new_tokens=128, judge_max_new_tokens=512, max_information_tokens=256
)


async def repair(
    question: str,
    golds: list[str],
    policy: Generator,
    search: SearchTool,
    *,
    judge: Generator | None = None,
    nli: Any = None,
    config: StepGapConfig = CONFIG,
) -> StepGapOutput:
    """One repair-loop run; ``judge`` defaults to the policy, ``nli`` to the judge's label-word logprobs."""
    graph = build_repair_graph(policy, search=search, nli=nli, judge=judge, config=config)
    result = await graph.ainvoke({"question": question, "golds": golds})
    return result["output"]


def show(output: StepGapOutput) -> None:
    print(f"Q: {output.question}")
    steps = output.trace.steps if output.trace is not None else []
    checks = {c.index: c for c in output.checks.steps}
    for index, step in enumerate(steps):
        if step.query is not None:
            found = ", ".join(e.id for e in step.evidence) or "nothing"
            print(f"step {index + 1} search {step.query!r} -> {found}")
        else:
            print(f"step {index + 1} answer {step.answer!r}")
        checked = checks.get(index)
        if checked is None:
            print("    not reviewed")
        elif checked.label is None:
            print(f"    not checked: {checked.error}")
        else:
            print(f"    {checked.label} -> {checked.repair}  ({checked.pipeline_path})")
    answers = [s.answer for s in steps if s.answer is not None]
    print("answers given: " + (" -> ".join(repr(a) for a in answers) or "none"))
    print(f"final answer {output.answer!r} (EM {output.em}), {output.repairs} repair note(s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--gold", action="append", default=None, help="A gold answer alias (repeatable).")
    parser.add_argument("--model", default="smollm2", help="The policy (any evigraph model spec).")
    parser.add_argument("--judge", default=None, help="The checker's LLM (default: the policy).")
    parser.add_argument("--nli", type=Path, default=None, help="A local 3-way NLI checkpoint directory.")
    parser.add_argument("--corpus", default="demo", help="A corpus name or directory (default: the demo corpus).")
    args = parser.parse_args(argv)
    policy = make_generator(GeneratorConfig(model=args.model))
    judge = make_generator(GeneratorConfig(model=args.judge)) if args.judge else None
    nli = make_nli(args.nli) if args.nli else None
    search = BM25Search(resolve_corpus(args.corpus), name=args.corpus)
    started = time.perf_counter()
    golds = args.gold or (GOLDS if args.question == QUESTION else [])
    output = asyncio.run(repair(args.question, golds, policy, search, judge=judge, nli=nli))
    show(output)
    print(f"took {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
