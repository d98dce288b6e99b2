"""Record views as the page's embedded JSON: highlights cut into pieces, the page's own facets added, and the JSON
made safe to sit inside a ``<script type="application/json">`` element.

Highlights travel as pieces (``[text]`` or ``[text, "tone tone", "note"]``) rather than offsets, because the page's
JavaScript counts UTF-16 code units and Python counts code points: an emoji before a span would shift every
offset after it. Cutting on the Python side keeps one meaning of an offset.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from typing import Any

from evigraph.report.view import Highlight, RecordView, TextBlock, TranscriptBlock

__all__ = ("FACET_CORRECT", "FACET_RUN", "pieces", "record_data", "script_json")

FACET_CORRECT = "correct"
FACET_RUN = "run"

# Inside a <script> element the HTML parser ends the element at "</script" and treats "<!--" specially, whatever
# the script's type; U+2028/2029 end a line in older JavaScript. Escaping every "<", ">" and "&" as a JSON \u escape
# keeps the value identical for JSON.parse while no markup can start inside the element.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SCRIPT_TABLE = str.maketrans(_SCRIPT_ESCAPES)


def script_json(value: Any) -> str:
    """``value`` as compact JSON that is safe as the text of a ``<script type="application/json">`` element (it
    holds no ``<``, ``>`` or ``&``, so neither ``</script>`` nor ``<!--`` can occur)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).translate(_SCRIPT_TABLE)


def pieces(text: str, highlights: Sequence[Highlight]) -> list[list[str]]:
    """``text`` cut at every highlight edge: ``[piece]`` where nothing is marked, ``[piece, tones, notes]`` where
    one or more highlights cover it (tones space-separated and unique, notes joined with "; ")."""
    marks = [h for h in highlights if h.end > h.start]
    edges = sorted({0, len(text), *(h.start for h in marks), *(h.end for h in marks)})
    cut: list[list[str]] = []
    for left, right in itertools.pairwise(edges):
        covering = [h for h in marks if h.start <= left and h.end >= right]
        if not covering:
            cut.append([text[left:right]])
            continue
        tones = " ".join(dict.fromkeys(h.tone for h in covering))
        notes = "; ".join(dict.fromkeys(h.note for h in covering if h.note))
        cut.append([text[left:right], tones, notes])
    return cut or [[""]]


def _block(block: Any) -> dict[str, Any]:
    data = block.model_dump(mode="json", exclude={"text", "highlights", "segments"})
    if isinstance(block, TextBlock):
        data["pieces"] = pieces(block.text, block.highlights)
    elif isinstance(block, TranscriptBlock):
        data["segments"] = [
            {"tag": s.tag, "origin": s.origin, "pieces": pieces(s.text, s.highlights)} for s in block.segments
        ]
    return data


def record_data(view: RecordView) -> dict[str, Any]:
    """One record as the page's JavaScript reads it: the view's fields, blocks with pieces, and facets with the
    page's own ``correct`` (``yes``/``no``/``unscored``) and ``run`` (``ok``/``failed``) added."""
    correct = "unscored" if view.correct is None else "yes" if view.correct else "no"
    facets = {FACET_CORRECT: [correct], **{k: list(v) for k, v in view.facets.items()}}
    facets[FACET_RUN] = ["failed" if view.error else "ok"]
    return {
        "id": view.id,
        "verdict": view.verdict,
        "gold": view.gold,
        "correct": view.correct,
        "error": view.error,
        "facets": facets,
        "input": [_block(b) for b in view.input],
        "trajectory": [_block(b) for b in view.trajectory],
        "scores": {k: v if math.isfinite(v) else None for k, v in view.scores.items()},
    }
