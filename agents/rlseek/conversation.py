"""A host agent's turn as RLSeek's input (``AgentSpec.conversation_inputs``): which spans of the final answer the
agent's tool results and documents (joined and capped, :meth:`~evigraph.conversation.Conversation.source`) do not
back. A turn with a question is RLSeek's QA task (the source is the related passages); one without is its
summary task."""

from __future__ import annotations

from typing import Any

from evigraph.conversation import Conversation

__all__ = ("inputs_from",)


def inputs_from(conversation: Conversation) -> dict[str, Any]:
    """``task``, ``source``, ``response`` (the answer) and, for QA, ``question``."""
    values: dict[str, Any] = {"source": conversation.source(), "response": conversation.answer}
    if conversation.question.strip():
        return {"task": "qa", **values, "question": conversation.question}
    return {"task": "summary", **values}
