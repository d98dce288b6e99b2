"""OpenAI's chat-completions wire format, as the guarded endpoint (:mod:`evigraph.serving.guard`) reads and writes
it: the request's messages (checked, and read as a :class:`~evigraph.conversation.Conversation`), an upstream's
completion, OpenAI-shaped error bodies, and the ``chat.completion.chunk`` events of a stream.

Everything here is untrusted text from a client or an upstream model: it is parsed by pydantic models that name
the bad field, carried as data, and every stream event is one ``json.dumps`` line, so no text (newlines, ``data:``,
``[DONE]``) can break the framing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Literal

from fastapi.responses import JSONResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evigraph.conversation import Conversation
from evigraph.embed.turn import conversation_of

__all__ = (
    "DONE",
    "ChatMessage",
    "ChatRequest",
    "Completion",
    "chunk",
    "completion_chunks",
    "conversation_of_request",
    "first_error_field",
    "openai_error",
    "sse",
)

DONE = "data: [DONE]\n\n"
_WORD_START = re.compile(r"(?<=\s)(?=\S)")


class ContentPart(BaseModel):
    """One part of a message's content list; only ``text`` parts are read."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class FunctionCall(BaseModel):
    """The function a tool call names, with its JSON-encoded arguments."""

    model_config = ConfigDict(extra="allow")

    name: str
    arguments: str | dict[str, Any] = ""


class WireToolCall(BaseModel):
    """An assistant message's tool call."""

    model_config = ConfigDict(extra="allow")

    id: str = ""
    type: str = "function"
    function: FunctionCall


class ChatMessage(BaseModel):
    """One message of a request (other keys pass through to the upstream untouched)."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    tool_calls: list[WireToolCall] | None = None
    tool_call_id: str | None = None

    def text(self) -> str:
        """The content's text (text parts joined; images and other parts left out)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text or "" for part in self.content or () if part.type == "text")


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """The fields of ``POST /v1/chat/completions`` the guard reads; the rest pass through to the upstream."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int | None = Field(default=None, ge=1, le=1)
    """One answer per request: the guard checks and repairs one answer."""
    documents: list[str | dict[str, Any]] | None = None
    """Sources the client hands along (vLLM's RAG field, ``{"title", "text"}`` each, or plain strings); they go to
    the upstream as sent and are read as sources next to the tool results."""


class CompletionMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str = "assistant"
    content: str | None = None
    tool_calls: list[WireToolCall] | None = None


class CompletionChoice(BaseModel):
    model_config = ConfigDict(extra="allow")

    index: int = 0
    message: CompletionMessage
    finish_reason: str | None = None


class Completion(BaseModel):
    """An upstream's ``chat.completion``, as far as the guard reads it (the raw JSON is what goes back out)."""

    model_config = ConfigDict(extra="allow")

    id: str = ""
    created: int = 0
    model: str = ""
    choices: list[CompletionChoice] = Field(min_length=1)
    usage: dict[str, Any] | None = None

    @property
    def answer(self) -> CompletionMessage:
        return self.choices[0].message


def first_error_field(error: ValidationError) -> tuple[str, str]:
    """The dotted location and message of a validation error's first problem (``messages.1.role``)."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return where, first["msg"]


def openai_error(
    status: int, message: str, kind: str, *, param: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """An OpenAI-shaped error response: ``{"error": {"message", "type", "param", "code"}}``."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


def conversation_of_request(request: ChatRequest, answer: str) -> Conversation:
    """The request's last turn with ``answer`` as its final answer: the last user message as the question, the
    assistant's tool calls after it with the tool messages that answer them, and ``documents`` -- read the way
    :class:`~evigraph.embed.middleware.VerificationMiddleware` reads a LangChain agent's turn."""
    messages = [m for message in request.messages if (m := _langchain_message(message)) is not None]
    return conversation_of([*messages, AIMessage(content=answer)], request.documents or ())


def _langchain_message(message: ChatMessage) -> AnyMessage | None:
    if message.role == "user":
        return HumanMessage(content=message.text())
    if message.role == "assistant":
        calls = [
            {"id": c.id, "name": c.function.name, "args": _arguments(c.function.arguments)}
            for c in message.tool_calls or ()
        ]
        return AIMessage(content=message.text(), tool_calls=calls)
    if message.role == "tool":
        return ToolMessage(content=message.text(), tool_call_id=message.tool_call_id or "")
    return None  # system and developer prompts are instructions, not sources; legacy "function" results are not read


def _arguments(arguments: str | dict[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as a dict; text that is not a JSON object is kept whole under ``arguments``."""
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        parsed = None
    return parsed if isinstance(parsed, dict) else {"arguments": arguments}


# -- the stream --------------------------------------------------------------------------------------------------
def sse(event: dict[str, Any]) -> str:
    """One server-sent event carrying ``event`` as JSON (``json.dumps`` escapes newlines: one line, always)."""
    return f"data: {json.dumps(event)}\n\n"


def chunk(completion: Completion, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` of ``completion``'s stream (its id, creation time and model)."""
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
    return {
        "id": completion.id,
        "object": "chat.completion.chunk",
        "created": completion.created,
        "model": completion.model,
        "choices": [choice],
    }


def completion_chunks(
    head: Completion, final: dict[str, Any], *, evigraph: dict[str, Any], include_usage: bool
) -> Iterator[dict[str, Any]]:
    """The chunks after the role chunk that stream ``final``'s answer: its text word by word, its tool calls, the
    finish chunk and, with ``include_usage``, a usage chunk (no choices); the last one carries ``evigraph``. Ids,
    time and model are ``head``'s, the completion the stream opened with (a repaired answer keeps them)."""
    parsed = Completion.model_validate(final)
    message, finish_reason = parsed.answer, parsed.choices[0].finish_reason or "stop"
    for piece in _WORD_START.split(message.content or ""):
        if piece:
            yield chunk(head, {"content": piece})
    if message.tool_calls:
        calls = [{"index": i, **call.model_dump(mode="json")} for i, call in enumerate(message.tool_calls)]
        yield chunk(head, {"tool_calls": calls})
    last = chunk(head, {}, finish_reason)
    if include_usage:
        yield last
        last = {**chunk(head, {}), "choices": [], "usage": parsed.usage}
    yield {**last, "evigraph": evigraph}
