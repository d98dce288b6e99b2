"""The guarded OpenAI-compatible endpoint (``evigraph.serving.guard``), non-streaming: repair, block and annotate
against a scripted upstream (a real local HTTP server) with scripted verifiers, the verdict in the ``evigraph``
field and the headers, tool messages and ``documents`` as the sources, tool-call replies passed unchecked,
``/v1/models``, and the official ``openai`` client and ``ChatOpenAI`` used unchanged.

The verifiers are tests/embed/hosts.py's scripted models: an answer passes when every year it names is in the
sources (:data:`FACT` says 1854, :data:`RIGHT` passes, :data:`WRONG` -- 1853 -- fails). Expected repair notes and
blocked messages come from running the same verifier directly on hand-written inputs
(``{"claim": WRONG, "source": FACT}``) and the middleware's public message functions, the spec of what is sent.

The helpers here (servers, requests, verifiers) are shared by test_guard_stream.py and test_guard_faults.py.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

import tests.generators.fake_openai_server as fake_server
from evigraph.embed import Verifier
from evigraph.embed.turn import blocked_message, repair_message
from evigraph.errors import ConfigError
from evigraph.serving.gate import Gate
from evigraph.serving.guard import guard_router
from evigraph.serving.metrics import ServeMetrics
from evigraph.verification import Verification
from tests.embed.hosts import FACT, QUESTION, RIGHT, WRONG, scripted
from tests.generators.fake_openai_server import FakeOpenAIServer
from tests.servers import running

MODEL = "fake-model"
CALL = "CALL "
DOCUMENTS = [{"title": "Hog Island Light", "text": FACT}]
OTHER_YEAR = "Hog Island Light was first lit in 1853."
"""A source that backs :data:`WRONG` (same year): what makes an answer pass is what the request carries."""


# -- the upstream, the guard, the clients -------------------------------------------------------------------------
class ToolCallingServer(FakeOpenAIServer):
    """The fake upstream; a scripted reply ``"CALL <query>"`` comes back as a ``search`` tool call."""

    def _complete(self, body: dict[str, Any], messages: list[dict[str, Any]], scripted: str | None = None) -> Any:
        completion = super()._complete(body, messages, scripted)
        choice = completion["choices"][0]
        content = choice["message"]["content"]
        if content.startswith(CALL):
            arguments = json.dumps({"query": content.removeprefix(CALL)})
            call = {"id": "call-1", "type": "function", "function": {"name": "search", "arguments": arguments}}
            choice["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
            choice["finish_reason"] = "tool_calls"
        return completion


@pytest.fixture(scope="module", name="upstream")
def upstream_fixture() -> Iterator[ToolCallingServer]:
    """The upstream, one per module (the other guard test modules import the fixtures)."""
    # The fake accepts the roles of its first users; a tool result is a message an OpenAI server takes too.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fake_server, "_ROLES", {*fake_server._ROLES, "tool"})
        with ToolCallingServer(MODEL) as server:
            yield server


@pytest.fixture(name="fake")
def fake_fixture(upstream: ToolCallingServer) -> ToolCallingServer:
    """The upstream, its script and records cleared."""
    upstream.reset()
    return upstream


def verifier(agent: str = "seva", model: Any = None) -> Verifier:
    return Verifier(agent, model=model or scripted(agent))


@contextlib.contextmanager
def guarded(upstream_url: str, mode: str = "repair", **options: Any) -> Iterator[str]:
    """A bare FastAPI app with the guard's router, served; yields its base URL."""
    app = FastAPI()
    app.include_router(
        guard_router(options.pop("verifier", None) or verifier(), upstream=upstream_url, mode=mode, **options)
    )
    with running(app) as url:
        yield url


def direct_verdict(answer: str, source: str = FACT, agent: str = "seva") -> Verification:
    """The verdict of the same scripted verifier on hand-written inputs, without the guard."""
    inputs = {"claim": answer, "source": source}
    if agent == "rag-zeval":
        inputs = {"question": QUESTION, "reference": source, "candidates": [answer], "kind": "faithfulness"}
    return verifier(agent).verify(inputs)


def ask(**extra: Any) -> dict[str, Any]:
    """A request whose source is a document."""
    return {"model": MODEL, "messages": [{"role": "user", "content": QUESTION}], "documents": DOCUMENTS, **extra}


def with_tool_result(result: str) -> list[dict[str, Any]]:
    """A turn where the client's agent searched and got ``result`` back."""
    call = {"id": "call-7", "type": "function", "function": {"name": "search", "arguments": '{"query": "Hog Island"}'}}
    return [
        {"role": "system", "content": "Answer from the search results."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call-7", "content": result},
    ]


def post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30)


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)


# -- the modes ---------------------------------------------------------------------------------------------------
def test_repair_sends_the_note_and_returns_the_repaired_answer_that_passed(fake: ToolCallingServer) -> None:
    fake.script([WRONG, RIGHT])
    with guarded(fake.base_url, "repair") as url:
        response = post(url, ask())
    assert response.status_code == 200
    body = response.json()
    assert body["choices"][0]["message"]["content"] == RIGHT
    assert body["evigraph"]["action"] == "repair" and body["evigraph"]["repairs"] == 1
    assert body["evigraph"]["verdict"] == "passed" and body["evigraph"]["verification"]["passed"] is True
    assert body["evigraph"]["verification"]["label"] == "Attributable"
    assert response.headers["X-Evigraph-Verdict"] == "passed" and response.headers["X-Evigraph-Action"] == "repair"

    first, second = fake.bodies
    note = repair_message(direct_verdict(WRONG))
    assert second["messages"] == [
        *first["messages"],
        {"role": "assistant", "content": WRONG},
        {"role": "user", "content": note},
    ]
    assert second["documents"] == DOCUMENTS == first["documents"]  # the body passes through


def test_a_repair_that_still_fails_goes_out_annotated(fake: ToolCallingServer) -> None:
    fake.script([WRONG, "Hog Island Light was first lit in 1852."])
    with guarded(fake.base_url, "repair") as url:
        response = post(url, ask())
    body = response.json()
    assert body["choices"][0]["message"]["content"] == "Hog Island Light was first lit in 1852."
    assert (body["evigraph"]["action"], body["evigraph"]["verdict"], body["evigraph"]["repairs"]) == (
        "annotate",
        "failed",
        1,
    )
    assert response.headers["X-Evigraph-Verdict"] == "failed" and response.headers["X-Evigraph-Action"] == "annotate"
    assert len(fake.bodies) == 2  # one repair, no more


def test_block_replaces_the_answer_with_the_blocked_message(fake: ToolCallingServer) -> None:
    fake.script([WRONG])
    with guarded(fake.base_url, "block") as url:
        response = post(url, ask(logprobs=True))
    body = response.json()
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": blocked_message(direct_verdict(WRONG))}
    assert choice["finish_reason"] == "content_filter" and choice["logprobs"] is None
    assert "1853" not in response.text  # no token of the answer, not even in its logprobs
    assert (body["evigraph"]["action"], body["evigraph"]["verdict"]) == ("block", "failed")
    assert response.headers["X-Evigraph-Action"] == "block" and len(fake.bodies) == 1


def test_annotate_keeps_the_answer_and_reports_the_verdict(fake: ToolCallingServer) -> None:
    fake.script([WRONG])
    with guarded(fake.base_url, "annotate") as url:
        response = post(url, ask())
    body = response.json()
    assert body["choices"][0]["message"]["content"] == WRONG and len(fake.bodies) == 1
    verification = Verification.model_validate(body["evigraph"]["verification"])
    assert verification == direct_verdict(WRONG)
    assert response.headers["X-Evigraph-Verdict"] == "failed" and response.headers["X-Evigraph-Action"] == "annotate"


@pytest.mark.parametrize("mode", ["repair", "block", "annotate"])
def test_a_passing_answer_goes_out_untouched_in_every_mode(fake: ToolCallingServer, mode: str) -> None:
    fake.script([RIGHT])
    with guarded(fake.base_url, mode) as url:
        response = post(url, ask())
    body = response.json()
    assert body["choices"][0]["message"]["content"] == RIGHT and body["choices"][0]["finish_reason"] == "stop"
    assert body["id"] == "chatcmpl-fake-1" and body["usage"]["completion_tokens"] == 8  # the upstream's, as sent
    assert (response.headers["X-Evigraph-Verdict"], response.headers["X-Evigraph-Action"]) == ("passed", "pass")
    assert len(fake.bodies) == 1


def test_rag_zeval_guards_too(fake: ToolCallingServer) -> None:
    fake.script([WRONG, RIGHT])
    with guarded(fake.base_url, "repair", verifier=verifier("rag-zeval")) as url:
        response = post(url, ask())
    body = response.json()
    assert body["choices"][0]["message"]["content"] == RIGHT and body["evigraph"]["action"] == "repair"
    assert fake.bodies[1]["messages"][-1]["content"] == repair_message(direct_verdict(WRONG, agent="rag-zeval"))


# -- what the verifier reads -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("result", "verdict"),
    [
        (FACT, "failed"),  # the tool says 1854, the answer 1853
        (OTHER_YEAR, "passed"),  # the tool says 1853 too: the tool message is the source
    ],
)
def test_tool_messages_are_the_sources(fake: ToolCallingServer, result: str, verdict: str) -> None:
    fake.script([WRONG])
    with guarded(fake.base_url, "annotate") as url:
        response = post(url, {"model": MODEL, "messages": with_tool_result(result)})
    assert response.json()["choices"][0]["message"]["content"] == WRONG
    assert response.headers["X-Evigraph-Verdict"] == verdict
    assert fake.bodies[0]["messages"] == with_tool_result(result)  # forwarded as sent


def test_a_turn_without_sources_is_a_verifier_error_and_goes_out_annotated(fake: ToolCallingServer) -> None:
    """SEVA attributes the answer to what the client's model saw: nothing to attribute to is an error verdict,
    not a block, not a repair loop."""
    fake.script([RIGHT])
    with guarded(fake.base_url, "block") as url:
        response = post(url, {"model": MODEL, "messages": [{"role": "user", "content": QUESTION}]})
    body = response.json()
    assert response.status_code == 200 and body["choices"][0]["message"]["content"] == RIGHT
    assert body["evigraph"]["verdict"] == "error" and "source" in body["evigraph"]["verification"]["error"]
    assert response.headers["X-Evigraph-Verdict"] == "error" and response.headers["X-Evigraph-Action"] == "annotate"


def test_a_tool_call_reply_is_a_step_and_goes_out_unchecked(fake: ToolCallingServer) -> None:
    model = scripted("seva")
    fake.script([f"{CALL}Hog Island Light"])
    with guarded(fake.base_url, "block", verifier=verifier(model=model)) as url:
        response = post(url, ask())
    body = response.json()
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "search", "arguments": '{"query": "Hog Island Light"}'}
    assert body["evigraph"] == {
        "action": "skip",
        "verification": None,
        "repairs": 0,
        "repair_error": None,
        "verdict": None,
    }
    assert response.headers["X-Evigraph-Action"] == "skip" and "X-Evigraph-Verdict" not in response.headers
    assert model.calls == []


# -- the clients -------------------------------------------------------------------------------------------------
def test_the_openai_client_works_unchanged(fake: ToolCallingServer) -> None:
    fake.script([WRONG, RIGHT])
    with guarded(fake.base_url, "repair", api_key="sk-upstream") as url:
        raw = client(url).chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": QUESTION}], extra_body={"documents": DOCUMENTS}
        )
    completion = raw.parse()
    assert completion.choices[0].message.content == RIGHT
    assert completion.model_extra["evigraph"]["action"] == "repair"
    assert raw.headers["x-evigraph-verdict"] == "passed"
    # The upstream sees the guard's key, never the client's.
    assert {r.headers["authorization"] for r in fake.requests} == {"Bearer sk-upstream"}


def test_chat_openai_works_unchanged_with_tool_messages(fake: ToolCallingServer) -> None:
    fake.script([WRONG])
    with guarded(fake.base_url, "block") as url:
        chat = ChatOpenAI(base_url=f"{url}/v1", api_key="x", model=MODEL, max_retries=0, include_response_headers=True)
        call = {"name": "search", "args": {"query": "Hog Island"}, "id": "call-7", "type": "tool_call"}
        reply = chat.invoke(
            [HumanMessage(QUESTION), AIMessage(content="", tool_calls=[call]), ToolMessage(FACT, tool_call_id="call-7")]
        )
    assert reply.content == blocked_message(direct_verdict(WRONG))
    assert reply.response_metadata["headers"]["x-evigraph-verdict"] == "failed"
    assert fake.bodies[0]["messages"][2]["role"] == "tool"  # ChatOpenAI's own wire format reached the upstream


def test_models_are_the_upstreams() -> None:
    listing = {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "evigraph"}]}
    seen: list[str | None] = []
    models = FastAPI()

    @models.get("/v1/models")
    def list_models() -> dict[str, Any]:
        return listing

    @models.middleware("http")
    async def record(request: Any, call_next: Any) -> Any:
        seen.append(request.headers.get("authorization"))
        return await call_next(request)

    with running(models) as upstream_root, guarded(f"{upstream_root}/v1", api_key="sk-upstream") as url:
        assert [m.id for m in client(url).models.list()] == [MODEL]
    assert seen == ["Bearer sk-upstream"]


# -- construction ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"upstream": "127.0.0.1:8000/v1"}, "upstream"),
        ({"upstream": "ftp://models.example/v1"}, "upstream"),
        ({"upstream": "http://127.0.0.1:8000/v1", "mode": "refuse"}, "mode"),
        ({"upstream": "http://127.0.0.1:8000/v1", "timeout_s": 0}, "timeout_s"),
    ],
)
def test_bad_settings_fail_at_construction_naming_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=f"^{field}: "):
        guard_router(verifier(), **options)


# -- inside `evigraph serve` ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
def test_the_request_log_names_the_guards_agent_and_verdict(
    fake: ToolCallingServer, caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    fake.script([WRONG])
    app = FastAPI()
    app.include_router(guard_router(verifier(), upstream=fake.base_url, mode="annotate"))
    app.add_middleware(Gate, metrics=ServeMetrics(), token=None, max_concurrency=4, agent_of={})
    with caplog.at_level("INFO", logger="evigraph.serving.access"), running(app) as url:
        assert post(url, ask(stream=stream)).status_code == 200
    (line,) = [json.loads(r.getMessage()) for r in caplog.records if r.name == "evigraph.serving.access"]
    assert (line["endpoint"], line["agent"], line["status"], line["passed"]) == (
        "/v1/chat/completions",
        "seva",
        200,
        False,
    )
