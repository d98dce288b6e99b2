"""A verifier as LangChain v1 agent middleware: every final answer of a ``create_agent`` agent is checked before
it leaves the agent.

::

    from langchain.agents import create_agent
    from evigraph.embed import VerificationMiddleware

    agent = create_agent(chat_model, tools=[search], middleware=[VerificationMiddleware("seva", model=chat_model)])
    result = agent.invoke({"messages": [{"role": "user", "content": "When was Hog Island Light first lit?"}]})
    result["verification"].passed

After the model's final answer (an AI message without tool calls) the middleware reads the turn -- the human
message that started it, the tool calls with their results, ``documents`` in the state, the answer -- as a
:class:`~evigraph.conversation.Conversation`; the agent's own ``conversation_inputs`` function (its
``AgentSpec``) makes that its input fields (Veri-R1: the answer as the claim; SEVA, RLSeek, RAG-Zeval: the tool
results and documents as the source or reference; StepGap: the tool calls as steps). The verdict goes to the
state key ``verification``; then, when it did not pass, ``on_fail`` decides:

- ``"repair"``: a human message with the verdict's repair instruction is added and the agent jumps back to its
  model; at most ``max_repairs`` times per turn, then (or when the verdict has no instruction) as ``"annotate"``;
- ``"block"``: the answer is replaced (same message id) by a message naming the verdict;
- ``"annotate"``: the answer stays, the verdict is recorded.

Tool results and documents are untrusted text: they reach the verifier as input data, which every agent's prompt
escapes, and the verdict only ever comes from the verifier's run.

**Streaming: withholding an answer until it passed.** ``after_model`` runs after the model's tokens streamed, so
it cannot take back tokens a UI already showed. The middleware therefore also emits its verdict as a custom
stream event, ``{"type": "evigraph.verification", "message_id", "action", "passed", "verification"}``
(``action`` is ``pass``, ``repair``, ``block`` or ``annotate``; a block event carries the ``replacement`` text).
A UI that must not show unverified text streams both modes, buffers the model's tokens per message id, and
releases a final answer's only when its event says so::

    buffered: dict[str, str] = {}
    for mode, chunk in agent.stream(inputs, stream_mode=["messages", "custom"]):
        if mode == "messages":
            token, metadata = chunk
            if metadata["langgraph_node"] == "model" and isinstance(token.content, str):
                buffered[token.id] = buffered.get(token.id, "") + token.content   # hold, do not show
        elif chunk.get("type") == "evigraph.verification":
            text = buffered.pop(chunk["message_id"], "")
            if chunk["action"] in ("pass", "annotate"):
                show(text)                        # verified (or recorded as failed): release it
            elif chunk["action"] == "block":
                show(chunk["replacement"])        # the answer never reaches the user
            # "repair": drop it; the model answers again and that answer gets its own event

Messages with tool calls get no event (they are steps, not answers); a UI shows or drops them as it likes.
Without a ``custom`` stream mode the event costs nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, TypeVar, get_args

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain.agents.middleware.types import OmitFromInput, PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from evigraph.embed.saver import sync_host_config
from evigraph.embed.turn import (
    REPAIR_ID_PREFIX,
    ConversationReader,
    OnFail,
    averify_conversation,
    blocked_message,
    choose_action,
    conversation_of,
    conversation_reader,
    repair_message,
)
from evigraph.embed.verifier import Verifier
from evigraph.errors import ConfigError
from evigraph.event_loop import run_sync
from evigraph.verification import Verification

__all__ = (
    "EVENT_TYPE",
    "REPAIR_ID_PREFIX",
    "OnFail",
    "VerificationAgentState",
    "VerificationMiddleware",
    "conversation_of",
)

EVENT_TYPE = "evigraph.verification"
"""The ``type`` of the custom stream event carrying a verdict."""

T = TypeVar("T")


class VerificationAgentState(AgentState[Any]):
    """The agent state keys the middleware adds: the verdict (output only: a caller cannot hand one in), the
    repairs tried this turn (internal), and ``documents`` a host may keep (strings, LangChain ``Document``\\ s,
    or mappings with ``page_content`` / ``text``), read as sources next to the tool results."""

    verification: NotRequired[Annotated[Verification | None, OmitFromInput]]
    verification_repairs: NotRequired[Annotated[int, PrivateStateAttr]]
    documents: NotRequired[list[Any]]


class VerificationMiddleware(AgentMiddleware[VerificationAgentState, Any]):
    """Checks a ``create_agent`` agent's final answers with a registered verifier (see the module docstring).

    Args:
        agent: a registered agent name whose spec declares ``conversation_inputs``.
        model, search, nli, pass_if, config: as :class:`~evigraph.embed.verifier.Verifier`.
        on_fail: ``"repair"``, ``"block"`` or ``"annotate"``.
        max_repairs: repairs per turn before the answer goes out annotated (``"repair"`` only).

    Raises:
        ConfigError: a bad ``on_fail`` or ``max_repairs``, or an agent that cannot read a conversation.
    """

    state_schema = VerificationAgentState

    def __init__(
        self,
        agent: str,
        *,
        model: Any = None,
        search: Any = None,
        on_fail: OnFail = "repair",
        max_repairs: int = 1,
        nli: Any = None,
        pass_if: Callable[[Verification], bool] | None = None,
        **config: Any,
    ) -> None:
        super().__init__()
        if on_fail not in get_args(OnFail):
            raise ConfigError(f"on_fail must be one of {', '.join(get_args(OnFail))}, got {on_fail!r}")
        if max_repairs < 0:
            raise ConfigError(f"max_repairs must be >= 0, got {max_repairs}")
        self.inputs_from: ConversationReader = conversation_reader(agent)
        self.verifier = Verifier(agent, model=model, search=search, nli=nli, pass_if=pass_if, **config)
        self.on_fail: OnFail = on_fail
        self.max_repairs = max_repairs
        self.tools = []

    @property
    def name(self) -> str:
        # One per agent: a host may stack two verifiers (create_agent refuses duplicate names).
        return f"VerificationMiddleware[{self.verifier.name}]"

    # -- what a host may override ----------------------------------------------------------------------------
    def repair_message(self, verdict: Verification) -> str:
        """The note handed to the model for a repair."""
        return repair_message(verdict)

    def blocked_message(self, verdict: Verification) -> str:
        """What replaces a blocked answer."""
        return blocked_message(verdict)

    # -- the check -------------------------------------------------------------------------------------------
    async def averify_state(self, state: Mapping[str, Any], *, config: RunnableConfig | None = None) -> Verification:
        """The verdict on the state's last answer (``config``: the verifier run's, default the caller's). A turn the
        agent cannot read (no source to attribute to, no question) gets a failed verdict with the reason in
        ``error`` and no repair instruction."""
        conversation = conversation_of(state["messages"], state.get("documents") or ())
        return await averify_conversation(self.verifier, self.inputs_from, conversation, config=config)

    def before_agent(self, state: VerificationAgentState, runtime: Any) -> dict[str, Any] | None:
        """A new turn: no repairs tried yet."""
        return {"verification_repairs": 0}

    async def abefore_agent(self, state: VerificationAgentState, runtime: Any) -> dict[str, Any] | None:
        """As :meth:`before_agent`."""
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: VerificationAgentState, runtime: Any) -> dict[str, Any] | None:
        """Checks a final answer (synchronous agents; the verifier's graph runs on its own event loop, through the
        agent saver's sync methods)."""
        answer = _final_answer(state["messages"])
        if answer is None:
            return None
        config = sync_host_config()
        return self._act(state, answer, run_sync(lambda: self.averify_state(state, config=config)), runtime)

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: VerificationAgentState, runtime: Any) -> dict[str, Any] | None:
        """Checks a final answer."""
        answer = _final_answer(state["messages"])
        if answer is None:
            return None
        return self._act(state, answer, await self.averify_state(state), runtime)

    def _act(self, state: Mapping[str, Any], answer: AIMessage, verdict: Verification, runtime: Any) -> dict[str, Any]:
        repairs = int(state.get("verification_repairs") or 0)
        action = choose_action(verdict, self.on_fail, can_repair=repairs < self.max_repairs)
        update: dict[str, Any] = {"verification": verdict}
        event: dict[str, Any] = {
            "type": EVENT_TYPE,
            "message_id": answer.id,
            "action": action,
            "passed": verdict.passed,
            "verification": verdict.model_dump(mode="json"),
        }
        if action == "repair":
            note = HumanMessage(content=self.repair_message(verdict), id=f"{REPAIR_ID_PREFIX}{uuid.uuid4()}")
            update.update(messages=[note], verification_repairs=repairs + 1, jump_to="model")
        elif action == "block":
            event["replacement"] = self.blocked_message(verdict)
            update["messages"] = [AIMessage(content=event["replacement"], id=answer.id)]
        writer = getattr(runtime, "stream_writer", None)
        if writer is not None:  # no-op unless the caller streams the "custom" mode
            writer(event)
        return update


def _final_answer(messages: Sequence[AnyMessage]) -> AIMessage | None:
    last = messages[-1] if messages else None
    return last if isinstance(last, AIMessage) and not last.tool_calls else None
