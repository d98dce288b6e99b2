"""Find the hallucinated spans of a response with RLSeek: the detector quotes the source verbatim before it judges
each part of the response, then lists the spans the source does not back. Prints the response with the spans
marked ``[[...]]``, each span's offsets and the steps that name it (and one line when a span is named in no step),
and every step's quotes with where they occur in the source (or how much of them does).

    .venv/bin/python examples/detect_spans.py [--source FILE --response FILE] [--model smollm2]

The bundled source is the demo corpus's Cape Charles Light entry; the bundled response gets the tower's year
wrong (1905 for 1895) and adds a paint scheme the source never mentions.

Expected output (embedded model, decoding under a grammar of the step layout; one run: 39 s in all on 2 CPU
cores shared with a background benchmark, model loading included). The model checks the right clause twice and
quotes the right source sentence, but lists another clause (part of the invented paint scheme) that none of its
steps discusses -- a 135M model; the line under the span says the verdict and its reasoning disagree::

    response: Cape Charles Light stands on Smith Island in Virginia. The current iron tower was completed in 1905
    [[and is painted black]] and white.
    span [100, 120) 'and is painted black' (named in no step)
    the verdict disagrees with its own reasoning: it flags [100, 120) "and is painted black", which no reasoning
    step names
    Step 1: Check "The current iron tower was completed in 1905"
        quote 'The current octagonal iron tower was completed in 1895.' (source [140, 195))
    Step 2: Check "The current iron tower was completed in 1905"
        quote 'The current octagonal iron tower was completed in 1895.' (source [140, 195))
    2 step(s), 2 quote(s), 2 found in the source
    took 29.2 s
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import evigraph
from evigraph.agents.rlseek.schemas import RLSeekOutput
from evigraph.agents.rlseek.verification import disagreement

SOURCE = (
    "Cape Charles Light stands on Smith Island at the mouth of the Chesapeake Bay in Virginia. The first "
    "lighthouse at the site was lit in 1828. The current octagonal iron tower was completed in 1895. At about 191 "
    "feet it is one of the tallest lighthouses in the United States. The light was automated in 1963."
)
RESPONSE = (
    "Cape Charles Light stands on Smith Island in Virginia. The current iron tower was completed in 1905 and is "
    "painted black and white."
)


def marked(response: str, output: RLSeekOutput) -> str:
    """``response`` with every detected span wrapped in ``[[...]]`` (overlapping spans merged)."""
    merged: list[list[int]] = []
    for span in sorted(output.spans, key=lambda s: s.start):
        if merged and span.start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], span.end)
        else:
            merged.append([span.start, span.end])
    pieces, cursor = [], 0
    for start, end in merged:
        pieces += [response[cursor:start], "[[", response[start:end], "]]"]
        cursor = end
    return "".join([*pieces, response[cursor:]])


def show(response: str, output: RLSeekOutput) -> None:
    # The offsets index the response as the model saw it, which equals the input (escaping keeps lengths).
    print(f"response: {marked(response, output)}")
    if not output.parse_ok:
        print(f"no final list could be read: {output.parse_error}")
    elif not output.spans and not output.unmatched:
        print("no hallucinated span found")
    for span in output.spans:
        steps = [output.steps[i].index + 1 for i in span.steps or ()]
        named = f"named in step {', '.join(map(str, steps))}" if steps else "named in no step"
        print(f"span [{span.start}, {span.end}) {span.text!r} ({named})")
    contradiction = disagreement(output, response)
    if contradiction is not None:  # a span flagged without any step checking it: say so
        print(contradiction)
    for text in output.unmatched:
        print(f"listed but not in the response: {text!r}")
    for step in output.steps:
        print(step.header.lstrip("#").strip() or f"Step {step.index + 1} (no header)")
        for index in step.quotes:
            quote = output.quotes[index]
            where = (
                f"source [{quote.start}, {quote.end})" if quote.found else f"not in the source ({quote.overlap:.0%})"
            )
            print(f"    quote {quote.text!r} ({where})")
    found = sum(q.found for q in output.quotes)
    print(f"{len(output.steps)} step(s), {len(output.quotes)} quote(s), {found} found in the source")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=None, help="The grounding text (default: a demo entry).")
    parser.add_argument("--response", type=Path, default=None, help="The text to check (default: the bundled one).")
    parser.add_argument("--model", default="smollm2", help="Any evigraph model spec (default: the embedded one).")
    args = parser.parse_args(argv)
    source = args.source.read_text(encoding="utf-8") if args.source else SOURCE
    response = args.response.read_text(encoding="utf-8") if args.response else RESPONSE
    graph = evigraph.agent("rlseek", model=args.model)  # the embedded model runs with a grammar of the step layout
    started = time.perf_counter()
    result = asyncio.run(graph.ainvoke({"task": "summary", "source": source, "response": response}))
    output: RLSeekOutput = result["output"]
    show(response, output)
    print(f"took {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
