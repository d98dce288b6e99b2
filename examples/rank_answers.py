"""Rank several answers with RAG-Zeval: in one pass the evaluator breaks every answer into atomic claims, marks
each claim supported or not by the reference (copying the reference sentences that ground it), scores each
answer by its share of supported claims, S(y), and ranks the answers by score. Answers are shown to the model
under shuffled letters, so their order cannot decide the ranking.

    .venv/bin/python examples/rank_answers.py [--model smollm2]

The bundled reference is the demo corpus's Cape Charles Light entry; of the three answers the first is right,
the second gets the height wrong and the third gets the year wrong and adds a claim the reference lacks.

Expected output (embedded model, decoding under the reply's JSON schema; one run: 197 s in all on 2 CPU cores
shared with a background benchmark, model loading included). A 135M model marks every claim supported, so the
three answers tie::

    Q: When was the current Cape Charles Light tower completed, and how tall is it?
    answer 1 (shown as A): S = 3/3
      + 'and it is about 191 feet tall.'
          evidence: 'The current octagonal iron tower was completed in 1895.'
      ...
    answer 2 (shown as B): S = 2/2
      + 'and it is about 120 feet tall.'
          evidence: 'The current octagonal iron tower was completed in 1895.'
      ...
    answer 3 (shown as C): S = 1/1
      + 'The tower was completed in 1828.'
          evidence: 'The current octagonal iron tower was completed in 1895.'
    ranking: 1 = 2 = 3 (tied: equal scores)
    took 183.9 s
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from fractions import Fraction

import evigraph
from evigraph.agents.rag_zeval.schemas import RagZevalOutput

QUESTION = "When was the current Cape Charles Light tower completed, and how tall is it?"
REFERENCE = (
    "Cape Charles Light stands on Smith Island at the mouth of the Chesapeake Bay in Virginia. The first "
    "lighthouse at the site was lit in 1828. The current octagonal iron tower was completed in 1895. At about 191 "
    "feet it is one of the tallest lighthouses in the United States. The light was automated in 1963."
)
ANSWERS = [
    "The current tower was completed in 1895, and it is about 191 feet tall.",
    "The current tower was completed in 1895, and it is about 120 feet tall.",
    "The tower was completed in 1828. It is made of brick.",
]


def ranking_line(output: RagZevalOutput) -> str:
    """Answers best first (1-based, the caller's numbering); answers with equal scores joined by ``=``."""
    exact = [Fraction(c.supported, c.total) if c.total else Fraction(0) for c in output.candidates]
    groups = [
        [index + 1 for index in group] for _, group in itertools.groupby(output.ranking, key=lambda index: exact[index])
    ]
    line = " > ".join(" = ".join(str(n) for n in group) for group in groups)
    return line + (" (tied: equal scores)" if any(len(group) > 1 for group in groups) else "")


def show(question: str, output: RagZevalOutput) -> None:
    print(f"Q: {question}")
    if output.parse_mode == "failed":
        print(f"the evaluation could not be read: {output.parse_error}")
        return
    for candidate in output.candidates:
        print(f"answer {candidate.index + 1} (shown as {candidate.id}): S = {candidate.supported}/{candidate.total}")
        for claim in candidate.claims:
            print(f"  {'+' if claim.is_supported else '-'} {claim.claim!r}")
            for evidence in claim.grounding_evidence:
                print(f"      evidence: {evidence!r}")
    print(f"ranking: {ranking_line(output)}")
    if output.parse_mode != "strict":
        print(f"(reply read in {output.parse_mode} mode: labels counted, claims not shown)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="Any evigraph model spec (default: the embedded one).")
    args = parser.parse_args(argv)
    graph = evigraph.agent("rag-zeval", model=args.model)
    started = time.perf_counter()
    # The reference is the retrieved passages, so the answers are judged for faithfulness (the default kind).
    result = asyncio.run(graph.ainvoke({"question": QUESTION, "reference": REFERENCE, "candidates": ANSWERS}))
    output: RagZevalOutput = result["output"]
    show(QUESTION, output)
    print(f"took {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
