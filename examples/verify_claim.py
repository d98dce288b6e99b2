"""Verify one claim in Python: the embedded model, the bundled demo corpus, the online Veri-R1 graph.

    python examples/verify_claim.py "Hog Island Light was first lit in 1853."

Swap the generator for a real model (``make_generator(GeneratorConfig(model="openai:MODEL@URL"))``) and the
corpus for your own (``evigraph corpus build``) -- the graph does not change.
"""

from __future__ import annotations

import asyncio
import sys

from evigraph.config import GeneratorConfig
from evigraph.corpora.registry import resolve_corpus
from evigraph.generators.factory import make_generator
from evigraph.graphs.veri_r1 import build_veri_r1_graph
from evigraph.tools.search import BM25Search


async def main(claim: str) -> None:
    # The embedded 135M-parameter model runs in weak-model mode by default: a grammar built from the claim keeps
    # it inside the protocol and on the claim (inference only).
    generator = make_generator(GeneratorConfig(model="smollm2"))
    search = BM25Search(resolve_corpus("demo"), name="demo")
    graph = build_veri_r1_graph(generator, search)
    state = await graph.ainvoke({"claim": claim})
    output, trajectory = state["output"], state["trajectory"]
    for segment in trajectory.segments[1:]:
        print(f"--- {segment.origin}\n{segment.text.strip()}")
    print(f"\nlabel={output.label} evidence={output.evidence} format_ok={output.format_ok}")
    timing = trajectory.timing
    print(f"{output.n_searches} searches, {timing.generated_tokens} tokens, {timing.wall_s:.1f} s")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "Hog Island Light was first lit in 1853."))
