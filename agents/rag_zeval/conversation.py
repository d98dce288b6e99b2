"""A host agent's turn as RAG-Zeval's input (``AgentSpec.conversation_inputs``): the final answer is the one
candidate, judged for faithfulness to the agent's tool results and documents (joined and capped,
:meth:`~evigraph.conversation.Conversation.source`) as the reference."""

from __future__ import annotations

from typing import Any

from evigraph.conversation import Conversation

__all__ = ("inputs_from",)


def inputs_from(conversation: Conversation) -> dict[str, Any]:
    """``question``, ``reference`` (the joined sources), ``candidates`` (the answer) and ``kind``."""
    return {
        "question": conversation.question,
        "reference": conversation.source(),
        "candidates": [conversation.answer],
        "kind": "faithfulness",
    }
