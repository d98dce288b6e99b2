"""One Veri-R1 prediction line as the HTML run report shows it (``evigraph report``, :mod:`evigraph.report`).

The transcript is cut at the protocol's tags (plan / search / information / think / answer); in every block of
entries, each entry line the answer cited is marked (green when it is gold evidence too, amber when it is not)
and each gold entry left uncited is underlined. An offline run's entries sit in the prompt: they are shown, marked
the same way, as "given entries".
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from evigraph.agents.veri_r1.evaluation import VeriR1Record
from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL
from evigraph.report.helpers import record_view, tagged_segments
from evigraph.report.view import Block, Highlight, KeyValuesBlock, RecordView, TextBlock

__all__ = ("entry_marks", "report_view")

_ENTRY = re.compile(r"^\[\[(?P<id>.+?)\]\]:", re.MULTILINE)


def entry_marks(text: str, cited: Collection[str], gold: Collection[str] | None) -> list[Highlight]:
    """A highlight over each ``[[id]]: text`` line whose id was cited or is gold evidence (``gold`` ``None``: the
    record has no gold)."""
    marks = []
    for match in _ENTRY.finditer(text):
        entry = match.group("id")
        end = text.find("\n", match.start())
        end = len(text) if end < 0 else end
        is_gold = gold is not None and entry in gold
        if entry in cited:
            tone, note = ("good", "cited") if gold is None else ("good", "cited, gold evidence")
            if gold is not None and not is_gold:
                tone, note = "warn", "cited, not gold evidence"
            marks.append(Highlight(start=match.start(), end=end, tone=tone, note=note))
        elif is_gold:
            marks.append(Highlight(start=match.start(), end=end, tone="gold", note="gold evidence, not cited"))
    return marks


def _given_entries(prompt: str) -> str | None:
    """The offline prompt's block of entries: the ``<information>`` block that ends it. An online prompt has none
    (an information block inside its worked example is the example's, not this run's)."""
    if not prompt.rstrip().endswith("</information>"):
        return None
    start = prompt.rfind("<information>")
    end = prompt.rfind("</information>")
    return prompt[start + len("<information>") : end].strip("\n") if start >= 0 and end > start else None


def report_view(line: Mapping[str, Any]) -> RecordView:
    """The view of one line of ``evigraph eval veri-r1``'s ``predictions.jsonl``."""
    record = VeriR1Record.model_validate(line)
    out, gold = record.output, record.gold
    cited = set(out.evidence) if out else set()
    gold_ids = set(gold.evidence) if gold else None
    blocks: list[Block] = []
    segments = record.trajectory.segments if record.trajectory else []
    prompts = [s.text for s in segments if s.origin == "prompt"]
    given = _given_entries(prompts[-1]) if prompts else None
    if given is not None:
        blocks.append(TextBlock(title="given entries", text=given, highlights=entry_marks(given, cited, gold_ids)))

    def marks(tag: str, content: str) -> list[Highlight]:
        return entry_marks(content, cited, gold_ids) if tag == "information" else []

    blocks.append(tagged_segments(VERI_R1_PROTOCOL, segments, highlight=marks, title="transcript"))
    if out is not None:
        facts = [
            ("answered", "yes" if out.answered else "no"),
            ("format", "ok" if out.format_ok else "failed: " + ", ".join(out.format_failed)),
            ("searches", "; ".join(out.queries) or "none"),
            ("duplicate queries", str(out.duplicate_queries)),
            ("cited but never retrieved", ", ".join(out.cited_unretrieved) or "none"),
            ("confidence", "n/a" if out.confidence is None else f"{out.confidence:.3f}"),
            ("turns", str(out.n_turns)),
        ]
        blocks.append(KeyValuesBlock(title="checks", items=tuple(facts)))
    verdict = "no output (the run failed)"
    if out is not None:
        verdict = (out.label or "no label") + (f" · cites {', '.join(out.evidence)}" if out.evidence else "")
    facets: dict[str, tuple[str, ...]] = {"label": (out.label or "none",) if out else ("none",)}
    if gold is not None:
        facets["gold label"] = (gold.label,)
    if out is not None:
        facets["format"] = ("ok",) if out.format_ok else tuple(out.format_failed or ["failed"])
    return record_view(
        line,
        id=record.id,
        verdict=verdict,
        gold=None if gold is None else gold.label + (f" · {', '.join(gold.evidence)}" if gold.evidence else ""),
        correct=None if gold is None or out is None else out.label == gold.label,
        facets=facets,
        input=(TextBlock(title="claim", text=record.claim),),
        trajectory=tuple(blocks),
    )
