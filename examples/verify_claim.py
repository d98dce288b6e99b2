"""Verify one claim with Veri-R1: the model plans, searches the bundled demo corpus (BM25) and answers with a
label and the ids of the entries it cites. Each turn of the run is printed, then the verdict.

    .venv/bin/python examples/verify_claim.py ["Hog Island Light was first lit in 1853."] \\
        [--model smollm2] [--corpus demo]

Swap ``--model`` for a real one (``openai:MODEL@URL``, a local checkpoint directory) and ``--corpus`` for your own
(``evigraph corpus build``) -- the graph does not change.

Expected output (embedded model, one run: 53 s in all on 2 CPU cores shared with a background benchmark, model
loading included; the label and the cited entry are right, the model's reasoning is not -- a 135M model)::

    --- policy
    <plan>Look up Hog Island Light and check the claim.</plan>
    <search>Hog Island Light</search>
    --- environment
    <information>
    [[Hog Island Light_sentence_0]]: Hog Island Light was a lighthouse on Hog Island, ... The first tower on the
    island was lit in 1852 to guide ships past the shoals off the Eastern Shore. ...
    [[Cape Charles Light_sentence_0]]: ...
    </information>
    --- policy
    <think>The entry places the island of Assateague Light on the island of Assateague, not on the island of
    Capri. The entry is false.</think>
    <answer>
    Label: REFUTE
    Evidence: [[Hog Island Light_sentence_0]]
    </answer>

    label=REFUTE evidence=['Hog Island Light_sentence_0'] format_ok=True
    1 searches, 90 tokens, 30.1 s
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import evigraph

CLAIM = "Hog Island Light was first lit in 1853."


def show(result: dict[str, Any]) -> None:
    output, trajectory = result["output"], result["trajectory"]
    for segment in trajectory.segments[1:]:
        print(f"--- {segment.origin}\n{segment.text.strip()}")
    print(f"\nlabel={output.label} evidence={output.evidence} format_ok={output.format_ok}")
    timing = trajectory.timing
    print(f"{output.n_searches} searches, {timing.generated_tokens} tokens, {timing.wall_s:.1f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claim", nargs="?", default=CLAIM)
    parser.add_argument("--model", default="smollm2", help="Any evigraph model spec (default: the embedded one).")
    parser.add_argument("--corpus", default="demo", help="A corpus name or directory (default: the demo corpus).")
    args = parser.parse_args(argv)
    # The embedded 135M-parameter model runs in weak-model mode by default: a grammar built from the claim keeps
    # it inside the protocol and on the claim (inference only).
    graph = evigraph.agent("veri-r1", model=args.model, search=args.corpus)
    show(asyncio.run(graph.ainvoke({"claim": args.claim})))


if __name__ == "__main__":
    main()
