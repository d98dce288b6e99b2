"""Throughput of the transformers backend: concurrent graph runs sharing one model vs one at a time.

Runs N identical-length greedy requests on the embedded SmolLM2 (or ``--model DIR``) first sequentially,
then concurrently through ``asyncio.gather`` (the backend's micro-batcher merges them into one padded
``generate`` call). Both runs are measured here, in the same process, so the ratio is what matters.

    .venv/bin/python benchmarks/generation.py [--n 4] [--tokens 32] [--model DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from evigraph.generators import SamplingParams
from evigraph.generators.transformers import TransformersGenerator
from evigraph.trajectory import Segment

PROMPTS = [
    "Name one fact about lighthouses.",
    "Name one fact about volcanoes.",
    "Name one fact about glaciers.",
    "Name one fact about rivers.",
    "Name one fact about deserts.",
    "Name one fact about forests.",
    "Name one fact about oceans.",
    "Name one fact about islands.",
]


def _transcript(text: str) -> list[Segment]:
    return [Segment(origin="prompt", role="user", text=text)]


async def _run(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    generator = TransformersGenerator(args.model) if args.model else TransformersGenerator.from_embedded_default()
    load_s = time.perf_counter() - started
    params = SamplingParams(max_new_tokens=args.tokens)
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.n)]
    await generator.continue_transcript(_transcript("warm up"), SamplingParams(max_new_tokens=4))

    started = time.perf_counter()
    sequential = [await generator.continue_transcript(_transcript(p), params) for p in prompts]
    sequential_s = time.perf_counter() - started

    started = time.perf_counter()
    concurrent = await asyncio.gather(*(generator.continue_transcript(_transcript(p), params) for p in prompts))
    concurrent_s = time.perf_counter() - started

    tokens = sum(len(c.token_ids or []) for c in sequential)
    same = [c.token_ids for c in sequential] == [c.token_ids for c in concurrent]
    print(f"model={generator.name} load_s={load_s:.1f} n={args.n} tokens={tokens}")
    print(f"sequential: {sequential_s:.2f} s ({tokens / sequential_s:.1f} tok/s)")
    print(f"concurrent: {concurrent_s:.2f} s ({tokens / concurrent_s:.1f} tok/s), identical outputs: {same}")
    print(
        f"RESULT speedup={sequential_s / concurrent_s:.2f} seq_tok_s={tokens / sequential_s:.1f} "
        f"concurrent_tok_s={tokens / concurrent_s:.1f} identical={same} n={args.n}"
    )
    await generator.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4, help="requests per run")
    parser.add_argument("--tokens", type=int, default=32, help="new tokens per request")
    parser.add_argument("--model", default=None, help="local HF model directory (default: embedded SmolLM2)")
    asyncio.run(_run(parser.parse_args()))


if __name__ == "__main__":
    main()
