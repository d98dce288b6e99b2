"""A host agent's turn as Veri-R1's input (``AgentSpec.conversation_inputs``): the final answer is the claim,
checked against Veri-R1's own searches (the host's tool results are not its evidence; they may be what is wrong).
"""

from __future__ import annotations

from typing import Any

from evigraph.conversation import Conversation

__all__ = ("inputs_from",)


def inputs_from(conversation: Conversation) -> dict[str, Any]:
    """``{"claim": the answer}``."""
    return {"claim": conversation.answer}
