"""One RLSeek prediction line as the HTML run report shows it (``evigraph report``, :mod:`evigraph.report`).

The response is shown with the predicted hallucinated spans in red and the gold spans underlined; the source with
every quote the steps copied from it, where the quote matcher found it. A table lists the reasoning steps with
their quotes (found or not) and the problems that make the quotation set invalid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.rlseek.prompts import render_source
from evigraph.agents.rlseek.schemas import QuoteCheck, RLSeekGold, RLSeekOutput, task_variant
from evigraph.report.helpers import record_view, transcript_of
from evigraph.report.view import Block, Highlight, KeyValuesBlock, RecordView, TableBlock, TextBlock

__all__ = ("report_view",)


def _response_marks(output: RLSeekOutput | None, gold: RLSeekGold | None, length: int) -> list[Highlight]:
    marks = []
    for span in output.spans if output else ():
        quoted = ", ".join(str(q + 1) for q in span.quotes)
        note = f"predicted hallucination (quotes {quoted})" if quoted else "predicted hallucination"
        marks.append(Highlight(start=span.start, end=min(span.end, length), tone="bad", note=note))
    for start, end in gold.spans if gold else ():
        marks.append(Highlight(start=min(start, length), end=min(end, length), tone="gold", note="gold span"))
    return marks


def _quote_marks(output: RLSeekOutput | None, length: int) -> list[Highlight]:
    return [
        Highlight(
            start=q.start, end=min(q.end, length), tone="info", note=f"quote {n + 1} (step {q.step + 1}, {q.rule})"
        )
        for n, q in enumerate(output.quotes if output else ())
        if q.start is not None and q.end is not None and q.start <= length
    ]


def _quote_line(number: int, quote: QuoteCheck) -> str:
    where = f"found at [{quote.start}, {quote.end}), {quote.rule}" if quote.found else "not found"
    return f"{number + 1}. {quote.text!r}: {where} (overlap {quote.overlap:.2f})"


def _steps_table(output: RLSeekOutput) -> TableBlock:
    rows, tones = [], []
    for step in output.steps:
        quotes = [output.quotes[i] for i in step.quotes if i < len(output.quotes)]
        shown = "\n".join(_quote_line(n, q) for n, q in zip(step.quotes, quotes, strict=True))
        rows.append((str(step.index + 1), step.header, shown or "none", ", ".join(step.problems) or "none"))
        ok = not step.problems and all(q.found for q in quotes)
        tones.append("good" if ok else "warn")
    columns = ("step", "header", "quotes", "problems")
    return TableBlock(title="reasoning steps", columns=columns, rows=tuple(rows), tones=tuple(tones))


def report_view(line: Mapping[str, Any]) -> RecordView:
    """The view of one line of ``evigraph eval rlseek``'s ``predictions.jsonl``."""
    inputs = (line.get("trajectory") or {}).get("input") or {}
    output = RLSeekOutput.model_validate(line["output"]) if line.get("output") else None
    gold = RLSeekGold.model_validate(line["gold"]) if line.get("gold") else None
    task = str(inputs.get("task") or (output.task if output else "summary"))
    source = render_source(task_variant(task), inputs.get("source") or "")
    response = str(inputs.get("response") or "")
    shown: list[Block] = []
    if inputs.get("question"):
        shown.append(TextBlock(title="question", text=str(inputs["question"])))
    shown.append(TextBlock(title="source", text=source, highlights=tuple(_quote_marks(output, len(source)))))
    marks = _response_marks(output, gold, len(response))
    shown.append(TextBlock(title="response", text=response, highlights=tuple(marks)))
    steps: list[Block] = [
        TextBlock(title=f"{s.origin} turn", text=s.text, open=False)
        for s in transcript_of(line)
        if s.origin != "prompt"
    ]
    facets: dict[str, tuple[str, ...]] = {"task": (task,)}
    verdict = "no output (the run failed)"
    correct = None
    if output is not None:
        steps.append(_steps_table(output))
        facts = [
            ("final list", "; ".join(repr(s) for s in output.raw_list) or "empty"),
            ("listed but not in the response", "; ".join(repr(s) for s in output.unmatched) or "none"),
            ("parsed", "yes" if output.parse_ok else f"no: {output.parse_error}"),
            ("quotes valid", "yes" if output.quotes_valid else "no"),
            ("re-quote turns", str(output.requotes)),
        ]
        steps.append(KeyValuesBlock(title="verdict", items=tuple(facts)))
        flagged = "hallucinated" if output.predicted_positive else "faithful" if output.parse_ok else "unparsed"
        facets["label"] = (flagged,)
        facets["quotes"] = ("valid",) if output.quotes_valid else ("invalid",)
        texts = ", ".join(repr(s.text) for s in output.spans)
        verdict = f"{len(output.spans)} span(s): {texts}" if output.spans else flagged
        if not output.parse_ok:
            verdict = f"unparsed: {output.parse_error}"
        if gold is not None:
            correct = output.predicted_positive == bool(gold.spans)
    gold_text = None
    if gold is not None:
        gold_text = ", ".join(repr(response[s:e]) for s, e in gold.spans) if gold.spans else "no hallucination"
        facets["gold label"] = ("hallucinated",) if gold.spans else ("faithful",)
    return record_view(
        line,
        verdict=verdict,
        gold=gold_text,
        correct=correct,
        facets=facets,
        input=tuple(shown),
        trajectory=tuple(steps),
    )
