"""RemoteSearch's retry policy: the sync and the async client retry the same failures, as often, with the same waits.

The server is an :class:`httpx.MockTransport` that plays a script of answers (status codes or transport errors);
the module's ``time.sleep`` / ``asyncio.sleep`` are replaced by recorders, so the backoff is checked without waiting.
"""

from __future__ import annotations

import asyncio
import types

import httpx
import pytest

from evigraph.errors import ToolError
from evigraph.tools import remote_search
from evigraph.tools.remote_search import RemoteSearch
from evigraph.trajectory import Evidence

HIT = {"document": {"id": "d1", "contents": '"Garden"\nRoses.'}, "score": 2.0}

Step = int | type[httpx.TransportError]
"""One scripted answer: an HTTP status (200 carries one hit per query) or a transport error to raise."""


def scripted(script: list[Step]) -> tuple[httpx.MockTransport, list[Step]]:
    """A transport answering each request with the next step of ``script``; the second item lists those played."""
    played: list[Step] = []

    def answer(request: httpx.Request) -> httpx.Response:
        step = script[len(played)]
        played.append(step)
        if not isinstance(step, int):
            raise step("scripted failure", request=request)
        if step == 200:
            return httpx.Response(200, json={"result": [[HIT]]})
        return httpx.Response(step, json={"detail": f"scripted {step}"})

    return httpx.MockTransport(answer), played


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[float]]:
    """The seconds each driver waited, by driver; no real waiting."""
    seen: dict[str, list[float]] = {"sync": [], "async": []}

    async def asleep(seconds: float) -> None:
        seen["async"].append(seconds)

    monkeypatch.setattr(remote_search, "time", types.SimpleNamespace(sleep=seen["sync"].append))
    monkeypatch.setattr(remote_search, "asyncio", types.SimpleNamespace(sleep=asleep))
    return seen


def run_both(script: list[Step], max_retries: int) -> dict[str, tuple[object, int]]:
    """Each driver's result (hits or the ToolError's message) and the number of requests it sent."""
    outcomes: dict[str, tuple[object, int]] = {}
    for driver in ("sync", "async"):
        transport, played = scripted(script)
        with RemoteSearch("http://retriever/retrieve", max_retries=max_retries, transport=transport) as remote:
            try:
                result: object = remote.search("roses") if driver == "sync" else asyncio.run(remote.asearch("roses"))
            except ToolError as error:
                result = str(error)
        outcomes[driver] = (result, len(played))
    return outcomes


@pytest.mark.parametrize(
    ("script", "max_retries", "requests", "expected"),
    [
        ([200], 2, 1, "hits"),
        ([503, httpx.ConnectError, 200], 2, 3, "hits"),
        ([httpx.ReadTimeout, 502, 200], 2, 3, "hits"),
        ([502, 504, 503, 200], 2, 3, "failed after 3 attempts: HTTP 503: scripted 503"),
        ([503, httpx.ConnectError], 1, 2, "failed after 2 attempts: ConnectError: scripted failure"),
        ([httpx.ReadTimeout], 0, 1, "failed after 1 attempts: ReadTimeout: scripted failure"),
        ([503, 404, 200], 2, 2, "refused the request: HTTP 404: scripted 404"),  # not retried
        ([500, 200], 2, 1, "refused the request: HTTP 500: scripted 500"),
    ],
)
def test_sync_and_async_retry_the_same_failures_the_same_number_of_times(
    waits: dict[str, list[float]], script: list[Step], max_retries: int, requests: int, expected: str
) -> None:
    outcomes = run_both(script, max_retries)
    assert outcomes["sync"] == outcomes["async"]
    result, sent = outcomes["sync"]
    assert sent == requests
    if expected == "hits":
        assert result == [
            Evidence(id="d1", text='"Garden"\nRoses.', title="Garden", score=2.0, source="http://retriever")
        ]
    else:
        assert result == f"retrieval server http://retriever {expected}"
    assert waits["sync"] == waits["async"] == [0.1 * 2**attempt for attempt in range(requests - 1)]
