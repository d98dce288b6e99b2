"""A structured attribution verdict with SEVA: does the source fully back the claim, and why? One JSON verdict
lines claim spans up with source spans (match / mismatch / not found), reasons over the claim's parts, and gives
a label (Attributable / Not Attributable), a confidence and, when not attributable, an error type from six
(numerical exaggeration, negation flip, scope inflation, temporal shift, entity substitution, fabrication).

    .venv/bin/python examples/attribute_claim.py ["CLAIM"] [--source FILE] [--model smollm2]

The bundled source is the demo corpus's Assateague Light entry; the bundled claim doubles the tower's height
(about 142 feet in the source), a numerical exaggeration.

Expected output (embedded model, decoding under the verdict's JSON schema; one run: 90 s in all on 2 CPU cores
shared with a background benchmark, model loading included). A 135M model fills the structure but not with
sense: it aligns the whole claim with the wrong sentence, reasons "not supported" and still labels it
Attributable, with a stated confidence of 0 -- the line under the label says the verdict contradicts itself. Its
explanations stop at the grammar's 60-character bound; they are shown cut at a whole word, ending in "…"::

    claim: Assateague Light was first lit in 1867 and is about 300 feet tall.
    alignment:
      'Assateague Light was first lit in 1867' ~ 'Assateague Light is a lighthouse on Assateague Island near
      Chincoteague, Virginia.'  match  (in the source)
      ...
    reasoning:
      'Assateague Light was first lit in 1867' <- 'Assateague Light is a lighthouse on Assateague Island near
      Chincoteague, Virginia.'  (in the source): not_supported -- The claim is not supported by the source's
      evidence, as the…
      ...
    label: Attributable (confidence 0.00)
    the verdict disagrees with its own reasoning: labelled Attributable, but step 1 judges not_supported, step 2
    judges not_supported and its stated confidence in that label is 0
    took 79.3 s
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import evigraph
from evigraph.agents.seva.decoding import display_text
from evigraph.agents.seva.schemas import NOT_ATTRIBUTABLE, SevaOutput
from evigraph.agents.seva.verification import disagreement

SOURCE = (
    "Assateague Light is a lighthouse on Assateague Island near Chincoteague, Virginia. The present brick tower was "
    "first lit in 1867. Its red and white horizontal stripes make it easy to recognise from the sea. The tower is "
    "about 142 feet tall. It is still an active aid to navigation."
)
CLAIM = "Assateague Light was first lit in 1867 and is about 300 feet tall."


def _items(parsed: dict[str, Any] | None, key: str) -> list[tuple[int, dict[str, Any]]]:
    # The parsed reply is the model's JSON as written: keep only the well-formed items, with their positions.
    items = (parsed or {}).get(key)
    return [(i, item) for i, item in enumerate(items) if isinstance(item, dict)] if isinstance(items, list) else []


def show(claim: str, output: SevaOutput) -> None:
    print(f"claim: {claim}")
    if not output.parse_ok:
        print(f"the verdict could not be read: {output.parse_error}")
        return
    located = {(check.field, check.index): check.found for check in output.source_spans}

    def where(field: str, index: int) -> str:
        found = located.get((field, index))
        return "" if found is None else "  (in the source)" if found else "  (not in the source)"

    print("alignment:")
    for i, item in _items(output.parsed, "evidence_alignment"):
        span = f"{item.get('claim_span')!r} ~ {item.get('source_span')!r}"
        print(f"  {span}  {item.get('status')}{where('evidence_alignment', i)}")
    print("reasoning:")
    for i, item in _items(output.parsed, "reasoning_chain"):
        evidence = f"{item.get('claim_part')!r} <- {item.get('source_evidence')!r}"
        # A small model's explanation stops at its grammar's length bound: shown cut at a whole word, with "…".
        explanation = item.get("explanation")
        explanation = display_text(explanation) if isinstance(explanation, str) else explanation
        print(f"  {evidence}{where('reasoning_chain', i)}: {item.get('judgment')} -- {explanation}")
    # A reply that states no confidence shows none, rather than a 0.00 it never gave.
    confidence = "" if output.confidence is None else f" (confidence {output.confidence:.2f})"
    print(f"label: {output.label}{confidence}")
    contradiction = disagreement(output)
    if contradiction is not None:
        print(contradiction)
    # An error type belongs to a Not Attributable verdict only.
    if output.label == NOT_ATTRIBUTABLE and output.error_type:
        print(f"error type: {output.error_type}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claim", nargs="?", default=CLAIM)
    parser.add_argument("--source", type=Path, default=None, help="The source text (default: a demo entry).")
    parser.add_argument("--model", default="smollm2", help="Any evigraph model spec (default: the embedded one).")
    args = parser.parse_args(argv)
    source = args.source.read_text(encoding="utf-8") if args.source else SOURCE
    # The embedded model decodes under the verdict's JSON schema (weak-model mode, inference only).
    graph = evigraph.agent("seva", model=args.model)
    started = time.perf_counter()
    output: SevaOutput = asyncio.run(graph.ainvoke({"claim": args.claim, "source": source}))["output"]
    show(args.claim, output)
    print(f"took {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
