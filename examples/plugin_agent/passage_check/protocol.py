"""The agent's tag protocol: one answer block, nothing else."""

from __future__ import annotations

from evigraph.protocol.tags import TagProtocol, TagSpec

__all__ = ("PROTOCOL",)

PROTOCOL = TagProtocol(
    "passage-check",
    (TagSpec("answer", purpose="yes if the passage supports the claim, otherwise no", max_count=1),),
)
