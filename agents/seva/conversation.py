"""A host agent's turn as SEVA's input (``AgentSpec.conversation_inputs``): is the final answer attributable to
what the agent's tools returned and the documents it was given (joined and capped,
:meth:`~evigraph.conversation.Conversation.source`)?"""

from __future__ import annotations

from typing import Any

from evigraph.conversation import Conversation

__all__ = ("inputs_from",)


def inputs_from(conversation: Conversation) -> dict[str, Any]:
    """``{"claim": the answer, "source": the joined tool results and documents}``."""
    return {"claim": conversation.answer, "source": conversation.source()}
