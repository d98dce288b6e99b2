"""Any evigraph generator as a LangChain chat model, so a host agent can run on the embedded model too.

:class:`EvigraphChatModel` is a ``BaseChatModel`` over an evigraph :class:`~evigraph.generators.base.Generator`
(the embedded SmolLM2, a local checkpoint, vLLM, a scripted double ...)::

    model = EvigraphChatModel(generator=make_generator(GeneratorConfig(model="smollm2")), max_tokens=256)
    agent = create_agent(model, tools=[...])                  # the host's own model
    node = verifier_node("seva", model=model, inputs={...})   # and the verifier's

Messages become segments by the one transcript convention read backwards: the system and user messages before
the first assistant message are the prompt, assistant messages are policy turns, and every run of other
messages after that (user, tool, system) is one environment turn. A transcript ending in an assistant message
is continued only by backends that can prefill (token backends); chat backends reject it.

The reply follows LangChain's convention, not evigraph's: a stop string that ended the turn is cut off the text
(as OpenAI does) and named in ``response_metadata["stop_reason"]`` (as vLLM does), so a
:class:`~evigraph.generators.langchain_model.ChatModelGenerator` around this model puts it back exactly; an
end-of-sequence marker is removed. ``finish_reason`` is ``"length"`` at the token cap, else ``"stop"``.

Per call, ``stop`` and the keyword arguments ``max_tokens``, ``temperature``, ``top_p`` and ``seed`` override the
model's fields. Tool calling (``bind_tools``) and provider structured output are not offered: the generator
writes text. Synchronous calls run the generator on one shared event loop (:mod:`evigraph.event_loop`), so a
backend that keeps a client bound to a loop serves sync callers; serving sync and async callers at once, it needs
``ainvoke`` throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, HumanMessage, SystemMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, field_validator

from evigraph.errors import ConfigError
from evigraph.event_loop import run_sync
from evigraph.generators.base import Generator
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.trajectory import Segment, strip_eos
from evigraph.wording import with_article

__all__ = ("EvigraphChatModel", "to_segments")

_CALL_FIELDS = ("max_tokens", "temperature", "top_p", "seed")


def _role(message: BaseMessage) -> str:
    """``system``, ``user``, ``assistant`` or ``other`` (tool results and unknown roles)."""
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ChatMessage) and message.role in ("system", "user", "assistant"):
        return message.role
    return "other"


def to_segments(messages: Sequence[BaseMessage]) -> list[Segment]:
    """``messages`` as a transcript (see the module docstring).

    Raises:
        ConfigError: no messages, or the first one is an assistant message or a tool result (a transcript starts
            with a prompt).
    """
    if not messages:
        raise ConfigError("the chat model got no messages")
    segments: list[Segment] = []
    answered = False  # after the first assistant message everything else is the environment's
    pending: list[str] = []  # messages after a policy turn, rendered as one environment turn
    for position, message in enumerate(messages):
        role, text = _role(message), str(message.text)
        if role == "assistant":
            if not segments:
                raise ConfigError(f"message {position}: the conversation starts with an assistant message")
            if pending:
                segments.append(Segment(origin="environment", text="\n\n".join(pending)))
                pending = []
            segments.append(Segment(origin="policy", text=text))
            answered = True
        elif answered:
            pending.append(text)
        elif role in ("system", "user"):
            segments.append(Segment(origin="prompt", role=role, text=text))
        else:
            raise ConfigError(
                f"message {position}: {with_article(type(message).__name__)} before any assistant message "
                "(a conversation starts with system or user messages)"
            )
    if pending:
        segments.append(Segment(origin="environment", text="\n\n".join(pending)))
    return segments


class EvigraphChatModel(BaseChatModel):
    """A LangChain chat model that generates with an evigraph generator.

    Args:
        generator: the evigraph generator (shared by concurrent calls, as generators are).
        max_tokens: the token cap of a reply (``max_new_tokens``).
        temperature, top_p, seed: sampling (the defaults decode greedily).
        stop: stop strings used when a call passes none.
        logprobs: ask the generator for token logprobs and report them in ``response_metadata["logprobs"]`` in
            the OpenAI shape (backends that have them: transformers, vLLM, a scripted double with a tokenizer).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    generator: Any
    max_tokens: int = Field(256, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = 0
    stop: list[str] | None = None
    logprobs: bool = False

    @field_validator("generator")
    @classmethod
    def _is_generator(cls, value: Any) -> Any:
        if not isinstance(value, Generator):
            raise ValueError(f"expected an evigraph Generator, got {type(value).__name__}")
        return value

    @property
    def _llm_type(self) -> str:
        return "evigraph"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"generator": self.generator.name, "max_tokens": self.max_tokens, "temperature": self.temperature}

    def sampling_params(self, stop: Sequence[str] | None = None, **overrides: Any) -> SamplingParams:
        """The sampling parameters of one call: the fields, with ``stop`` and ``overrides`` (see the module docstring).

        Raises:
            ConfigError: an override this model does not take (the message names it).
        """
        unknown = sorted(set(overrides) - set(_CALL_FIELDS))
        if unknown:
            raise ConfigError(
                f"EvigraphChatModel takes {', '.join(_CALL_FIELDS)} per call, not {', '.join(unknown)}",
                source=unknown[0],
            )
        values = {name: overrides.get(name, getattr(self, name)) for name in _CALL_FIELDS}
        return SamplingParams(
            max_new_tokens=values["max_tokens"],
            temperature=values["temperature"],
            top_p=values["top_p"],
            seed=values["seed"],
            stop=tuple(stop if stop is not None else self.stop or ()),
            logprobs=self.logprobs,
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        params = self.sampling_params(stop, **_own(kwargs))
        continuation = await self.generator.continue_transcript(to_segments(messages), params)
        return ChatResult(generations=[ChatGeneration(message=self._message(continuation))])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        params = self.sampling_params(stop, **_own(kwargs))
        segments = to_segments(messages)
        continuation = run_sync(lambda: self.generator.continue_transcript(segments, params))
        return ChatResult(generations=[ChatGeneration(message=self._message(continuation))])

    def _message(self, continuation: Continuation) -> AIMessage:
        text = continuation.text
        if (
            continuation.finish_reason == "stop"
            and continuation.stop_string
            and text.endswith(continuation.stop_string)
        ):
            text = text[: -len(continuation.stop_string)]
        elif continuation.finish_reason == "eos":
            text = strip_eos(text)
        metadata: dict[str, Any] = {
            "model_name": self.generator.name,
            "finish_reason": "length" if continuation.finish_reason == "length" else "stop",
            "stop_reason": continuation.stop_string,
        }
        if self.logprobs and continuation.logprobs is not None:
            metadata["logprobs"] = {"content": self._logprob_entries(continuation)}
        return AIMessage(content=text, response_metadata=metadata, usage_metadata=_usage(continuation))

    def _logprob_entries(self, continuation: Continuation) -> list[dict[str, Any]]:
        ids = continuation.token_ids or []
        tokenizer = getattr(self.generator.chat_format, "tokenizer", None)
        entries = []
        for position, logprob in enumerate(continuation.logprobs or []):
            token = tokenizer.decode([ids[position]]) if tokenizer is not None and position < len(ids) else ""
            entries.append({"token": token, "logprob": logprob})
        return entries


def _own(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The per-call keyword arguments meant for the model (LangChain's own ``ls_*`` tracing hints dropped)."""
    return {name: value for name, value in kwargs.items() if not name.startswith("ls_")}


def _usage(continuation: Continuation) -> UsageMetadata | None:
    completion = continuation.completion_tokens
    if completion is None and continuation.token_ids is not None:
        completion = len(continuation.token_ids)
    if completion is None or continuation.prompt_tokens is None:
        return None  # a count the backend did not give is left out, not guessed
    return UsageMetadata(
        input_tokens=continuation.prompt_tokens,
        output_tokens=completion,
        total_tokens=continuation.prompt_tokens + completion,
    )
