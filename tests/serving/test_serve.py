"""``evigraph serve``'s app over real HTTP (uvicorn on a free loopback port, in a thread or on the test's own loop):
verdicts equal to the in-process verifier's, the batch form, the agent list and OpenAPI, and the faults -- bad
input (422 naming the field), a body over the limit (413), a missing or wrong token (401), over the concurrency
limit (429 with Retry-After), a model slower than the deadline (a verdict with ``error``, no task left) -- each
checked to run nothing it should not (model calls counted), and ``/metrics`` and the access log against what the
test itself counted.

The verifiers are tests/embed/hosts.py's scripted ones (an answer passes when every year it names is in the
source: :data:`RIGHT` passes, :data:`WRONG` fails).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from evigraph.embed.verifier import Verifier
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.serving.app import create_app
from evigraph.serving.settings import ServeSettings
from evigraph.trajectory import Segment
from tests.embed.hosts import AGENTS, FACT, RIGHT, WRONG, case, inputs_for, scripted
from tests.servers import running, running_here

TOKEN = "s3cret-token-value"


# -- servers and models -------------------------------------------------------------------------------------------
def serve(verifiers: dict[str, Verifier], token: str | None = None, **settings: Any) -> Any:
    return running(create_app(ServeSettings(**settings), verifiers, token=token))


def seva(model: ScriptedGenerator | None = None) -> dict[str, Verifier]:
    return {"seva": Verifier("seva", model=model or scripted("seva"))}


def seva_inputs(answer: str) -> dict[str, Any]:
    return inputs_for("seva", answer)


class Gate:
    """A scripted SEVA model whose calls wait until the test opens the gate (a threading event: the server runs in
    another thread); counts the calls that entered and those cancelled while waiting."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = 0
        self.cancelled = 0
        self._changed = threading.Condition()
        self._judge = scripted("seva")
        self.model = ScriptedGenerator(self._reply)

    async def _reply(self, transcript: list[Segment], params: Any) -> str:
        with self._changed:
            self.entered += 1
            self._changed.notify_all()
        try:
            while not self.open.is_set():
                await asyncio.sleep(0.005)
        except asyncio.CancelledError:
            with self._changed:
                self.cancelled += 1
                self._changed.notify_all()
            raise
        return (await self._judge.continue_transcript(transcript, params)).text

    def wait_for(self, condition: Any, timeout: float = 20) -> None:
        with self._changed:
            assert self._changed.wait_for(condition, timeout), "the model was not reached in time"


def metric(text: str, name: str, **labels: str) -> float:
    """The value of sample ``name`` with ``labels`` in a Prometheus text exposition (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


# -- verdicts -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("agent", AGENTS)
def test_each_agent_answers_what_its_verifier_gives_in_process(agent: str) -> None:
    served, alone = case(agent), case(agent)
    verifiers = {agent: Verifier(agent, model=served.generator_pass, **served.extra)}
    with serve(verifiers) as url:
        passing = httpx.post(f"{url}/v1/verify/{agent}", json=served.inputs_pass, timeout=30)
        failing = httpx.post(f"{url}/v1/verify/{agent}", json=served.inputs_fail, timeout=30)
    expected = Verifier(agent, model=alone.generator_fail, **alone.extra).verify(alone.inputs_fail)
    assert passing.status_code == failing.status_code == 200
    assert passing.json()["passed"] is True and failing.json()["passed"] is False
    assert failing.json() == expected.model_dump(mode="json")


def test_a_batch_gives_one_verdict_per_input_in_order() -> None:
    model = scripted("seva")
    with serve(seva(model)) as url:
        inputs = [seva_inputs(RIGHT), seva_inputs(WRONG), seva_inputs(RIGHT)]
        response = httpx.post(f"{url}/v1/verify/seva/batch", json={"inputs": inputs}, timeout=30)
    assert response.status_code == 200
    assert [v["passed"] for v in response.json()["verifications"]] == [True, False, True]
    assert len(model.calls) == 3  # SEVA: one model call per input


def test_agents_and_openapi_list_each_served_agent_with_its_input_schema() -> None:
    verifiers = {name: Verifier(name, model=scripted(name)) for name in ("seva", "rag-zeval")}
    with serve(verifiers) as url:
        listed = httpx.get(f"{url}/v1/agents").json()["agents"]
        openapi = httpx.get(f"{url}/openapi.json").json()
    assert [a["name"] for a in listed] == ["seva", "rag-zeval"]
    seva_schema = listed[0]["input_schema"]
    # SevaInputs: claim and source required; id and gold optional; nothing else accepted.
    assert sorted(seva_schema["required"]) == ["claim", "source"]
    assert set(seva_schema["properties"]) == {"id", "claim", "source", "gold"}
    assert seva_schema["additionalProperties"] is False
    assert listed[1]["verify"] == "/v1/verify/rag-zeval" and listed[1]["batch"] == "/v1/verify/rag-zeval/batch"
    assert {"/v1/verify/seva", "/v1/verify/seva/batch", "/v1/agents", "/healthz", "/readyz"} <= set(openapi["paths"])
    body = openapi["paths"]["/v1/verify/seva"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/SevaRequest"}


# -- faults -------------------------------------------------------------------------------------------------------
def raw(value: Any) -> bytes:
    return json.dumps(value).encode()


BAD_INPUTS = [
    # (path suffix, raw body, where FastAPI or the verifier's own check points, error type)
    ("", b'{"claim": "x", ', ["body", 15], "json_invalid"),  # malformed JSON: cut off after the comma
    ("", raw({"claim": WRONG}), ["body", "source"], "missing"),
    ("", raw({"claim": 1853, "source": FACT}), ["body", "claim"], "string_type"),
    ("", raw({"claim": WRONG, "source": FACT, "sources": FACT}), ["body", "sources"], "extra_forbidden"),
    ("", raw({"claim": "   ", "source": FACT}), ["body", "claim"], "value_error"),  # blank text
    ("", b'["not", "an", "object"]', ["body"], "model_attributes_type"),
    ("/batch", raw({"inputs": [seva_inputs(RIGHT), {"claim": "", "source": FACT}]}), ["body", "inputs", 1, "claim"],
     "value_error"),
    ("/batch", raw({"inputs": [seva_inputs(RIGHT)] * 3}), ["body", "inputs"], "too_long"),
    ("/batch", raw({"input": [seva_inputs(RIGHT)]}), ["body", "inputs"], "missing"),
]  # fmt: skip


def test_bad_input_is_422_naming_the_field_and_runs_nothing() -> None:
    model = scripted("seva")
    with serve(seva(model), max_batch=2) as url:
        for suffix, body, where, kind in BAD_INPUTS:
            response = httpx.post(
                f"{url}/v1/verify/seva{suffix}", content=body, headers={"content-type": "application/json"}
            )
            assert response.status_code == 422, body
            assert any(d["loc"] == where and d["type"] == kind for d in response.json()["detail"]), response.json()
        unknown = httpx.post(f"{url}/v1/verify/no-such-agent", json=seva_inputs(RIGHT))
    assert unknown.status_code == 404 and "served: seva" in unknown.json()["detail"]
    assert model.calls == []


def test_a_body_over_the_limit_is_413_declared_or_streamed() -> None:
    model = scripted("seva")
    limit = 2000
    fits = seva_inputs(RIGHT) | {"id": "x" * 1500}
    assert len(json.dumps(fits).encode()) <= limit
    too_big = seva_inputs(RIGHT) | {"id": "x" * 2500}
    raw = json.dumps(too_big).encode()
    with serve(seva(model), max_body_bytes=limit) as url:
        declared = httpx.post(f"{url}/v1/verify/seva", json=too_big)
        # A generator body goes out chunked, with no Content-Length: the limit holds while it is read.
        streamed = httpx.post(
            f"{url}/v1/verify/seva",
            content=iter([raw[:1000], raw[1000:]]),
            headers={"content-type": "application/json"},
        )
        fine = httpx.post(f"{url}/v1/verify/seva", json=fits, timeout=30)
    assert "content-length" not in streamed.request.headers
    assert declared.status_code == streamed.status_code == 413
    assert fine.status_code == 200 and fine.json()["passed"] is True
    assert len(model.calls) == 1  # only the body that fits ran


def test_a_missing_or_wrong_token_is_401_and_runs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="evigraph.serving.access")
    model = scripted("seva")
    with serve(seva(model), token=TOKEN) as url:
        verify = f"{url}/v1/verify/seva"
        refused = [
            httpx.post(verify, json=seva_inputs(RIGHT)),
            httpx.post(verify, json=seva_inputs(RIGHT), headers={"Authorization": "Bearer wrong-token"}),
            httpx.post(verify, json=seva_inputs(RIGHT), headers={"Authorization": f"Basic {TOKEN}"}),
            httpx.post(verify, json=seva_inputs(RIGHT), headers={"Authorization": f"Bearer {TOKEN}x"}),
            httpx.get(f"{url}/metrics"),
            httpx.get(f"{url}/v1/agents"),
        ]
        assert model.calls == []
        probes = [httpx.get(f"{url}/healthz"), httpx.get(f"{url}/readyz")]
        accepted = httpx.post(verify, json=seva_inputs(RIGHT), headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert [r.status_code for r in refused] == [401] * 6
    assert all(r.headers["www-authenticate"] == "Bearer" for r in refused)
    assert [r.status_code for r in probes] == [200, 200]
    assert accepted.status_code == 200 and accepted.json()["passed"] is True
    assert len(model.calls) == 1
    assert not any(TOKEN in record.getMessage() for record in caplog.records)


def test_over_the_concurrency_limit_is_429_with_retry_after() -> None:
    gate = Gate()
    with serve(seva(gate.model), max_concurrency=2) as url, ThreadPoolExecutor(2) as pool:
        verify = f"{url}/v1/verify/seva"
        held = [pool.submit(httpx.post, verify, json=seva_inputs(RIGHT), timeout=30) for _ in range(2)]
        gate.wait_for(lambda: gate.entered == 2)
        over = httpx.post(verify, json=seva_inputs(RIGHT))
        probes = [httpx.get(f"{url}/healthz"), httpx.get(f"{url}/readyz"), httpx.get(f"{url}/metrics")]
        gate.open.set()
        answered = [future.result() for future in held]
        after = httpx.post(verify, json=seva_inputs(WRONG), timeout=30)
    assert over.status_code == 429 and over.headers["retry-after"] == "1"
    assert "limit is 2" in over.json()["detail"]
    assert [r.status_code for r in probes] == [200, 200, 200]
    assert [r.status_code for r in answered] == [200, 200] and all(r.json()["passed"] for r in answered)
    assert after.status_code == 200 and after.json()["passed"] is False  # the slots came back
    assert gate.entered == 3  # the refused request never reached the model


STUCK = "Hog Island Light was first lit in 1999."


def stuck_on(year_text: str, cancelled: list[str]) -> ScriptedGenerator:
    """SEVA's scripted model, except that a claim containing ``year_text`` never gets an answer (recorded in
    ``cancelled`` when its wait is cancelled)."""
    judge = scripted("seva")

    async def reply(transcript: list[Segment], params: Any) -> str:
        if year_text in transcript[-1].text:
            try:
                await asyncio.Event().wait()  # never set
            except asyncio.CancelledError:
                cancelled.append(year_text)
                raise
        return (await judge.continue_transcript(transcript, params)).text

    return ScriptedGenerator(reply)


async def test_past_the_deadline_the_answer_is_a_verdict_with_error_and_no_task_is_left() -> None:
    cancelled: list[str] = []
    app = create_app(ServeSettings(deadline_s=0.5), seva(stuck_on("1999", cancelled)))
    async with running_here(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        warm = await client.post("/v1/verify/seva", json=seva_inputs(RIGHT))
        assert warm.json()["passed"] is True
        before = {t for t in asyncio.all_tasks() if not t.done()}
        late = await client.post("/v1/verify/seva", json=seva_inputs(STUCK))
        batch = await client.post(
            "/v1/verify/seva/batch", json={"inputs": [seva_inputs(RIGHT), seva_inputs(STUCK), seva_inputs(WRONG)]}
        )
        async with asyncio.timeout(10):  # the cancelled runs unwind; nothing they started may stay behind
            while len(cancelled) < 2 or {t for t in asyncio.all_tasks() if not t.done()} - before:
                await asyncio.sleep(0.01)
        metrics = (await client.get("/metrics")).text
    assert late.status_code == 200
    assert late.json()["passed"] is False and late.json()["error"] == "DeadlineExceeded: no verdict within 0.5 s"
    verdicts = batch.json()["verifications"]
    assert [v["passed"] for v in verdicts] == [True, False, False]
    assert [v["error"] for v in verdicts] == [None, "DeadlineExceeded: no verdict within 0.5 s", None]
    assert cancelled == ["1999", "1999"]
    assert metric(metrics, "evigraph_serve_verdicts_total", agent="seva", outcome="error") == 2


async def test_a_client_that_leaves_cancels_its_verification_and_leaves_no_task() -> None:
    """Nobody reads the verdict of a client that hung up: its run is cancelled at once, not after the deadline."""
    cancelled: list[str] = []
    app = create_app(ServeSettings(deadline_s=60), seva(stuck_on("1999", cancelled)))
    async with running_here(app) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.post("/v1/verify/seva", json=seva_inputs(RIGHT))).json()["passed"] is True
        before = {t for t in asyncio.all_tasks() if not t.done()}
        for path, body in (
            ("/v1/verify/seva", seva_inputs(STUCK)),
            ("/v1/verify/seva/batch", {"inputs": [seva_inputs(RIGHT), seva_inputs(STUCK)]}),
        ):
            async with httpx.AsyncClient(base_url=url, timeout=0.5) as leaving:
                with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
                    await leaving.post(path, json=body)
        async with asyncio.timeout(10):  # far below the 60 s deadline
            while len(cancelled) < 2 or {t for t in asyncio.all_tasks() if not t.done()} - before:
                await asyncio.sleep(0.01)
    assert cancelled == ["1999", "1999"]


def test_readyz_turns_503_while_draining() -> None:
    app = create_app(ServeSettings(), seva())
    with running(app) as url:
        ready = httpx.get(f"{url}/readyz")
        app.state.draining = True
        draining = httpx.get(f"{url}/readyz")
    assert ready.status_code == 200 and ready.json() == {"ready": True, "draining": False, "agents": ["seva"]}
    assert draining.status_code == 503 and draining.json()["ready"] is False


# -- metrics and logs ---------------------------------------------------------------------------------------------
_PIECE = re.compile(r"\s*\S+")


class WordTokenizer:
    """Each whitespace-led word one token, so the scripted model reports token ids and the run counts them."""

    eos_token = None

    def __init__(self) -> None:
        self.pieces: list[str] = []

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids = []
        for piece in _PIECE.findall(text):
            if piece not in self.pieces:
                self.pieces.append(piece)
            ids.append(self.pieces.index(piece))
        return ids

    def decode(self, token_ids: list[int], **kwargs: Any) -> str:
        return "".join(self.pieces[i] for i in token_ids)

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_metrics_count_what_happened(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="evigraph.serving.access")
    judge = scripted("seva")
    replies: list[str] = []

    async def reply(transcript: list[Segment], params: Any) -> str:
        text = (await judge.continue_transcript(transcript, params)).text
        replies.append(text)
        return text

    model = ScriptedGenerator(reply, tokenizer=WordTokenizer())
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serve(seva(model), token=TOKEN) as url:
        verify = f"{url}/v1/verify/seva"
        singles = [httpx.post(verify, json=seva_inputs(a), headers=auth, timeout=30) for a in (RIGHT, RIGHT, WRONG)]
        batch = httpx.post(
            f"{verify}/batch", json={"inputs": [seva_inputs(RIGHT), seva_inputs(WRONG)]}, headers=auth, timeout=30
        )
        invalid = httpx.post(verify, json={"claim": WRONG}, headers=auth)
        unauthorized = httpx.post(verify, json=seva_inputs(RIGHT))
        text = httpx.get(f"{url}/metrics", headers=auth).text
    assert [r.status_code for r in (*singles, batch, invalid, unauthorized)] == [200, 200, 200, 200, 422, 401]

    def requests(endpoint: str, status: str, agent: str = "seva") -> float:
        return metric(text, "evigraph_serve_requests_total", endpoint=endpoint, agent=agent, status=status)

    assert requests("/v1/verify/seva", "200") == 3
    assert requests("/v1/verify/seva/batch", "200") == 1
    assert requests("/v1/verify/seva", "422") == 1
    assert requests("/v1/verify/seva", "401") == 0  # refused before any route: no route's label
    assert requests("unrouted", "401", agent="seva") == 1
    assert metric(text, "evigraph_serve_request_seconds_count", endpoint="/v1/verify/seva", agent="seva") == 4
    assert metric(text, "evigraph_serve_verdicts_total", agent="seva", outcome="passed") == 3
    assert metric(text, "evigraph_serve_verdicts_total", agent="seva", outcome="failed") == 2
    assert metric(text, "evigraph_serve_verdicts_total", agent="seva", outcome="error") == 0
    assert len(replies) == 5
    assert metric(text, "evigraph_serve_model_tokens_total", agent="seva") == sum(len(r.split()) for r in replies)
    assert metric(text, "evigraph_serve_requests_in_flight") == 0

    lines = [json.loads(record.getMessage()) for record in caplog.records if record.name == "evigraph.serving.access"]
    verifications = [line for line in lines if line["endpoint"].startswith("/v1/verify/seva")]
    assert [(line["status"], line["passed"]) for line in verifications] == [
        (200, True), (200, True), (200, False), (200, 1), (422, None)
    ]  # fmt: skip
    assert verifications[3]["verifications"] == 2
    assert all(TOKEN not in json.dumps(line) and "Hog Island" not in json.dumps(line) for line in lines)


def test_the_request_id_is_echoed_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="evigraph.serving.access")
    with serve(seva()) as url:
        given = httpx.post(f"{url}/v1/verify/seva", json=seva_inputs(RIGHT), headers={"X-Request-ID": "host-42"})
        forged = httpx.get(f"{url}/healthz", headers={"X-Request-ID": 'x"} {"status": 200'})
        none = httpx.get(f"{url}/healthz")
    assert given.headers["x-request-id"] == "host-42"
    assert re.fullmatch(r"[0-9a-f]{32}", forged.headers["x-request-id"])  # not a token: replaced
    assert re.fullmatch(r"[0-9a-f]{32}", none.headers["x-request-id"])
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "evigraph.serving.access"]
    assert [line["request_id"] for line in lines] == [
        "host-42", forged.headers["x-request-id"], none.headers["x-request-id"]
    ]  # fmt: skip
    assert lines[0]["agent"] == "seva" and lines[0]["passed"] is True and lines[0]["method"] == "POST"


def test_a_second_router_sits_behind_the_same_gate() -> None:
    guard = pytest.importorskip("evigraph.serving.guard", reason="the guarded endpoint is not in this tree yet")
    from tests.generators.fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer("fake-model") as upstream:
        upstream.script(lambda messages: RIGHT)
        router = guard.guard_router(Verifier("seva", model=scripted("seva")), upstream=upstream.base_url)
        app = create_app(ServeSettings(max_body_bytes=4000), seva(), routers=[router], token=TOKEN)
        ask = {
            "model": "fake-model",
            "messages": [{"role": "user", "content": "When was Hog Island Light first lit?"}],
            "documents": [{"title": "Hog Island Light", "text": FACT}],
        }
        with running(app) as url:
            chat = f"{url}/v1/chat/completions"
            refused = httpx.post(chat, json=ask)
            too_big = httpx.post(chat, json=ask | {"user": "x" * 5000}, headers={"Authorization": f"Bearer {TOKEN}"})
            assert upstream.bodies == []  # nothing reached the upstream
            answered = httpx.post(chat, json=ask, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
            text = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    assert refused.status_code == 401 and too_big.status_code == 413
    assert answered.status_code == 200 and answered.json()["evigraph"]["verification"]["passed"] is True
    assert answered.headers["x-request-id"]
    assert metric(text, "evigraph_serve_requests_total", endpoint="/v1/chat/completions", status="200") == 1
    assert metric(text, "evigraph_serve_verdicts_total", agent="seva", outcome="passed") == 1  # the guard's verdict
