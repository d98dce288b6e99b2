"""A host agent's finished turn, as a verifier reads it: the question, the tools it called and what they
returned, the documents it was given, and its final answer.

:class:`~evigraph.embed.middleware.VerificationMiddleware` builds one from a LangChain agent's messages; each
agent's ``AgentSpec.conversation_inputs`` function turns it into that agent's input fields (Veri-R1 checks the
answer as a claim, SEVA attributes it to the tool results ...). The model knows nothing of LangChain, so those
functions stay on the agent floor.

Tool results and documents are untrusted text: they go into the verifier's inputs as data (every agent's prompt
escapes its inputs), never into a verdict. :meth:`Conversation.source` caps their joined size, so one large
search result cannot crowd a small verifier's context.

>>> turn = Conversation(
...     question="When was Hog Island Light first lit?",
...     answer="In 1854.",
...     tool_calls=[ToolCall(name="search", args={"query": "Hog Island Light"}, result="It was first lit in 1854.")],
... )
>>> turn.source()
'It was first lit in 1854.'
>>> turn.tool_calls[0].query
'Hog Island Light'
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ("SOURCE_CHARS", "SOURCE_PIECE_CHARS", "Conversation", "ToolCall", "clip")

SOURCE_CHARS = 12_000
"""Default cap on the joined source (about 3,000 tokens: room for a small verifier's prompt and reply)."""
SOURCE_PIECE_CHARS = 4_000
"""Default cap on one tool result or document within it, so one long result leaves room for the others."""

_MIN_PIECE_CHARS = 100
_QUERY_ARGS = ("query", "q", "search", "search_query", "question", "input")


class ToolCall(BaseModel):
    """One tool call the host agent made and the text it got back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    """The tool message's text (empty when the call got no result)."""
    reasoning: str = ""
    """The text the model wrote alongside the call, if any."""

    @property
    def query(self) -> str | None:
        """The call's query: the first text argument named like one (``query``, ``q``, ``search`` ...), else the
        only text argument; ``None`` when neither exists."""
        for key in _QUERY_ARGS:
            if isinstance(value := self.args.get(key), str) and value.strip():
                return value
        texts = [v for v in self.args.values() if isinstance(v, str) and v.strip()]
        return texts[0] if len(texts) == 1 else None


class Conversation(BaseModel):
    """A host agent's turn: the question that started it, its tool calls in order, documents from its state, and
    the final answer a verifier checks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = ""
    """The human message that started the turn (empty when there was none)."""
    answer: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    documents: list[str] = Field(default_factory=list)
    """Texts of documents the host kept in its state (retrieved passages ...)."""

    def sources(self) -> list[str]:
        """The texts the agent saw: every non-blank tool result, then every non-blank document."""
        texts = [call.result for call in self.tool_calls] + list(self.documents)
        return [text.strip() for text in texts if text.strip()]

    def source(self, *, max_chars: int = SOURCE_CHARS, max_piece_chars: int = SOURCE_PIECE_CHARS) -> str:
        """:meth:`sources` joined by blank lines, each cut to ``max_piece_chars`` and the whole to ``max_chars``
        (cuts fall on whitespace where one is near, so quotes of what is kept stay verbatim); empty when the agent
        saw nothing."""
        joined = ""
        for text in self.sources():
            room = max_chars - len(joined) - (2 if joined else 0)
            if room < min(_MIN_PIECE_CHARS, len(text)):  # a few words cut from a long text only add noise
                break
            piece = clip(text, min(max_piece_chars, room))
            if not piece:
                break
            joined = f"{joined}\n\n{piece}" if joined else piece
        return joined.strip()


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a space within the last 200 where there is one.

    >>> clip("one two three", 9)
    'one two'
    """
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ", max(0, limit - 200))  # prefer a word boundary close to the limit
    return (head[:space] if space > 0 else head).rstrip()
