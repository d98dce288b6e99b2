"""The guarded endpoint when things go wrong: the upstream down (502, the server keeps serving), failing, slower
than the deadline (504), a verifier that raises (the answer annotated, never a 500), malformed requests (400 naming
the field, nothing forwarded), and clients that disconnect -- mid-stream while the verdict is pending, or while the
upstream works -- leaving no task running on the server."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI

from evigraph.generators.scripted import ScriptedGenerator
from evigraph.serving.guard import guard_router
from tests.embed.hosts import WRONG
from tests.serving.test_guard import (
    MODEL,
    ToolCallingServer,
    ask,
    client,
    fake_fixture,  # noqa: F401 -- the fixture `fake`
    guarded,
    post,
    running,
    upstream_fixture,  # noqa: F401 -- the fixture `upstream`
    verifier,
)


def free_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


# -- the upstream ------------------------------------------------------------------------------------------------
def test_upstream_down_is_a_502_and_the_server_keeps_serving(fake: ToolCallingServer) -> None:
    fake.script([WRONG])
    app = FastAPI()
    app.include_router(guard_router(verifier(), upstream=f"http://127.0.0.1:{free_port()}/v1"), prefix="/down")
    app.include_router(guard_router(verifier(), upstream=fake.base_url, mode="annotate"))
    with running(app) as url:
        with pytest.raises(openai.InternalServerError) as raised:
            client(f"{url}/down").chat.completions.create(model=MODEL, messages=ask()["messages"])
        assert raised.value.status_code == 502
        assert raised.value.body == {
            "message": "the upstream model server could not be reached (ConnectError)",
            "type": "upstream_error",
            "param": None,
            "code": 502,
        }
        models = httpx.get(f"{url}/down/v1/models", timeout=10)
        assert models.status_code == 502 and models.json()["error"]["type"] == "upstream_error"
        assert post(url, ask()).json()["choices"][0]["message"]["content"] == WRONG  # still serving


def test_an_upstream_failure_is_a_502_and_its_client_errors_pass_through(fake: ToolCallingServer) -> None:
    fake.fail_next(500, "engine dead")
    with guarded(fake.base_url) as url:
        failed = post(url, ask())
        unknown = post(url, {**ask(), "model": "no-such-model"})
    assert failed.status_code == 502
    assert failed.json()["error"]["message"] == "the upstream model server failed (HTTP 500): engine dead"
    assert unknown.status_code == 404
    assert unknown.json()["error"] == {
        "message": "The model `no-such-model` does not exist.",
        "type": "NotFoundError",
        "param": None,
        "code": 404,
    }


def test_an_upstream_slower_than_the_deadline_is_a_504(fake: ToolCallingServer) -> None:
    release = threading.Event()
    fake.script(lambda messages: "late" if release.wait(30) else "never")
    try:
        with guarded(fake.base_url, timeout_s=0.5) as url:
            started = time.monotonic()
            response = post(url, ask())
            waited = time.monotonic() - started
            for stream in (False, True):
                assert post(url, ask(stream=stream)).status_code == 504
    finally:
        release.set()
    assert response.status_code == 504 and waited < 10  # the deadline, not the upstream, ended the wait
    assert response.json()["error"] == {
        "message": "the upstream model server did not answer within 0.5 s",
        "type": "upstream_timeout",
        "param": None,
        "code": 504,
    }


def test_a_repair_the_upstream_cannot_make_leaves_the_first_answer_annotated(fake: ToolCallingServer) -> None:
    fake.script([WRONG])  # nothing left for the repair call: the fake answers it with a 500
    with guarded(fake.base_url, "repair") as url:
        body = post(url, ask()).json()
    assert body["choices"][0]["message"]["content"] == WRONG
    assert body["evigraph"]["action"] == "annotate" and body["evigraph"]["verdict"] == "failed"
    assert body["evigraph"]["repair_error"].startswith("the upstream model server failed (HTTP 500)")


# -- the verifier ------------------------------------------------------------------------------------------------
def broken(_transcript: Any, _params: Any) -> str:
    raise RuntimeError("verifier backend exploded")


@pytest.mark.parametrize("stream", [False, True])
def test_a_verifier_that_raises_annotates_the_answer_with_the_error(fake: ToolCallingServer, stream: bool) -> None:
    fake.script([WRONG])
    with guarded(fake.base_url, "block", verifier=verifier(model=ScriptedGenerator(broken))) as url:
        response = post(url, ask(stream=stream))
    assert response.status_code == 200
    if stream:
        assert "1853" in response.text and '"verdict": "error"' in response.text
        return
    body = response.json()
    assert body["choices"][0]["message"]["content"] == WRONG
    assert (
        body["evigraph"]["action"] == "annotate"
        and "verifier backend exploded" in body["evigraph"]["verification"]["error"]
    )
    assert response.headers["X-Evigraph-Verdict"] == "error"


# -- the request -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "param", "message"),
    [
        (b"{not json", None, "the request body is not valid JSON"),
        (b"[1, 2]", None, "the request body must be a JSON object"),
        (b'{"model": "fake-model"}', "messages", "messages: Field required"),
        (b'{"model": "fake-model", "messages": [{"role": "robot", "content": "hi"}]}', "messages.0.role", None),
        (b'{"model": "fake-model", "n": 2, "messages": [{"role": "user", "content": "hi"}]}', "n", None),
    ],
)
def test_a_malformed_request_is_a_400_naming_the_field(
    fake: ToolCallingServer, content: bytes, param: str | None, message: str | None
) -> None:
    with guarded(fake.base_url) as url:
        response = httpx.post(f"{url}/v1/chat/completions", content=content, timeout=10)
    error = response.json()["error"]
    assert response.status_code == 400 and error["type"] == "invalid_request_error" and error["param"] == param
    assert error["message"] == message if message else error["message"].startswith(f"{param}: ")
    assert fake.requests == []  # nothing forwarded


# -- clients that leave ------------------------------------------------------------------------------------------
def raw_request(url: str, request: dict[str, Any]) -> socket.socket:
    """A client on a plain socket (it can leave at any byte)."""
    body = json.dumps(request).encode()
    connection = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=10)
    head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    connection.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return connection


class Tasks:
    """The asyncio tasks on the server's loop, counted by a route of the served app."""

    def __init__(self, app: FastAPI) -> None:
        @app.get("/tasks")
        async def count() -> int:
            return len(asyncio.all_tasks())

    def __call__(self, url: str) -> int:
        return httpx.get(f"{url}/tasks", timeout=10).json()


@pytest.fixture
def held() -> Iterator[tuple[ScriptedGenerator, threading.Event, threading.Event]]:
    """A verifier model that never answers: it says when it started and when it was cancelled."""
    started, cancelled = threading.Event(), threading.Event()

    async def hold(_transcript: Any, _params: Any) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    yield ScriptedGenerator(hold, name="held"), started, cancelled


def test_a_client_leaving_mid_stream_leaves_no_task_running(fake: ToolCallingServer, held: Any) -> None:
    model, started, cancelled = held
    fake.script(lambda messages: WRONG)
    app = FastAPI()
    tasks = Tasks(app)
    app.include_router(guard_router(verifier(model=model), upstream=fake.base_url, mode="block"))
    with running(app) as url:
        baseline = tasks(url)
        connection = raw_request(url, ask(stream=True))
        received = b""
        while b"chat.completion.chunk" not in received:  # the stream is open: headers and the role chunk
            received += connection.recv(4096)
        assert started.wait(10), "the verifier did not start"
        assert tasks(url) > baseline  # the check is running
        connection.close()
        assert cancelled.wait(10), "the pending check was not cancelled"
        wait_until(lambda: tasks(url) == baseline, "the server's tasks to return to the baseline")
    assert b"1853" not in received


def test_a_client_leaving_while_the_upstream_works_cancels_the_call(fake: ToolCallingServer) -> None:
    release = threading.Event()
    fake.script(lambda messages: WRONG if release.wait(30) else "never")
    app = FastAPI()
    tasks = Tasks(app)
    app.include_router(guard_router(verifier(), upstream=fake.base_url, mode="annotate"))
    try:
        with running(app) as url:
            baseline = tasks(url)
            connection = raw_request(url, ask())
            wait_until(lambda: len(fake.requests) == 1, "the upstream to receive the request")
            assert tasks(url) > baseline
            connection.close()
            wait_until(lambda: tasks(url) == baseline, "the server's tasks to return to the baseline")
    finally:
        release.set()
