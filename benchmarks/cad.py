"""Context-aware decoding: all alphas batched as rows (``cad_generate(alphas=[...])``) vs one alpha at a time.

The batched call runs each prompt once, repeats its KV cache over the alphas and then makes two forward passes
per step for every alpha together; the baseline calls ``cad_generate`` once per alpha (two prompt passes and
two forward passes per step for each). Same model, same prompts, greedy: the responses must be identical, and
only the ratio matters. Model: the embedded SmolLM2-135M-Instruct (``evigraph setup`` caches it) on CPU.

    .venv/bin/python benchmarks/cad.py [--items 3] [--max-new-tokens 48] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

from evigraph.agents.rag_zeval.cad import cad_generate, default_eos_ids
from evigraph.agents.rag_zeval.synthesis import DEFAULT_ALPHAS
from evigraph.agents.rag_zeval.synthesis_prompts import encode_prompts
from evigraph.generators.transformers import TransformersGenerator

ITEMS = [
    (
        "When did the Golden Gate Bridge open?",
        "The Golden Gate Bridge is a suspension bridge spanning the Golden Gate strait. It opened to traffic on "
        "May 28, 1937, after four years of construction, and was then the longest suspension bridge main span in "
        "the world at 4,200 feet.",
    ),
    (
        "Who wrote the novel Middlemarch?",
        "Middlemarch, A Study of Provincial Life is a novel by the English author Mary Ann Evans, who wrote as "
        "George Eliot. It appeared in eight instalments in 1871 and 1872 and is set in a fictitious Midlands town.",
    ),
    (
        "What is the capital of Australia?",
        "Canberra is the capital city of Australia. Founded following the federation of the colonies of Australia "
        "as the seat of government for the new nation, it is the largest inland city in the country.",
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    generator = TransformersGenerator.from_embedded_default()
    model, tokenizer = generator.model, generator.tokenizer
    eos = default_eos_ids(model, tokenizer)
    prompts = [encode_prompts(tokenizer, q, p) for q, p in ITEMS[: args.items]]

    def batched() -> list[list[str]]:
        return [
            [o.text for o in cad_generate(model, tokenizer, ctx, noctx, DEFAULT_ALPHAS,
                                          max_new_tokens=args.max_new_tokens, eos_ids=eos)]
            for ctx, noctx in prompts
        ]  # fmt: skip

    def one(ctx: list[int], noctx: list[int], alpha: float) -> str:
        (output,) = cad_generate(model, tokenizer, ctx, noctx, [alpha], max_new_tokens=args.max_new_tokens, eos_ids=eos)
        return output.text

    def one_at_a_time() -> list[list[str]]:
        return [[one(ctx, noctx, alpha) for alpha in DEFAULT_ALPHAS] for ctx, noctx in prompts]

    times: dict[str, list[float]] = {"batched": [], "sequential": []}
    outputs = {}
    for _ in range(args.repeat):
        for name, run in (("batched", batched), ("sequential", one_at_a_time)):
            started = time.perf_counter()
            outputs[name] = run()
            times[name].append(time.perf_counter() - started)
    if outputs["batched"] != outputs["sequential"]:
        raise SystemExit(f"responses differ:\n{outputs['batched']}\n{outputs['sequential']}")
    best = {name: min(values) for name, values in times.items()}
    per_item = {name: value / len(prompts) for name, value in best.items()}
    ratio = best["sequential"] / best["batched"]
    print(f"items={len(prompts)} alphas={len(DEFAULT_ALPHAS)} max_new_tokens={args.max_new_tokens}")
    for name in ("batched", "sequential"):
        print(f"{name}: {per_item[name]:.2f} s per item (median run {statistics.median(times[name]):.2f} s)")
    print(
        f"RESULT speedup={ratio:.2f} batched_s_per_item={per_item['batched']:.2f} "
        f"sequential_s_per_item={per_item['sequential']:.2f} identical=True"
    )


if __name__ == "__main__":
    main()
