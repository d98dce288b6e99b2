"""A host's finished turn checked by a verifier, whatever the host: LangChain messages read as a
:class:`~evigraph.conversation.Conversation`, the conversation as the agent's inputs (its ``AgentSpec.
conversation_inputs``), the verdict, what to do with it (pass, repair, block, annotate) and the texts that go with
a repair or a block.

:class:`~evigraph.embed.middleware.VerificationMiddleware` (inside a ``create_agent`` agent) and the guarded
OpenAI-compatible endpoint (:mod:`evigraph.serving.guard`, in front of a model server) both act through these
functions, so a turn is read, judged and repaired the same way behind either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from pydantic import ValidationError

from evigraph.conversation import Conversation, ToolCall
from evigraph.errors import ConfigError
from evigraph.verification import Verification

if TYPE_CHECKING:
    from evigraph.embed.verifier import Verifier

__all__ = (
    "REPAIR_ID_PREFIX",
    "Action",
    "ConversationReader",
    "OnFail",
    "averify_conversation",
    "blocked_message",
    "choose_action",
    "conversation_of",
    "conversation_reader",
    "one_line",
    "repair_message",
)

OnFail = Literal["repair", "block", "annotate"]
"""What happens to an answer that did not pass."""
Action = Literal["pass", "repair", "block", "annotate"]
"""What happened to one checked answer."""
ConversationReader = Callable[[Conversation], Mapping[str, Any]]
"""An agent's ``conversation_inputs``: a turn → the agent's input fields."""
REPAIR_ID_PREFIX = "evigraph-repair-"
"""Ids of the repair notes the middleware adds: they belong to the turn they repair, not start a new one."""


def conversation_reader(agent: str) -> ConversationReader:
    """The registered ``agent``'s ``conversation_inputs``.

    Raises:
        ConfigError: an unknown agent, or one that declares no ``conversation_inputs``.
    """
    from evigraph.registry import get_agent

    reader = get_agent(agent).load().conversation_inputs
    if reader is None:
        raise ConfigError(f"agent {agent!r} declares no conversation_inputs: it cannot check an agent's answers")
    return reader


async def averify_conversation(
    verifier: Verifier,
    reader: ConversationReader,
    conversation: Conversation,
    *,
    config: Mapping[str, Any] | None = None,
) -> Verification:
    """The verdict on ``conversation``'s answer. A turn the agent cannot read (no source to attribute to, no
    question) gets a failed verdict with the reason in ``error`` and no repair instruction."""
    try:
        values = verifier.inputs(reader(conversation))
    except (ConfigError, ValidationError) as unreadable:
        return Verification(agent=verifier.name, passed=False, error=one_line(unreadable))
    return await verifier.averify(values, config=config)


def choose_action(verdict: Verification, on_fail: OnFail, *, can_repair: bool) -> Action:
    """``pass`` for a passing verdict; else ``on_fail``, where a repair needs ``can_repair`` (repairs left) and a
    repair instruction on the verdict, and falls back to ``annotate``."""
    if verdict.passed:
        return "pass"
    if on_fail == "block":
        return "block"
    if on_fail == "repair" and verdict.repair and can_repair:
        return "repair"
    return "annotate"


def repair_message(verdict: Verification) -> str:
    """The note handed to the model for a repair: the verdict's headline and its repair instruction."""
    return f"Your answer did not pass verification ({_headline(verdict)}). {verdict.repair}"


def blocked_message(verdict: Verification) -> str:
    """What replaces a blocked answer (it names the verdict, never the answer's text)."""
    return f"The answer was withheld because it did not pass verification ({_headline(verdict)})."


def conversation_of(messages: Sequence[AnyMessage], documents: Iterable[Any] = ()) -> Conversation:
    """The last turn of ``messages`` (from the last human message that is not a repair note) as a
    :class:`~evigraph.conversation.Conversation`: its question, each tool call with the text of its result, and
    the final AI message's text as the answer; ``documents`` (strings, LangChain ``Document``\\ s, or mappings
    with ``page_content`` / ``text`` / ``content``) as their texts."""
    start = next(
        (i for i in range(len(messages) - 1, -1, -1) if _is_question(messages[i])),
        None,
    )
    turn = messages if start is None else messages[start + 1 :]
    calls: list[tuple[str, str, dict[str, Any], str]] = []
    results: dict[str, str] = {}
    for message in turn:
        if isinstance(message, AIMessage):
            calls += [
                (c.get("id") or "", c["name"], dict(c.get("args") or {}), _text(message)) for c in message.tool_calls
            ]
        elif isinstance(message, ToolMessage):
            results[message.tool_call_id] = _text(message)
    last = turn[-1] if turn else None
    return Conversation(
        question="" if start is None else _text(messages[start]),
        answer=_text(last) if isinstance(last, AIMessage) else "",
        tool_calls=[ToolCall(name=n, args=a, result=results.get(i, ""), reasoning=r) for i, n, a, r in calls],
        documents=[text for doc in documents if (text := _document_text(doc))],
    )


def one_line(error: BaseException) -> str:
    """``"Type: message"`` on one line (a verdict's ``error``)."""
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


def _is_question(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and not str(message.id or "").startswith(REPAIR_ID_PREFIX)


def _text(message: AnyMessage) -> str:
    return str(message.text).strip()


def _document_text(document: Any) -> str:
    if isinstance(document, str):
        return document.strip()
    if isinstance(document, Mapping):
        text = document.get("page_content") or document.get("text") or document.get("content")
    else:
        text = getattr(document, "page_content", None) or getattr(document, "text", None)
    return text.strip() if isinstance(text, str) else ""


def _headline(verdict: Verification) -> str:
    return verdict.summary().splitlines()[0]
