"""Pieces most agents' report views share: finding strings in a text, a transcript cut at its protocol's tags,
JSON and reward blocks, and :func:`generic_view`, the view of an agent that declares none."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from evigraph.protocol.tags import TagProtocol
from evigraph.report.view import Highlight, RecordView, TextBlock, Tone, TranscriptBlock, TranscriptPiece
from evigraph.trajectory import Segment
from evigraph.wording import shorten

__all__ = (
    "compact",
    "error_text",
    "generic_view",
    "json_block",
    "occurrences",
    "scores_of",
    "tagged_segments",
    "transcript_of",
)

HighlightFn = Callable[[str, str], Sequence[Highlight]]
"""``(tag, content) -> highlights`` of one tagged piece (offsets into ``content``)."""


def occurrences(text: str, needles: Iterable[str], *, tone: Tone, note: str | None = None) -> list[Highlight]:
    """A highlight on every occurrence of every non-blank needle in ``text`` (exact match)."""
    found: list[Highlight] = []
    for needle in needles:
        if not needle.strip():
            continue
        start = text.find(needle)
        while start >= 0:
            found.append(Highlight(start=start, end=start + len(needle), tone=tone, note=note))
            start = text.find(needle, start + len(needle))
    return found


def compact(value: Any, limit: int = 160) -> str:
    """``value`` as one line of JSON (strings as they are), shortened to ``limit`` characters at a word boundary."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return shorten(text, limit)


def json_block(title: str, value: Any, *, open: bool = False) -> TextBlock:
    """``value`` pretty-printed as JSON in a fixed-width block (folded by default)."""
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return TextBlock(title=title, text=text, mono=True, open=open)


def scores_of(line: Mapping[str, Any]) -> dict[str, float]:
    """The numeric reward components of a prediction line (``rewards``), others left out."""
    rewards = line.get("rewards") or {}
    return {str(k): float(v) for k, v in rewards.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def transcript_of(line: Mapping[str, Any]) -> list[Segment]:
    """The stored trajectory's segments (none when the line has no trajectory)."""
    trajectory = line.get("trajectory") or {}
    return [Segment.model_validate(s) for s in trajectory.get("segments") or ()]


def tagged_segments(
    protocol: TagProtocol,
    segments: Sequence[Segment],
    *,
    highlight: HighlightFn | None = None,
    title: str = "trajectory",
) -> TranscriptBlock:
    """The policy and environment segments cut at ``protocol``'s top-level tags, in order; text outside any tag is a
    piece tagged ``text`` (blank text left out). ``highlight`` marks spans inside each piece."""
    pieces: list[TranscriptPiece] = []
    parsed = protocol.parse_transcript(segments)
    for part in parsed.parts:
        cuts = [(b.start, b.end, b.tag, b.content_start, b.content_end) for b in part.blocks if b.depth == 0]
        cursor = 0
        for start, end, tag, content_start, content_end in [*cuts, (len(part.text), len(part.text), "", 0, 0)]:
            loose = part.text[cursor:start]
            if loose.strip():
                pieces.append(_piece("text", loose.strip(), part.writer, highlight))
            if tag:
                pieces.append(_piece(tag, part.text[content_start:content_end].strip("\n"), part.writer, highlight))
            cursor = end
    return TranscriptBlock(title=title, segments=tuple(pieces))


def _piece(tag: str, text: str, origin: str, highlight: HighlightFn | None) -> TranscriptPiece:
    marks = tuple(highlight(tag, text)) if highlight else ()
    return TranscriptPiece(tag=tag, text=text, origin=origin, highlights=marks)


def generic_view(line: Mapping[str, Any]) -> RecordView:
    """The view of a prediction line of an agent without a ``report_view``: its output's ``label`` or ``answer``
    (else the output as JSON) as the verdict, the gold as JSON, the input fields, each transcript segment after
    the prompt, and the output and gold in full."""
    output = line.get("output")
    gold = {k: v for k, v in (line.get("gold") or {}).items() if k != "id"} or None
    trajectory = line.get("trajectory") or {}
    inputs = trajectory.get("input") or {}
    verdict = "no output"
    if isinstance(output, Mapping):
        named = next((output[k] for k in ("label", "answer", "verdict") if output.get(k) is not None), None)
        verdict = compact(named if named is not None else output)
    shown = [
        TextBlock(title=str(name), text=value) if isinstance(value, str) else json_block(str(name), value, open=True)
        for name, value in inputs.items()
        if name != "gold"
    ]
    steps = [
        TextBlock(title=f"{segment.origin} turn", text=segment.text, mono=True)
        for segment in transcript_of(line)
        if segment.origin != "prompt"
    ]
    return record_view(
        line,
        verdict=verdict,
        gold=compact(gold) if gold else None,
        input=tuple(shown),
        trajectory=(*steps, json_block("output", output), *([json_block("gold", gold)] if gold else [])),
    )


def _error_text(error: Any) -> str | None:
    if not error:
        return None
    if isinstance(error, Mapping):
        where = f" in {error['where']}" if error.get("where") else ""
        return f"{error.get('type', 'error')}{where}: {error.get('message', '')}"
    return str(error)


def error_text(line: Mapping[str, Any]) -> str | None:
    """Why the line's run failed (``type in where: message``), or ``None``."""
    return _error_text(line.get("error") or (line.get("trajectory") or {}).get("error"))


def record_view(line: Mapping[str, Any], **fields: Any) -> RecordView:
    """One record's view: ``fields`` (verdict, gold, correct, facets, input, trajectory ...) plus what every
    agent's view takes from the prediction line the same way -- its id, its run error and its scores."""
    return RecordView(**{"id": str(line.get("id")), **fields}, error=error_text(line), scores=scores_of(line))
