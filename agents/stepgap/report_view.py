"""One StepGap prediction line as the HTML run report shows it (``evigraph report``, :mod:`evigraph.report`).

The Search-R1 rollout is cut at its tags (think / search / information / answer), with each step's Stage-C quote
marked where it occurs in the retrieved passages; a table gives every step's gap label, confidence, repair action
and ``pipeline_path`` (the decision tree's stages in order), next to the gold label where the gold has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.search_r1.protocol import SEARCH_R1_PROTOCOL
from evigraph.agents.stepgap.data import GoldRecord
from evigraph.agents.stepgap.schemas import StepCheck, StepGapOutput
from evigraph.report.helpers import occurrences, record_view, tagged_segments, transcript_of
from evigraph.report.view import Block, Highlight, KeyValuesBlock, RecordView, TableBlock, TextBlock, Tone

__all__ = ("report_view", "steps_table")


def _tone(check: StepCheck) -> Tone:
    return "warn" if check.label is None else "good" if check.label == "no-gap" else "bad"


def steps_table(output: StepGapOutput, gold: GoldRecord | None) -> TableBlock:
    """One row per checked step: its label, confidence, repair action, pipeline path and quote (and gold label)."""
    gold_steps = gold.steps if gold is not None and gold.steps is not None else None
    columns = ["step", "kind", "claim", "label", "confidence", "repair", "pipeline_path", "quote"]
    rows = []
    for check in output.checks.steps:
        label = check.label or f"unchecked: {check.error or 'no label'}"
        if check.tree_label is not None:
            label += f" (tree: {check.tree_label})"
        # An unchecked step's confidence is a stand-in 0.0, not a measurement.
        confidence = "n/a" if check.label is None else f"{check.confidence:.2f}"
        row = [str(check.index + 1), check.kind, check.claim, label, confidence, check.repair, check.pipeline_path]
        row.append(check.quote or "")
        if gold_steps is not None:
            gold_label = gold_steps[check.index].label if check.index < len(gold_steps) else None
            row.append(gold_label or "")
        rows.append(tuple(row))
    if gold_steps is not None:
        columns.append("gold label")
    return TableBlock(
        title="step checks",
        columns=tuple(columns),
        rows=tuple(rows),
        tones=tuple(_tone(c) for c in output.checks.steps),
    )


def report_view(line: Mapping[str, Any]) -> RecordView:
    """The view of one line of ``evigraph eval stepgap``'s ``predictions.jsonl``."""
    raw_output = line.get("output")
    output = StepGapOutput.model_validate(raw_output) if raw_output else None
    gold = GoldRecord.model_validate({**line["gold"], "id": str(line.get("id"))}) if line.get("gold") else None
    inputs = (line.get("trajectory") or {}).get("input") or {}
    question = output.question if output else str(inputs.get("question", ""))
    quotes = [(c.index, c.quote) for c in output.checks.steps if c.quote] if output else []

    def marks(tag: str, content: str) -> list[Highlight]:
        found: list[Highlight] = []
        for index, quote in quotes if tag == "information" else ():
            found += occurrences(content, [quote], tone="info", note=f"step {index + 1}: stage-C quote")
        return found

    blocks: list[Block] = [tagged_segments(SEARCH_R1_PROTOCOL, transcript_of(line), highlight=marks, title="rollout")]
    facets: dict[str, tuple[str, ...]] = {}
    verdict = "no output (the run failed)"
    if output is not None:
        blocks.append(steps_table(output, gold))
        facts = [
            ("answer", output.answer if output.answer is not None else "none"),
            ("exact match", "n/a" if output.em is None else str(output.em)),
            ("searches", str(output.n_searches)),
            ("format", "ok" if output.format_ok else "failed"),
            ("repair notes sent", str(output.repairs)),
            ("judge", output.checks.judge),
            ("NLI", output.checks.nli or "none (no step reached stage D or E)"),
            ("checker variant", output.checks.variant),
        ]
        blocks.append(KeyValuesBlock(title="run", items=tuple(facts)))
        labels = [c.label or "unchecked" for c in output.checks.steps]
        verdict = f"answer: {output.answer if output.answer is not None else 'none'} · steps: {', '.join(labels)}"
        facets = {
            "label": tuple(dict.fromkeys(labels)),
            "repair": tuple(dict.fromkeys(c.repair for c in output.checks.steps)),
            "format": ("ok",) if output.format_ok else ("failed",),
        }
    gold_text = None
    if gold is not None:
        parts = [f"golds: {', '.join(gold.golds)}"] if gold.golds else []
        if gold.answer_correct is not None:
            parts.append("answer correct" if gold.answer_correct else "answer wrong")
        if gold.steps is not None:
            parts.append("steps: " + ", ".join(s.label or "?" for s in gold.steps))
        gold_text = " · ".join(parts) or None
    correct = None
    if output is not None and output.em is not None:
        correct = output.em == 1
    return record_view(
        line,
        verdict=verdict,
        gold=gold_text,
        correct=correct,
        facets=facets,
        input=(TextBlock(title="question", text=question),),
        trajectory=tuple(blocks),
    )
