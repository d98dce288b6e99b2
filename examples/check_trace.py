"""Check a search trace step by step with StepGap: every step gets a label (no-gap, CC contradicted claim, IE
irrelevant evidence, MB missing bridge), the repair action that label calls for, a confidence and the path it
took through the checker's stages.

    .venv/bin/python examples/check_trace.py [examples/data/hog_island_trace.json] [--model smollm2] [--nli NLI_DIR]

The bundled trace searched the demo corpus for the first tower on Hog Island and then answered 1896 -- the year
the tower was *replaced*; the passage it retrieved says 1852. A good judge with an NLI checkpoint labels the
search step no-gap and the answer CC (retract). Without ``--nli`` the judge model also scores entailment (by the
logprobs of the label words), which is weaker; the output names which NLI ran.

Expected output (embedded model as the judge, no NLI checkpoint; one run: 77 s in all on 2 CPU cores shared
with a background benchmark, model loading included). A 135M judge gets both steps wrong -- it calls the search
a wrong abstention and misses the contradicted year; an earlier run labelled the search no-gap::

    Q: In which year was the first tower on Hog Island lit?
    step 1 (inference) search 'Hog Island Light first tower lit'
        label CC -> retract, confidence 0.49
        stageA:on_target, stageB:wrong_abstention
    step 2 (conclusion) answer '1896'
        label IE -> re-search, confidence 0.21
        stageA:on_target, stageB:not_abstention, stageC:entity_mismatch
    judge: smollm2-135m-instruct (single); NLI: not needed
    checked 2 steps in 66.9 s
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from evigraph.agents.stepgap.schemas import StepGapConfig, Trace, TraceCheck
from evigraph.config import GeneratorConfig
from evigraph.generators.base import Generator
from evigraph.generators.factory import make_generator
from evigraph.graphs.stepgap_checker import build_checker_graph
from evigraph.tools.nli import make_nli

TRACE = Path(__file__).resolve().parent / "data" / "hog_island_trace.json"


async def check(trace: Trace, judge: Generator, nli: Any = None, config: StepGapConfig | None = None) -> TraceCheck:
    """Every step of ``trace`` checked: ``judge`` answers stages A-C, ``nli`` (or the judge) stages D-E."""
    graph = build_checker_graph(judge, nli=nli, config=config)
    result = await graph.ainvoke({"trace": trace})
    return result["checks"]


def show(trace: Trace, checks: TraceCheck) -> None:
    print(f"Q: {trace.question}")
    for step, checked in zip(trace.steps, checks.steps, strict=True):
        action = f"search {step.query!r}" if step.query is not None else f"answer {step.answer!r}"
        print(f"step {checked.index + 1} ({checked.kind}) {action}")
        if checked.label is None:
            print(f"    not checked: {checked.error}")
            continue
        print(f"    label {checked.label} -> {checked.repair}, confidence {checked.confidence:.2f}")
        print(f"    {checked.pipeline_path}")
        if checked.quote:
            print(f"    quote: {checked.quote!r}")
    print(f"judge: {checks.judge}; NLI: {checks.nli or 'not needed'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", nargs="?", type=Path, default=TRACE, help="A trace JSON (question and steps).")
    parser.add_argument("--model", default="smollm2", help="The judge (any evigraph model spec).")
    parser.add_argument("--nli", type=Path, default=None, help="A local 3-way NLI checkpoint directory.")
    parser.add_argument("--judge-max-new-tokens", type=int, default=512, help="Tokens of one judge reply.")
    args = parser.parse_args(argv)
    trace = Trace.model_validate_json(args.trace.read_text(encoding="utf-8"))
    judge = make_generator(GeneratorConfig(model=args.model))
    nli = make_nli(args.nli) if args.nli else None
    started = time.perf_counter()
    checks = asyncio.run(check(trace, judge, nli, StepGapConfig(judge_max_new_tokens=args.judge_max_new_tokens)))
    show(trace, checks)
    print(f"checked {len(checks.steps)} steps in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
