"""LangChain chat models as generators: the contract, the stop rule, structured output and its fallback."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel, FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, Field

from evigraph.errors import ConfigError, GeneratorError
from evigraph.generators import ChatModelGenerator, SamplingParams
from evigraph.trajectory import Segment
from tests.generators.contract import PROMPT, Capabilities, GeneratorContract

REPLY = "sentence one in answer blue sky the is"  # EchoChatModel's answer to PROMPT


class EchoChatModel(BaseChatModel):
    """Answers the last message's words, lower-cased and reversed: deterministic, unlike the cycling fakes.

    By default it ignores ``stop`` (as many simple models do); ``honour_stop`` makes it stop *before* the
    string, dropping it, like OpenAI's API, and ``name_stop`` adds vLLM's ``stop_reason`` to the metadata.
    """

    honour_stop: bool = False
    name_stop: bool = False
    calls: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append({"messages": messages, "stop": stop, "kwargs": kwargs})
        text = " ".join(reversed(str(messages[-1].text).lower().replace("?", "").replace(".", "").split()))
        metadata: dict[str, Any] = {"finish_reason": "stop"}
        hits = sorted((text.find(s), s) for s in stop or () if s in text)
        if self.honour_stop and hits:
            position, fired = hits[0]
            text = text[:position]
            if self.name_stop:
                metadata["stop_reason"] = fired
        message = AIMessage(
            content=text,
            response_metadata=metadata,
            usage_metadata={"input_tokens": 11, "output_tokens": len(text.split()), "total_tokens": 0},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, **kwargs)


class ScriptedChatModel(FakeMessagesListChatModel):
    """Scripted replies with a ``bind_tools`` that ignores the tools, so ``with_structured_output`` works."""

    def bind_tools(self, tools: Any, *, tool_choice: str | None = None, **kwargs: Any) -> ScriptedChatModel:
        return self


class BrokenChatModel(EchoChatModel):
    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise RuntimeError("provider is down")


class Verdict(BaseModel):
    label: str
    confidence: float


class TestChatModelContract(GeneratorContract):
    @pytest.fixture
    def generator(self) -> ChatModelGenerator:
        return ChatModelGenerator(EchoChatModel())

    @pytest.fixture
    def capabilities(self) -> Capabilities:
        return Capabilities(token_ids=False, logprobs=False)


def _fixed(content: str, **metadata: Any) -> ChatModelGenerator:
    return ChatModelGenerator(
        FakeMessagesListChatModel(responses=[AIMessage(content=content, response_metadata=metadata)])
    )


# -- messages and calls -------------------------------------------------------------------------------
async def test_messages_follow_the_transcript_convention() -> None:
    model = EchoChatModel()
    gen = ChatModelGenerator(model)
    transcript = [
        *PROMPT,
        Segment(origin="policy", text="<search>sky</search>", finish_reason="stop"),
        Segment(origin="environment", text="<information>Rayleigh</information>"),
    ]
    result = await gen.continue_transcript(transcript, SamplingParams())
    messages = model.calls[0]["messages"]
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert [m.content for m in messages] == [s.text for s in transcript]
    assert result.text == "<information>rayleigh</information>"
    assert (result.finish_reason, result.token_ids, result.prompt_tokens) == ("eos", None, 11)
    assert gen.name == "langchain:EchoChatModel"


async def test_only_stop_is_passed_unless_call_kwargs_opt_in() -> None:
    plain_model, mapped_model = EchoChatModel(), EchoChatModel()
    params = SamplingParams(max_new_tokens=9, temperature=0.7)
    await ChatModelGenerator(plain_model).continue_transcript(PROMPT, params)
    mapped = ChatModelGenerator(
        mapped_model, call_kwargs=lambda p: {"max_tokens": p.max_new_tokens, "temperature": p.temperature}
    )
    await mapped.continue_transcript(PROMPT, params.model_copy(update={"stop": ("</a>",)}))
    assert plain_model.calls[0]["stop"] is None and plain_model.calls[0]["kwargs"] == {}
    assert mapped_model.calls[0]["stop"] == ["</a>"]
    assert mapped_model.calls[0]["kwargs"] == {"max_tokens": 9, "temperature": 0.7}


async def test_a_failing_model_is_a_generator_error() -> None:
    with pytest.raises(GeneratorError, match="RuntimeError: provider is down"):
        await ChatModelGenerator(BrokenChatModel()).continue_transcript(PROMPT, SamplingParams())


async def test_structured_refuses_a_trailing_policy_segment() -> None:
    gen = ChatModelGenerator(EchoChatModel())
    with pytest.raises(ConfigError):
        await gen.structured([*PROMPT, Segment(origin="policy", text="{")], Verdict)


# -- the stop rule ------------------------------------------------------------------------------------
async def test_stop_is_enforced_client_side_when_the_model_ignores_it() -> None:
    model = EchoChatModel()
    result = await ChatModelGenerator(model).continue_transcript(PROMPT, SamplingParams(stop=(" blue", " sky")))
    assert (result.text, result.finish_reason, result.stop_string) == ("sentence one in answer blue", "stop", " blue")
    assert model.calls[0]["stop"] == [" blue", " sky"]


async def test_a_dropped_stop_string_named_in_metadata_is_put_back() -> None:
    gen = ChatModelGenerator(EchoChatModel(honour_stop=True, name_stop=True))
    result = await gen.continue_transcript(PROMPT, SamplingParams(stop=(" blue",)))
    assert (result.text, result.finish_reason, result.stop_string) == ("sentence one in answer blue", "stop", " blue")


async def test_a_dropped_stop_string_nobody_names_reads_as_eos() -> None:
    # Documented limit: finish_reason "stop" alone cannot tell a stop string from end-of-sequence.
    gen = ChatModelGenerator(EchoChatModel(honour_stop=True))
    result = await gen.continue_transcript(PROMPT, SamplingParams(stop=(" blue",)))
    assert (result.text, result.finish_reason, result.stop_string) == ("sentence one in answer", "eos", None)


@pytest.mark.parametrize(
    ("metadata", "stops", "expected"),
    [
        # Anthropic names the sequence that fired.
        ({"stop_reason": "stop_sequence", "stop_sequence": "</b>"}, ("</a>", "</b>"), ("x </b>", "stop", "</b>")),
        # ... and with a single stop string requested, "stop_sequence" alone is enough.
        ({"stop_reason": "stop_sequence"}, ("</a>",), ("x </a>", "stop", "</a>")),
        ({"stop_reason": "stop_sequence"}, ("</a>", "</b>"), ("x ", "eos", None)),
        ({"finish_reason": "length"}, (), ("x ", "length", None)),
        ({"finish_reason": "MAX_TOKENS"}, ("</a>",), ("x ", "length", None)),
        ({"done_reason": "length"}, (), ("x ", "length", None)),
        ({"finish_reason": "stop"}, (), ("x ", "eos", None)),
        ({}, (), ("x ", "eos", None)),
    ],
)
async def test_finish_is_read_from_response_metadata(
    metadata: dict[str, Any], stops: tuple[str, ...], expected: tuple[str, str, str | None]
) -> None:
    result = await _fixed("x ", **metadata).continue_transcript(PROMPT, SamplingParams(stop=stops))
    assert (result.text, result.finish_reason, result.stop_string) == expected


# -- logprobs -----------------------------------------------------------------------------------------
async def test_logprobs_come_from_response_metadata() -> None:
    entries = [{"token": t, "logprob": lp} for t, lp in (("a", -0.5), (" b", -0.25), ("</s>", -0.1), (" c", -1.0))]
    gen = ChatModelGenerator(
        FakeMessagesListChatModel(
            responses=[AIMessage(content="a b</s> c", response_metadata={"logprobs": {"content": entries}})]
        )
    )
    full = await gen.continue_transcript(PROMPT, SamplingParams(logprobs=True))
    assert full.logprobs == [-0.5, -0.25, -0.1, -1.0]
    cut = await gen.continue_transcript(PROMPT, SamplingParams(logprobs=True, stop=("</s>",)))
    assert (cut.text, cut.logprobs) == ("a b</s>", [-0.5, -0.25, -0.1])
    not_asked = await gen.continue_transcript(PROMPT, SamplingParams())
    assert not_asked.logprobs is None
    absent = await ChatModelGenerator(EchoChatModel()).continue_transcript(PROMPT, SamplingParams(logprobs=True))
    assert absent.logprobs is None


# -- structured output --------------------------------------------------------------------------------
def _tool_call(args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "Verdict", "args": args, "id": "call-1"}])


async def test_structured_uses_with_structured_output() -> None:
    model = ScriptedChatModel(responses=[_tool_call({"label": "SUPPORTED", "confidence": 0.8})])
    result = await ChatModelGenerator(model).structured(PROMPT, Verdict)
    assert result.ok and result.guided and result.attempts == 1
    assert result.value == Verdict(label="SUPPORTED", confidence=0.8)
    assert result.raw == '{"label": "SUPPORTED", "confidence": 0.8}'


@pytest.mark.parametrize(
    ("reply", "kind", "fragment"),
    [
        (_tool_call({"label": 3}), "schema_mismatch", "field confidence: Field required"),
        (AIMessage(content="I think it is supported."), "no_json", "no structured reply"),
        (
            AIMessage(
                content="",
                invalid_tool_calls=[{"name": "Verdict", "args": '{"label": ', "id": "c", "error": "bad"}],
            ),
            "invalid_json",
            "do not parse",
        ),
        (
            AIMessage(content="", response_metadata={"finish_reason": "length"}),
            "truncated",
            "token cap",
        ),
    ],
)
async def test_structured_failures_are_typed_values(reply: AIMessage, kind: str, fragment: str) -> None:
    result = await ChatModelGenerator(ScriptedChatModel(responses=[reply])).structured(PROMPT, Verdict)
    assert not result.ok and result.guided and result.error is not None
    assert result.error.kind == kind
    assert fragment in result.error.message


async def test_structured_falls_back_to_parse_and_repair() -> None:
    # FakeListChatModel has no bind_tools, so with_structured_output raises NotImplementedError.
    model = FakeListChatModel(responses=["not json", 'Sure: {"label": "SUPPORT", "confidence": 0.9}'])
    result = await ChatModelGenerator(model).structured(PROMPT, Verdict)
    assert result.ok and not result.guided and result.attempts == 2
    assert result.value == Verdict(label="SUPPORT", confidence=0.9)


async def test_structured_fallback_reports_a_typed_error() -> None:
    model = FakeListChatModel(responses=["no", "still no"])
    result = await ChatModelGenerator(model).structured(PROMPT, Verdict)
    assert not result.ok and result.error is not None and result.error.kind == "no_json"
    assert (result.raw, result.attempts, result.guided) == ("still no", 2, False)


async def test_structured_model_failure_is_a_generator_error() -> None:
    class BrokenScripted(ScriptedChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise RuntimeError("quota exceeded")

    with pytest.raises(GeneratorError, match="quota exceeded"):
        await ChatModelGenerator(BrokenScripted(responses=[AIMessage(content="")])).structured(PROMPT, Verdict)
