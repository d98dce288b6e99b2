"""RLSeek's quote protocol (specs/rlseek.md §2.2): ``<quote>`` blocks inside free Markdown reasoning, read per
``## Step N`` block by :func:`evigraph.protocol.steps.parse_steps`."""

from __future__ import annotations

from evigraph.protocol.tags import TagProtocol, TagSpec

__all__ = ("QUOTE_PROTOCOL", "QUOTE_TAG")

QUOTE_TAG = TagSpec("quote", purpose="a passage copied character for character from the source text")
"""The evidence quote: verbatim source text."""

QUOTE_PROTOCOL = TagProtocol("rlseek-quote", (QUOTE_TAG,), allow_free_text=True)
"""Quotes inside free reasoning (free text allowed outside the tags)."""
