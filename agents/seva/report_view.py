"""One SEVA prediction line as the HTML run report shows it (``evigraph report``, :mod:`evigraph.report`).

The claim is shown with each aligned span coloured by its status (match, mismatch, not found) and the source
with every span the verdict cited, where it was found verbatim; tables give the evidence alignments and the
reasoning chain, and the facts the label, confidence, error type and fix suggestion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.seva.decoding import display_text
from evigraph.agents.seva.schemas import SevaGold, SevaOutput
from evigraph.agents.seva.verification import disagreement
from evigraph.report.helpers import occurrences, record_view
from evigraph.report.view import Block, Highlight, KeyValuesBlock, RecordView, TableBlock, TextBlock, Tone

__all__ = ("report_view",)

_STATUS_TONE: dict[str, Tone] = {"match": "good", "mismatch": "bad", "not_found": "warn"}
_JUDGMENT_TONE: dict[str, Tone] = {"supported": "good", "not_supported": "bad", "partially_supported": "warn"}


def _items(parsed: Mapping[str, Any] | None, key: str) -> list[Mapping[str, Any]]:
    values = (parsed or {}).get(key)
    return [v for v in values if isinstance(v, Mapping)] if isinstance(values, list) else []


def _cells(item: Mapping[str, Any], *keys: str) -> tuple[str, ...]:
    return tuple(str(item.get(key) or "") for key in keys)


def _stated(confidence: float | None) -> str:
    # No number stated is shown as such, not as a 0.00 the verdict never gave.
    return "n/a (the reply states none)" if confidence is None else f"{confidence:.2f}"


def _claim_marks(claim: str, alignments: list[Mapping[str, Any]]) -> list[Highlight]:
    marks = []
    for n, item in enumerate(alignments, start=1):
        status = str(item.get("status"))
        note = f"alignment {n}: {status}"
        marks += occurrences(
            claim, [str(item.get("claim_span") or "")], tone=_STATUS_TONE.get(status, "warn"), note=note
        )
    return marks


def _source_marks(output: SevaOutput, length: int) -> list[Highlight]:
    names = {"evidence_alignment": "alignment", "reasoning_chain": "chain step"}
    return [
        Highlight(start=s.start, end=min(s.end, length), tone="info", note=f"{names[s.field]} {s.index + 1}")
        for s in output.source_spans
        if s.found and s.start is not None and s.end is not None and s.start <= length
    ]


def _tables(output: SevaOutput) -> list[Block]:
    found = {(s.field, s.index): s.found for s in output.source_spans}
    alignments = _items(output.parsed, "evidence_alignment")
    chain = _items(output.parsed, "reasoning_chain")

    def in_source(field: str, index: int) -> str:
        return {True: "yes", False: "no", None: "n/a"}[found.get((field, index))]

    rows = [
        (*_cells(a, "claim_span", "source_span", "status"), in_source("evidence_alignment", i))
        for i, a in enumerate(alignments)
    ]
    steps = [
        (
            *_cells(c, "claim_part", "source_evidence", "judgment"),
            display_text(str(c.get("explanation") or "")),  # a grammar-cut explanation shown cut at a whole word
            in_source("reasoning_chain", i),
        )
        for i, c in enumerate(chain)
    ]
    return [
        TableBlock(
            title="evidence alignment",
            columns=("claim span", "source span", "status", "found in source"),
            rows=tuple(rows),
            tones=tuple(_STATUS_TONE.get(str(a.get("status")), "warn") for a in alignments),
        ),
        TableBlock(
            title="reasoning chain",
            columns=("claim part", "source evidence", "judgment", "explanation", "found in source"),
            rows=tuple(steps),
            tones=tuple(_JUDGMENT_TONE.get(str(c.get("judgment")), "warn") for c in chain),
        ),
    ]


def report_view(line: Mapping[str, Any]) -> RecordView:
    """The view of one line of ``evigraph eval seva``'s ``predictions.jsonl``."""
    inputs = (line.get("trajectory") or {}).get("input") or {}
    output = SevaOutput.model_validate(line["output"]) if line.get("output") else None
    gold = SevaGold.model_validate(line["gold"]) if line.get("gold") else None
    claim, source = str(inputs.get("claim") or ""), str(inputs.get("source") or "")
    alignments = _items(output.parsed if output else None, "evidence_alignment")
    shown = (
        TextBlock(title="claim", text=claim, highlights=tuple(_claim_marks(claim, alignments))),
        TextBlock(title="source", text=source, highlights=tuple(_source_marks(output, len(source)) if output else ())),
    )
    blocks: list[Block] = []
    facets: dict[str, tuple[str, ...]] = {}
    verdict = "no output (the run failed)"
    if output is not None:
        blocks += _tables(output)
        facts = [
            ("label", output.label or "none"),
            ("confidence", _stated(output.confidence)),
            ("error type", output.error_type or "none"),
            ("fix suggestion", display_text(output.fix_suggestion) if output.fix_suggestion else "none"),
            ("format score", f"{output.format_score:.2f}"),
            ("parsed", "yes" if output.parse_ok else f"no: {output.parse_error}"),
            ("truncated", "yes" if output.truncated else "no"),
            ("repaired by a second turn", "yes" if output.repaired else "no"),
        ]
        contradiction = disagreement(output)
        if contradiction is not None:
            facts.insert(1, ("disagreement", contradiction))
        blocks.append(KeyValuesBlock(title="verdict", items=tuple(facts)))
        blocks.append(TextBlock(title="reply", text=output.raw, mono=True, open=False))
        verdict = output.label or "no label"
        if output.confidence is not None:
            verdict += f" (confidence {output.confidence:.2f})"
        if output.error_type:
            verdict += f" · {output.error_type}"
        facets = {"label": (output.label or "none",), "error type": (output.error_type or "none",)}
    gold_text = None
    if gold is not None:
        gold_text = gold.label + (f" · {gold.category}" if gold.category else "")
        facets["gold label"] = (gold.label,)
    return record_view(
        line,
        verdict=verdict,
        gold=gold_text,
        correct=None if gold is None or output is None else output.label == gold.label,
        facets=facets,
        input=shown,
        trajectory=tuple(blocks),
    )
