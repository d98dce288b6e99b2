"""Server logprobs and token ids (issue 30, point 3): both OpenAI shapes, vLLM's ``token_id:N`` tokens, the decode
learnt from them, and LangChain's ``ChatOpenAI`` carrying them through ``response_metadata``."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest
from langchain_openai import ChatOpenAI

from evigraph.generators import ChatModelGenerator, SamplingParams
from evigraph.generators.server_tokens import ServerVocabulary, read_server_tokens
from evigraph.tokens import token_decoder
from tests.generators.contract import PROMPT
from tests.generators.fake_openai_server import FakeOpenAIServer


def _vllm_entry(token_id: int, text: str, logprob: float) -> dict[str, object]:
    """A ``logprobs.content`` entry as vLLM writes it with ``return_tokens_as_token_ids``."""
    return {"token": f"token_id:{token_id}", "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": []}


def test_chat_shape_with_token_ids() -> None:
    found = {"content": [_vllm_entry(7, "Label", -0.1), _vllm_entry(9, ":", -0.2), _vllm_entry(3, " SUPPORT", -0.3)]}
    tokens = read_server_tokens(found)
    assert tokens is not None
    assert (tokens.token_ids, tokens.logprobs) == ([7, 9, 3], [-0.1, -0.2, -0.3])
    vocabulary = ServerVocabulary()
    vocabulary.learn(tokens)
    assert vocabulary.decode([7, 9, 3]) == "Label: SUPPORT" and len(vocabulary) == 3
    assert vocabulary.decode([3, 404]) == " SUPPORT"  # an id it never saw decodes to nothing, never raises


def test_completions_shape_and_text_tokens() -> None:
    found = {"tokens": ["token_id:1", "token_id:2"], "token_logprobs": [-0.5, -0.25], "text_offset": [0, 9]}
    tokens = read_server_tokens(found)
    assert tokens is not None and (tokens.token_ids, tokens.logprobs) == ([1, 2], [-0.5, -0.25])
    # OpenAI's own API: tokens as text, no ids; the cut at a stop string counts their characters.
    text = read_server_tokens({"content": [{"token": "ab", "logprob": -1.0}, {"token": "cd", "logprob": -2.0}]}, 2)
    assert text is not None and (text.token_ids, text.logprobs) == (None, [-1.0])


def test_a_character_split_across_tokens_decodes_whole() -> None:
    encoded = "é".encode()  # two bytes, one per token (byte-level BPE does this)
    tokens = read_server_tokens(
        {
            "content": [
                {"token": "token_id:1", "logprob": -0.1, "bytes": [encoded[0]]},
                {"token": "token_id:2", "logprob": -0.1, "bytes": [encoded[1]]},
            ]
        }
    )
    vocabulary = ServerVocabulary()
    assert tokens is not None
    vocabulary.learn(tokens)
    assert vocabulary.decode([1, 2]) == "é"


@pytest.mark.parametrize("found", [None, {}, [], {"content": []}])
def test_absent_logprobs_read_as_none(found: object) -> None:
    assert read_server_tokens(found) is None


def test_a_cut_needs_every_tokens_text() -> None:
    with pytest.raises(ValueError, match="cannot be placed"):
        read_server_tokens({"content": [{"token": "token_id:1", "logprob": -0.1}]}, kept_chars=1)


# -- LangChain's ChatOpenAI ------------------------------------------------------------------------------------
@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer() as running:
        yield running


async def test_chat_openai_carries_logprobs_and_vllm_token_ids(server: FakeOpenAIServer) -> None:
    model = ChatOpenAI(
        base_url=server.base_url,
        api_key="x",  # type: ignore[arg-type]
        model=server.model,
        max_retries=0,
        logprobs=True,
        extra_body={"return_tokens_as_token_ids": True},
    )
    generator = ChatModelGenerator(model)
    result = await generator.continue_transcript(PROMPT, SamplingParams(logprobs=True))
    assert result.token_ids == [server.vocabulary[p] for p in re.findall(r"\s*\S+", result.text)]
    assert result.logprobs is not None and len(result.logprobs) == len(result.token_ids)
    assert token_decoder(generator) is not None and generator.decode_token_ids(result.token_ids) == result.text
    assert result.to_segment().logprobs == result.logprobs


async def test_chat_openai_without_logprobs_is_named_once(
    server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    model = ChatOpenAI(base_url=server.base_url, api_key="x", model=server.model, max_retries=0)  # type: ignore[arg-type]
    generator = ChatModelGenerator(model)
    with caplog.at_level(logging.WARNING, logger="evigraph.generators.server_tokens"):
        for _ in range(2):
            result = await generator.continue_transcript(PROMPT, SamplingParams(logprobs=True))
            assert result.logprobs is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "logprobs=True" in warnings[0] and "ChatOpenAI" in warnings[0]
