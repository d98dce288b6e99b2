"""Veri-R1's tag protocol (specs/veri-r1.md §2.1): plan / search / information / think / answer.

One declaration renders the prompt's tag list, parses turns, routes them, gives the stop strings and escapes
retrieved text. The answer grammar (:mod:`.parsing`) and the F1–F8 checklist (:mod:`.format_rules`) build on it.
"""

from __future__ import annotations

from evigraph.protocol.tags import TagProtocol, TagSpec

__all__ = ("VERI_R1_PROTOCOL",)

VERI_R1_PROTOCOL = TagProtocol(
    "veri-r1",
    (
        TagSpec("plan", purpose="your strategy for checking the claim, written once before anything else", max_count=1),
        TagSpec("search", purpose="one query for the fact you need next; do not repeat a query", max_count=3),
        TagSpec(
            "information",
            writer="environment",
            purpose="the entries retrieved for your last search, one per line as [[id]]: text",
        ),
        TagSpec("think", purpose="your reasoning, right after every new information block; no verdict here"),
        TagSpec("answer", purpose="the verdict and the ids of the entries that justify it, written last", max_count=1),
    ),
)
