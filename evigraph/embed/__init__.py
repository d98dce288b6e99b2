"""Embed any registered verifier in an agent you already have, with one typed verdict
(:class:`~evigraph.verification.Verification`):

- :func:`verifier_node` -- a node for a LangGraph ``StateGraph`` (the verifier runs as its subgraph);
- :func:`verification_router` -- the conditional edge that guards with it (repair, then give up);
- :func:`verifier_tool` -- a LangChain tool a host's model calls (the verdict is the tool message's artifact);
- :class:`VerificationMiddleware` -- ``create_agent`` middleware checking every final answer (repair, block,
  annotate);
- :class:`Verifier` -- the runner under every form, for code of your own;
- :class:`EvigraphChatModel` -- any evigraph generator (the embedded SmolLM2 ...) as a LangChain chat model;
- :func:`checkpoint_serializer` -- a serializer for the host's saver that loads evigraph's types without warnings
  (:data:`VERIFICATION_TYPES`, :func:`checkpoint_types`).

Names are loaded on first use, so ``import evigraph.embed`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evigraph.embed.chat_model import EvigraphChatModel
    from evigraph.embed.checkpoint import VERIFICATION_TYPES, checkpoint_serializer, checkpoint_types
    from evigraph.embed.middleware import VerificationMiddleware
    from evigraph.embed.node import VerificationState, verification_router, verifier_node
    from evigraph.embed.tool import verifier_tool
    from evigraph.embed.verifier import Verifier
    from evigraph.verification import Verification

__all__ = (
    "VERIFICATION_TYPES",
    "EvigraphChatModel",
    "Verification",
    "VerificationMiddleware",
    "VerificationState",
    "Verifier",
    "checkpoint_serializer",
    "checkpoint_types",
    "verification_router",
    "verifier_node",
    "verifier_tool",
)

_WHERE = {
    "VERIFICATION_TYPES": "evigraph.embed.checkpoint",
    "checkpoint_serializer": "evigraph.embed.checkpoint",
    "checkpoint_types": "evigraph.embed.checkpoint",
    "EvigraphChatModel": "evigraph.embed.chat_model",
    "Verification": "evigraph.verification",
    "VerificationMiddleware": "evigraph.embed.middleware",
    "VerificationState": "evigraph.embed.node",
    "verification_router": "evigraph.embed.node",
    "verifier_node": "evigraph.embed.node",
    "verifier_tool": "evigraph.embed.tool",
    "Verifier": "evigraph.embed.verifier",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'evigraph.embed' has no attribute {name!r}")
