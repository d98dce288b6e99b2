"""The OpenAI-compatible client against a real local fake of ``vllm serve``."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import BaseModel

from evigraph.errors import ConfigError, GeneratorError
from evigraph.generators import Guide, OpenAICompatibleGenerator, SamplingParams
from evigraph.generators.openai_compat import settle_stop
from evigraph.tokens import token_decoder
from evigraph.trajectory import Segment
from tests.generators.contract import PROMPT, Capabilities, GeneratorContract
from tests.generators.fake_openai_server import FakeOpenAIServer

# The fake answers the last message's words reversed: this is its reply to PROMPT.
REPLY = "sentence one in answer blue sky the is"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_server(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.reset()
    # Keys from the developer's shell must not leak into header assertions.
    monkeypatch.delenv("EVIGRAPH_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
async def generator(server: FakeOpenAIServer) -> AsyncIterator[OpenAICompatibleGenerator]:
    gen = OpenAICompatibleGenerator(server.base_url, server.model)
    gen.retry_backoff_s = 0.01
    yield gen
    await gen.aclose()


class TestOpenAICompatContract(GeneratorContract):
    @pytest.fixture
    def capabilities(self) -> Capabilities:
        # Token ids come only with logprobs (vLLM's return_tokens_as_token_ids), and then aligned with them.
        return Capabilities(token_ids=False, logprobs=True, guides=frozenset({"json", "regex"}))


class Verdict(BaseModel):
    label: str
    confidence: float


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the request --------------------------------------------------------------------------------------
async def test_request_body_maps_sampling_params(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    params = SamplingParams(max_new_tokens=7, temperature=0.3, top_p=0.9, seed=5, stop=("</a>", "</b>"), logprobs=True)
    await generator.continue_transcript(PROMPT, params)
    (body,) = server.bodies
    assert body["model"] == "fake-model"
    assert body["max_tokens"] == body["max_completion_tokens"] == 7
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.3, 0.9, 5)
    assert body["stop"] == ["</a>", "</b>"]
    assert body["include_stop_str_in_output"] is True
    assert body["logprobs"] is True
    assert body["return_tokens_as_token_ids"] is True  # vLLM's ids, so turns keep their logprobs
    assert body["stream"] is False
    assert "response_format" not in body and "structured_outputs" not in body


async def test_optional_fields_are_left_out(generator: OpenAICompatibleGenerator, server: FakeOpenAIServer) -> None:
    await generator.continue_transcript(PROMPT, SamplingParams(seed=None))
    (body,) = server.bodies
    for key in ("seed", "stop", "include_stop_str_in_output", "logprobs", "return_tokens_as_token_ids"):
        assert key not in body


async def test_guides_use_current_fields_never_guided_star(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    json_result = await generator.continue_transcript(PROMPT, SamplingParams(guide=Guide.json(Verdict)))
    regex_result = await generator.continue_transcript(PROMPT, SamplingParams(guide=Guide.pattern(r"(yes|no)")))
    json_body, regex_body = server.bodies
    assert json_body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": Verdict.model_json_schema(), "strict": True},
    }
    assert regex_body["structured_outputs"] == {"regex": "(yes|no)"}
    # vLLM answers the removed guided_* fields with HTTP 200 and *unconstrained* output: never send them.
    for body in server.bodies:
        assert not [key for key in body if key.startswith("guided")]
    assert Verdict.model_validate_json(json_result.text) == Verdict(label="x", confidence=0.5)
    assert regex_result.text == "yes"


async def test_messages_follow_the_transcript_convention(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    transcript = [
        *PROMPT,
        Segment(origin="policy", text="<search>sky colour</search>", finish_reason="stop"),
        Segment(origin="environment", text="<information>Rayleigh scattering</information>"),
    ]
    result = await generator.continue_transcript(transcript, SamplingParams())
    (body,) = server.bodies
    assert body["messages"] == [
        {"role": "system", "content": "You verify claims."},
        {"role": "user", "content": "Is the sky blue? Answer in one sentence."},
        {"role": "assistant", "content": "<search>sky colour</search>"},
        {"role": "user", "content": "<information>Rayleigh scattering</information>"},
    ]
    assert result.text == "information scattering rayleigh information"


async def test_trailing_policy_segment_is_refused_before_any_request(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    with pytest.raises(ConfigError, match="cannot continue an assistant turn"):
        await generator.continue_transcript([*PROMPT, Segment(origin="policy", text="The")], SamplingParams())
    assert server.bodies == []


# -- the reply ----------------------------------------------------------------------------------------
async def test_finish_reasons_and_usage(generator: OpenAICompatibleGenerator) -> None:
    free = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=50))
    assert (free.text, free.finish_reason, free.stop_string, free.token_ids) == (REPLY, "eos", None, None)
    assert free.prompt_tokens == 11
    # No ids from a chat API, but the server's count: runs report tokens generated (not 0).
    assert free.completion_tokens == len(REPLY.split()) and free.generated_tokens == free.completion_tokens
    capped = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=3))
    assert (capped.text, capped.finish_reason) == ("sentence one in", "length")
    assert capped.generated_tokens == 3
    stopped = await generator.continue_transcript(PROMPT, SamplingParams(stop=(" blue", " in")))
    assert (stopped.text, stopped.finish_reason, stopped.stop_string) == ("sentence one in", "stop", " in")


async def test_stop_string_dropped_by_the_server_is_put_back(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    server.drop_stop_string = True  # like OpenAI's API: include_stop_str_in_output is not honoured
    result = await generator.continue_transcript(PROMPT, SamplingParams(stop=("blue",)))
    assert (result.text, result.finish_reason, result.stop_string) == ("sentence one in answer blue", "stop", "blue")


async def test_dropped_stop_string_without_stop_reason_reads_as_eos(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    # Documented limit: a server that drops the string and does not say which fired looks like EOS.
    server.drop_stop_string = True
    server.report_stop_reason = False
    result = await generator.continue_transcript(PROMPT, SamplingParams(stop=("blue",)))
    assert (result.text, result.finish_reason, result.stop_string) == ("sentence one in answer ", "eos", None)


async def test_server_ignoring_stop_is_cut_client_side_with_logprobs_trimmed(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    server.ignore_stop = True
    result = await generator.continue_transcript(PROMPT, SamplingParams(stop=("nsw",), logprobs=True))
    assert (result.text, result.finish_reason, result.stop_string) == ("sentence one in answ", "stop", "nsw")
    # The token " answer" ran past the stop string and stays whole: four tokens, four logprobs.
    assert result.logprobs == pytest.approx([-0.1, -0.2, -0.3, -0.4])


async def test_logprobs_are_parsed(generator: OpenAICompatibleGenerator) -> None:
    result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=6, logprobs=True))
    assert result.logprobs == pytest.approx([-0.1, -0.2, -0.3, -0.4, -0.5, -0.1])
    plain = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=6))
    assert plain.logprobs is None and plain.token_ids is None


# -- logprobs and token ids from the server (issue 30, point 3) ---------------------------------------------
async def test_token_ids_and_logprobs_reach_the_continuation_and_its_segment(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=4, logprobs=True))
    assert result.text == "sentence one in answer"
    assert result.token_ids == [server.vocabulary[p] for p in ("sentence", " one", " in", " answer")]
    assert result.logprobs == pytest.approx([-0.1, -0.2, -0.3, -0.4])
    assert result.generated_tokens == 4  # exact: counted from the ids
    segment = result.to_segment()  # a segment keeps logprobs only aligned with ids: now it does
    assert segment.token_ids == result.token_ids and segment.logprobs == result.logprobs
    # The ids decode through what the generator learnt from the replies (agents find a label's token with it).
    assert generator.decode_token_ids(result.token_ids) == result.text
    assert token_decoder(generator) == generator.decode_token_ids


async def test_ids_are_trimmed_with_the_logprobs_when_the_server_ignores_stop(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    server.ignore_stop = True
    result = await generator.continue_transcript(PROMPT, SamplingParams(stop=("nsw",), logprobs=True))
    assert result.text == "sentence one in answ" and result.token_ids is not None
    assert len(result.token_ids) == len(result.logprobs or []) == 4


async def test_token_ids_can_be_left_out_of_the_request(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    gen = OpenAICompatibleGenerator(server.base_url, server.model, token_ids=False)
    result = await gen.continue_transcript(PROMPT, SamplingParams(max_new_tokens=3, logprobs=True))
    assert "return_tokens_as_token_ids" not in server.bodies[0]
    assert result.logprobs == pytest.approx([-0.1, -0.2, -0.3]) and result.token_ids is None
    assert result.to_segment().logprobs is None
    assert "token_ids=False" in caplog.text
    await gen.aclose()


@pytest.mark.parametrize(
    ("support", "said"),
    [
        ("none", "returned no logprobs"),
        ("text", "returned logprobs without token ids"),
        ("malformed", "returned malformed logprobs"),
    ],
)
async def test_a_server_without_usable_logprobs_is_named_once(
    generator: OpenAICompatibleGenerator,
    server: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
    support: str,
    said: str,
) -> None:
    server.logprobs_support = support  # type: ignore[assignment]
    params = SamplingParams(max_new_tokens=3, logprobs=True)
    with caplog.at_level(logging.WARNING, logger="evigraph.generators.server_tokens"):
        first = await generator.continue_transcript(PROMPT, params)
        second = await generator.continue_transcript(PROMPT, params)
    assert first.text == second.text == "sentence one in"  # the reply itself is still good
    assert first.token_ids is None and first.to_segment().logprobs is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert said in warnings[0] and f"{server.base_url}/chat/completions" in warnings[0]
    assert "confidences are not computed" in warnings[0]


async def test_no_warning_when_logprobs_were_not_asked_for(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.logprobs_support = "none"
    await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=3))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    "logprobs",
    [
        "garbage",
        17,
        {"content": "x"},
        {"content": [None]},
        {"content": [{"token": "a", "logprob": "high"}]},
        {"content": [{"token": "a", "logprob": float("nan")}]},
        {"content": [{"token": "a", "logprob": 3.0}]},
        {"content": [{"token": "token_id:5", "logprob": -0.1, "bytes": [300]}]},
        {"tokens": ["a"], "token_logprobs": [None]},
        {"tokens": ["a", "b"], "token_logprobs": [-0.1]},
    ],
)
def test_untrusted_logprobs_never_fail_the_turn(logprobs: object) -> None:
    gen = OpenAICompatibleGenerator("http://127.0.0.1:1/v1", "m")
    data = {"choices": [{"message": {"content": "a b"}, "finish_reason": "stop", "logprobs": logprobs}]}
    result = gen._parse_reply(data, SamplingParams(logprobs=True))
    assert (result.text, result.logprobs, result.token_ids) == ("a b", None, None)


async def test_structured_is_guided(generator: OpenAICompatibleGenerator, server: FakeOpenAIServer) -> None:
    result = await generator.structured(PROMPT, Verdict)
    assert result.ok and result.guided and result.attempts == 1
    assert result.value == Verdict(label="x", confidence=0.5)
    assert server.bodies[0]["response_format"]["type"] == "json_schema"


def test_sync_calls_each_get_a_working_client(server: FakeOpenAIServer) -> None:
    # continue_sync runs a fresh event loop per call; the HTTP client must follow.
    gen = OpenAICompatibleGenerator(server.base_url, server.model)
    first = gen.continue_sync(PROMPT, SamplingParams())
    second = gen.continue_sync(PROMPT, SamplingParams())
    assert first.text == second.text == REPLY


# -- failures -----------------------------------------------------------------------------------------
async def test_a_5xx_is_retried(generator: OpenAICompatibleGenerator, server: FakeOpenAIServer) -> None:
    server.fail_next(500, "engine hiccup")
    result = await generator.continue_transcript(PROMPT, SamplingParams())
    assert result.text == REPLY
    assert len(server.bodies) == 2


async def test_retries_are_bounded(server: FakeOpenAIServer) -> None:
    gen = OpenAICompatibleGenerator(server.base_url, server.model, max_retries=2)
    gen.retry_backoff_s = 0.01
    server.fail_next(503, "overloaded", times=5)
    with pytest.raises(GeneratorError, match=r"gave up after 3 attempt\(s\).*503.*overloaded"):
        await gen.continue_transcript(PROMPT, SamplingParams())
    assert len(server.bodies) == 3
    await gen.aclose()


async def test_a_4xx_is_not_retried_and_names_the_server_message(
    generator: OpenAICompatibleGenerator, server: FakeOpenAIServer
) -> None:
    server.fail_next(400, "max_tokens must be at least 1, got 0.")
    with pytest.raises(GeneratorError, match=r"HTTP 400\): max_tokens must be at least 1, got 0\."):
        await generator.continue_transcript(PROMPT, SamplingParams())
    assert len(server.bodies) == 1


async def test_unknown_model_reports_the_server_404(server: FakeOpenAIServer) -> None:
    gen = OpenAICompatibleGenerator(server.base_url, "no-such-model")
    with pytest.raises(GeneratorError, match="The model `no-such-model` does not exist"):
        await gen.continue_transcript(PROMPT, SamplingParams())
    await gen.aclose()


async def test_unreachable_server_is_retried_then_a_generator_error() -> None:
    gen = OpenAICompatibleGenerator(f"http://127.0.0.1:{_free_port()}/v1", "m", max_retries=1, timeout_s=5)
    gen.retry_backoff_s = 0.01
    with pytest.raises(GeneratorError, match=r"gave up after 2 attempt\(s\): cannot reach"):
        await gen.continue_transcript(PROMPT, SamplingParams())
    await gen.aclose()
    await gen.aclose()  # safe twice


# -- the API key --------------------------------------------------------------------------------------
async def test_api_key_header(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = OpenAICompatibleGenerator(server.base_url, server.model, api_key="sk-explicit")
    await explicit.continue_transcript(PROMPT, SamplingParams())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    from_openai_env = OpenAICompatibleGenerator(server.base_url, server.model)
    await from_openai_env.continue_transcript(PROMPT, SamplingParams())
    monkeypatch.setenv("EVIGRAPH_API_KEY", "sk-evigraph")
    from_own_env = OpenAICompatibleGenerator(server.base_url, server.model)
    await from_own_env.continue_transcript(PROMPT, SamplingParams())
    headers = [r.headers.get("authorization") for r in server.requests]
    assert headers == ["Bearer sk-explicit", "Bearer sk-openai", "Bearer sk-evigraph"]
    assert "sk-" not in repr(from_own_env)
    for gen in (explicit, from_openai_env, from_own_env):
        await gen.aclose()


async def test_no_key_no_header(generator: OpenAICompatibleGenerator, server: FakeOpenAIServer) -> None:
    await generator.continue_transcript(PROMPT, SamplingParams())
    assert "authorization" not in server.requests[0].headers


# -- the stop rule on its own -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "fired", "length", "expected"),
    [
        ("a </s> b </t>", None, False, ("a </s>", "stop", "</s>")),
        ("a b </t> c </s>", None, True, ("a b </t>", "stop", "</t>")),
        ("a b ", "</t>", False, ("a b </t>", "stop", "</t>")),
        ("a b ", "</x>", False, ("a b ", "eos", None)),
        ("a b", None, True, ("a b", "length", None)),
        ("a b", None, False, ("a b", "eos", None)),
    ],
)
def test_settle_stop(text: str, fired: str | None, length: bool, expected: tuple[str, str, str | None]) -> None:
    assert settle_stop(text, ("</s>", "</t>"), fired=fired, length=length) == expected
