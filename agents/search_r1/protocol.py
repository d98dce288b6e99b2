"""Search-R1's tag protocol (specs/stepgap.md §2.1): think / search / information / answer."""

from __future__ import annotations

from evigraph.protocol.tags import TagProtocol, TagSpec

__all__ = ("SEARCH_R1_PROTOCOL",)

SEARCH_R1_PROTOCOL = TagProtocol(
    "search-r1",
    (
        TagSpec("think", purpose="your reasoning; reason here first, and again whenever new results arrive"),
        TagSpec("search", purpose="one search query, whenever you are missing knowledge; results follow"),
        TagSpec("information", writer="environment", purpose="the retrieved passages for your last search"),
        TagSpec("answer", purpose="the final short answer, with no explanation", max_count=1),
    ),
)
