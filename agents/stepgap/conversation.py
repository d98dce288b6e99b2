"""A host agent's turn as StepGap's input (``AgentSpec.conversation_inputs``): the checker's trace over the
host's own steps. The question is the turn's; each tool call is an inference step (``c_i``: what the model wrote
with the call; ``q_i``: its query, or the call itself for a tool without one; ``e_i``: the result, capped); the
final answer is the conclusion step."""

from __future__ import annotations

import json
from typing import Any

from evigraph.agents.stepgap.schemas import Trace, TraceStep
from evigraph.conversation import SOURCE_PIECE_CHARS, Conversation, ToolCall, clip
from evigraph.errors import ConfigError
from evigraph.trajectory import Evidence

__all__ = ("inputs_from", "step_of")


def step_of(call: ToolCall, index: int) -> TraceStep:
    """Tool call ``index`` (from 1) as an inference step; its result is one passage, ``NAME-INDEX``."""
    query = call.query or f"{call.name}({json.dumps(call.args, ensure_ascii=False, sort_keys=True)})"
    result = clip(call.result.strip(), SOURCE_PIECE_CHARS)
    evidence = [Evidence(id=f"{call.name}-{index}", text=result)] if result else []
    return TraceStep(reasoning=call.reasoning.strip(), query=query, evidence=evidence)


def inputs_from(conversation: Conversation) -> dict[str, Any]:
    """``{"trace": ...}``: one step per tool call, then the answer.

    Raises:
        ConfigError: the turn has no question (a trace needs one).
    """
    if not conversation.question.strip():
        raise ConfigError("input 'question' is empty: StepGap checks a turn that starts with a question")
    steps = [step_of(call, i) for i, call in enumerate(conversation.tool_calls, start=1)]
    steps.append(TraceStep(answer=conversation.answer))
    return {"trace": Trace(question=conversation.question, steps=steps)}
