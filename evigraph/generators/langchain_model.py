"""Any LangChain chat model as a generator, so users who embed verifiers can bring their own model.

Segments become messages by :attr:`~evigraph.trajectory.Segment.chat_role` -- system/user prompt segments
as ``SystemMessage``/``HumanMessage``, policy segments as ``AIMessage``, environment segments as a new
``HumanMessage`` -- the same convention every backend follows.

Sampling settings (temperature, ``max_tokens``, seed ...) are the chat model's own configuration: the
parameter names and whether a per-call override is accepted differ between providers, so nothing but the
stop strings is passed by default. ``call_kwargs`` opts in to more where the model accepts it, e.g.
``lambda p: {"max_tokens": p.max_new_tokens, "temperature": p.temperature}`` for ``ChatOpenAI``.

Stop strings. They are the only per-call setting, because they delimit agent actions. The rule (shared
with the OpenAI-compatible client, see :func:`~evigraph.generators.openai_compat.settle_stop`):

1. ``stop=[...]`` is passed to the model, *and* enforced here: the reply is cut right after the first stop
   string it contains, which stays in the text (many simple and fake models ignore ``stop``).
2. A model that honours ``stop`` usually drops the string. If its ``response_metadata`` names the string
   that fired (``stop_reason``/``stop_sequence``, as vLLM and Anthropic do; ``stop_reason ==
   "stop_sequence"`` with a single stop string is read as that one), it is appended again.
3. Otherwise we cannot know whether a stop string fired: ``finish_reason``/``stop_reason``/``done_reason``
   of ``length``/``max_tokens`` means the token cap, anything else end-of-sequence (``eos``).

For ``ChatOpenAI`` against vLLM, pass ``extra_body={"include_stop_str_in_output": True}`` to the model so
the string comes back and rule 1 sees it.

Logprobs. The chat model's own settings decide whether it asks for them (``ChatOpenAI(logprobs=True)``); they are
read from ``response_metadata["logprobs"]`` (:mod:`evigraph.generators.server_tokens`). Against vLLM, add
``"return_tokens_as_token_ids": True`` to ``extra_body`` and the token ids come too, so policy turns keep their
logprobs and label confidences work (:meth:`ChatModelGenerator.decode_token_ids`). A model that returns none when
asked is named once in a warning.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from evigraph.errors import GeneratorError
from evigraph.generators.base import BaseGenerator, check_transcript
from evigraph.generators.openai_compat import settle_stop
from evigraph.generators.server_tokens import LogprobNotice, ServerTokens, ServerVocabulary, read_server_tokens
from evigraph.generators.types import Continuation, SamplingParams, StructuredError, StructuredResult
from evigraph.jsonl import format_validation_error
from evigraph.trajectory import Segment

__all__ = ("ChatModelGenerator", "to_langchain_messages")

SchemaT = TypeVar("SchemaT", bound=BaseModel)

_MESSAGE_CLASSES: dict[str, type[BaseMessage]] = {
    "system": SystemMessage,
    "user": HumanMessage,
    "assistant": AIMessage,
}
_LENGTH_REASONS = {"length", "max_tokens"}


def to_langchain_messages(transcript: Sequence[Segment]) -> list[BaseMessage]:
    """The transcript as LangChain messages (the single transcript convention)."""
    return [_MESSAGE_CLASSES[segment.chat_role](content=segment.text) for segment in transcript]


def _read_finish(metadata: Mapping[str, Any], stops: Sequence[str]) -> tuple[str | None, bool]:
    """``(stop string that fired, hit the token cap)`` as far as the provider's metadata tells."""
    for key in ("stop_sequence", "stop_reason"):
        value = metadata.get(key)
        if isinstance(value, str) and value in stops:
            return value, False
    reasons = {
        str(metadata[key]).lower()
        for key in ("finish_reason", "stop_reason", "done_reason")
        if isinstance(metadata.get(key), str)
    }
    if "stop_sequence" in reasons and len(stops) == 1:
        return stops[0], False
    return None, bool(reasons & _LENGTH_REASONS)


def _raw_text(message: Any) -> str:
    """What the model said, for ``StructuredResult.raw``: its text, else its first tool call's arguments."""
    if not isinstance(message, BaseMessage):
        return ""
    text = str(message.text)
    if text:
        return text
    if isinstance(message, AIMessage):
        if message.tool_calls:
            return json.dumps(message.tool_calls[0]["args"], ensure_ascii=False)
        if message.invalid_tool_calls:
            return str(message.invalid_tool_calls[0].get("args") or "")
    return ""


class ChatModelGenerator(BaseGenerator):
    """Generates with a LangChain ``BaseChatModel`` (a text backend: token ids only where vLLM sends them).

    Args:
        model: the chat model; shared by concurrent calls, as LangChain models are meant to be.
        name: shown in traces; defaults to ``langchain:<model class>``.
        call_kwargs: maps the sampling parameters to extra keyword arguments for each ``ainvoke`` (only for
            models that accept them; see the module docstring). ``None`` passes only ``stop``.

    Raises (at call time):
        GeneratorError: the chat model raised, or returned something that is not a message.
    """

    supported_guides = frozenset()
    can_continue_policy = False  # chat models answer a conversation; they do not prefill assistant turns

    def __init__(
        self,
        model: BaseChatModel,
        *,
        name: str | None = None,
        call_kwargs: Callable[[SamplingParams], Mapping[str, Any]] | None = None,
    ) -> None:
        self.model = model
        self.name = name or f"langchain:{type(model).__name__}"
        self.call_kwargs = call_kwargs
        self.vocabulary = ServerVocabulary()
        self._notice = LogprobNotice(self.name, f"the chat model ({type(model).__name__})")

    def decode_token_ids(self, token_ids: Sequence[int]) -> str:
        """Text of token ids the model returned (vLLM's ``token_id:N`` tokens; see the module docstring)."""
        return self.vocabulary.decode(token_ids)

    def _tokens(self, metadata: Mapping[str, Any], kept_chars: int | None) -> ServerTokens | None:
        """The reply's tokens from ``response_metadata["logprobs"]``, or ``None`` (said once) without usable ones."""
        lost = "label confidences are not computed and policy turns keep no logprobs"
        try:
            tokens = read_server_tokens(metadata.get("logprobs"), kept_chars)
        except ValueError as error:  # optional data from a provider never fails a turn
            self._notice.missing(f"returned malformed logprobs ({error})", lost)
            return None
        if tokens is None:
            self._notice.missing("returned no logprobs (ChatOpenAI needs logprobs=True)", lost)
        elif tokens.token_ids is not None:
            self.vocabulary.learn(tokens)
        return tokens

    async def _invoke(self, runnable: Any, messages: list[BaseMessage], **kwargs: Any) -> Any:
        try:
            return await runnable.ainvoke(messages, **kwargs)
        except Exception as error:  # any provider failure is a backend failure, recorded on the trajectory
            raise GeneratorError(f"{self.name}: the chat model failed: {type(error).__name__}: {error}") from error

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        kwargs = dict(self.call_kwargs(params)) if self.call_kwargs is not None else {}
        kwargs["stop"] = list(params.stop) or None
        reply = await self._invoke(self.model, to_langchain_messages(transcript), **kwargs)
        if not isinstance(reply, BaseMessage):
            raise GeneratorError(f"{self.name}: expected a message from the chat model, got {type(reply).__name__}")
        raw_text = str(reply.text)
        metadata = reply.response_metadata or {}
        fired, length = _read_finish(metadata, params.stop)
        text, finish_reason, stop_string = settle_stop(raw_text, params.stop, fired=fired, length=length)
        tokens = None
        if params.logprobs:
            tokens = self._tokens(metadata, len(text) if len(text) < len(raw_text) else None)
        usage = getattr(reply, "usage_metadata", None) or {}
        return Continuation(
            text=text,
            finish_reason=finish_reason,
            stop_string=stop_string,
            token_ids=tokens.token_ids if tokens is not None else None,
            logprobs=tokens.logprobs if tokens is not None else None,
            prompt_tokens=usage.get("input_tokens"),
            completion_tokens=usage.get("output_tokens"),
        )

    async def structured(
        self,
        transcript: Sequence[Segment],
        schema: type[SchemaT],
        params: SamplingParams | None = None,
    ) -> StructuredResult[SchemaT]:
        """One ``schema`` object: through ``with_structured_output`` if the model has it, else the base path.

        ``with_structured_output`` (tool calling or the provider's JSON mode) makes one attempt and reports
        ``guided=True``; a reply that does not fit becomes a typed error. Models without it (the base class
        raises ``NotImplementedError``) get the schema instruction plus one repair turn. ``params`` only
        matter on that fallback path (the structured runnable takes no per-call settings).
        """
        check_transcript(transcript, allow_trailing_policy=self.can_continue_policy)
        try:
            runnable = self.model.with_structured_output(schema, include_raw=True)
        except NotImplementedError:
            return await super().structured(transcript, schema, params)
        output = await self._invoke(runnable, to_langchain_messages(transcript))
        return self._structured_result(output, schema)

    @staticmethod
    def _structured_result(output: Any, schema: type[SchemaT]) -> StructuredResult[SchemaT]:
        result = StructuredResult[schema]
        if isinstance(output, dict) and "parsed" in output:
            raw_message, parsed, failure = output.get("raw"), output.get("parsed"), output.get("parsing_error")
        else:  # a model whose override ignores include_raw returns the object itself
            raw_message, parsed, failure = None, output, None
        raw = _raw_text(raw_message)
        truncated = isinstance(raw_message, BaseMessage) and _read_finish(raw_message.response_metadata or {}, ())[1]

        def failed(error: StructuredError) -> StructuredResult[SchemaT]:
            if truncated:
                error = StructuredError(kind="truncated", message=f"hit the token cap; {error.message}")
            return result(error=error, raw=raw, guided=True)

        if isinstance(failure, ValidationError):
            return failed(StructuredError(kind="schema_mismatch", message=format_validation_error(failure)))
        if isinstance(failure, OutputParserException | ValueError):
            first_line = (str(failure).splitlines() or [type(failure).__name__])[0]
            return failed(StructuredError(kind="invalid_json", message=first_line))
        if failure is not None:
            return failed(StructuredError(kind="invalid_json", message=f"{type(failure).__name__}: {failure}"))
        if parsed is None:
            if isinstance(raw_message, AIMessage) and raw_message.invalid_tool_calls:
                return failed(StructuredError(kind="invalid_json", message="the tool-call arguments do not parse"))
            return failed(StructuredError(kind="no_json", message="the model made no structured reply"))
        if isinstance(parsed, schema):
            value = parsed
        else:
            data = parsed.model_dump() if isinstance(parsed, BaseModel) else parsed
            try:
                value = schema.model_validate(data)
            except ValidationError as error:
                return failed(StructuredError(kind="schema_mismatch", message=format_validation_error(error)))
        return result(value=value, raw=raw or value.model_dump_json(), guided=True)
