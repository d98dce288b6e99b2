"""What the guarded OpenAI-compatible endpoint adds to a chat completion's latency, over the upstream alone.

Three processes, so no peer pays for another's CPU under one GIL: a scripted OpenAI-compatible upstream
(tests/generators/fake_openai_server.py, answering after U seconds, the shape of a model call), the guard
(``guard_router`` on a bare FastAPI app under uvicorn, SEVA as the verifier on a scripted model that answers after
L seconds, mode ``block``: every answer passes, so no repair call), and the client (httpx, async), which sends N
requests with at most C in flight and times each one from its send to its last byte. Peers measured in the same
run, in R interleaved rounds (each mode's latency is the median of its round means):

- ``upstream``: the same request straight to the upstream (the baseline);
- ``verifier``: the same verifier's :meth:`Verifier.averify` on the same turn, in the client's process (what any
  guard must wait for);
- ``guarded``: through the guard, ``stream: false``;
- ``guarded_stream``: through the guard, ``stream: true``, read to ``data: [DONE]``.

``added_ms`` is ``guarded − upstream`` (what a client waits longer: the verification plus the guard's own work);
``plumbing_ms`` is ``guarded − upstream − verifier`` (the guard's own work: parsing, the second HTTP hop, reading
the turn, the response), the same with ``_stream`` for streams.

    python benchmarks/serve_guard.py [--n 200] [--concurrency 16] [--upstream-latency 0.1] [--verifier-latency 0.05]

The last line is ``RESULT key=value ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import socket
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

# The scripted upstream is the test suite's fake vLLM server: the repository root must be importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODEL = "fake-model"
QUESTION = "When was Hog Island Light first lit?"
FACT = "Hog Island Light was first lit in 1854."
ANSWER = "Hog Island Light was first lit in 1854."
BODY = {"model": MODEL, "messages": [{"role": "user", "content": QUESTION}], "documents": [{"text": FACT}]}
SEVA_PASS = json.dumps(
    {
        "evidence_alignment": [{"claim_span": "1854", "source_span": FACT, "status": "match"}],
        "reasoning_chain": [
            {"claim_part": "1854", "source_evidence": FACT, "judgment": "supported", "explanation": "Same year."}
        ],
        "label": "Attributable",
        "confidence": 0.9,
        "error_type": None,
        "fix_suggestion": None,
    }
)


class GuardOverhead(BaseModel):
    """Mean latency per request of each mode (seconds) and the added latencies derived from them."""

    latency_s: dict[str, float]
    p99_s: dict[str, float]
    n: int
    concurrency: int
    upstream_latency_s: float
    verifier_latency_s: float

    def added_ms(self, mode: str) -> float:
        return 1000 * (self.latency_s[mode] - self.latency_s["upstream"])

    def plumbing_ms(self, mode: str) -> float:
        return self.added_ms(mode) - 1000 * self.latency_s["verifier"]


# -- the servers, each in its own process ---------------------------------------------------------------------------
def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    return sock


def _verifier(latency_s: float) -> Any:
    from evigraph.embed import Verifier
    from evigraph.generators.scripted import ScriptedGenerator

    return Verifier("seva", model=ScriptedGenerator(lambda _transcript, _params: SEVA_PASS, delay_s=latency_s))


def _serve_upstream(ports: Any, latency_s: float) -> None:
    from tests.generators import fake_openai_server
    from tests.generators.fake_openai_server import FakeOpenAIServer

    # socketserver's default backlog (5) drops C simultaneous connects: SYN retries would add a second to some.
    fake_openai_server._QuietServer.request_queue_size = 1024

    def reply(_messages: list[dict[str, Any]]) -> str:
        time.sleep(latency_s)  # one thread per request: a model call's latency, no CPU
        return ANSWER

    server = FakeOpenAIServer(MODEL)
    server.script(reply)
    server.start()
    ports.put(server.port)
    threading.Event().wait()  # until the parent terminates this process


def _serve_guard(ports: Any, upstream: str, latency_s: float) -> None:
    import uvicorn
    from fastapi import FastAPI

    from evigraph.serving.guard import guard_router

    app = FastAPI()
    app.include_router(guard_router(_verifier(latency_s), upstream=upstream, mode="block"))
    sock = _listening()
    ports.put(sock.getsockname()[1])
    uvicorn.Server(uvicorn.Config(app, log_level="warning", backlog=1024)).run(sockets=[sock])


# -- the client -----------------------------------------------------------------------------------------------------
async def _measure(one: Callable[[], Awaitable[None]], n: int, concurrency: int) -> list[float]:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def timed() -> None:
        async with gate:
            started = time.perf_counter()
            await one()
            latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(timed() for _ in range(n)))
    return latencies


def _modes(client: httpx.AsyncClient, upstream: str, guard: str, verifier_latency_s: float) -> dict[str, Any]:
    from evigraph.conversation import Conversation
    from evigraph.embed.turn import averify_conversation, conversation_reader

    verifier = _verifier(verifier_latency_s)
    reader = conversation_reader("seva")
    turn = Conversation(question=QUESTION, answer=ANSWER, documents=[FACT])

    async def direct() -> None:
        response = await client.post(f"{upstream}/chat/completions", json=BODY)
        assert response.json()["choices"][0]["message"]["content"] == ANSWER

    async def verify() -> None:
        assert (await averify_conversation(verifier, reader, turn)).passed

    async def guarded() -> None:
        response = await client.post(f"{guard}/v1/chat/completions", json=BODY)
        assert response.headers["x-evigraph-verdict"] == "passed", response.text

    async def guarded_stream() -> None:
        async with client.stream("POST", f"{guard}/v1/chat/completions", json={**BODY, "stream": True}) as response:
            lines = [line async for line in response.aiter_lines() if line]
        assert lines[-1] == "data: [DONE]" and '"verdict": "passed"' in lines[-2], lines[-2:]

    return {"upstream": direct, "verifier": verify, "guarded": guarded, "guarded_stream": guarded_stream}


def guard_overhead(
    *,
    n: int = 200,
    concurrency: int = 16,
    upstream_latency_s: float = 0.1,
    verifier_latency_s: float = 0.05,
    rounds: int = 3,
) -> GuardOverhead:
    """Measure the guarded endpoint against the upstream alone (the module docstring); starts and stops both
    servers in child processes."""
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    ports = context.Queue()
    upstream_process = context.Process(target=_serve_upstream, args=(ports, upstream_latency_s), daemon=True)
    upstream_process.start()
    upstream = f"http://127.0.0.1:{ports.get(timeout=120)}/v1"
    guard_process = context.Process(target=_serve_guard, args=(ports, upstream, verifier_latency_s), daemon=True)
    guard_process.start()
    guard = f"http://127.0.0.1:{ports.get(timeout=120)}"
    try:
        found = asyncio.run(_run(upstream, guard, n, concurrency, verifier_latency_s, rounds))
    finally:
        for process in (guard_process, upstream_process):
            process.terminate()
            process.join(10)
    return GuardOverhead(
        latency_s={mode: statistics.median(statistics.fmean(r) for r in runs) for mode, runs in found.items()},
        p99_s={mode: statistics.median(_p99(r) for r in runs) for mode, runs in found.items()},
        n=n,
        concurrency=concurrency,
        upstream_latency_s=upstream_latency_s,
        verifier_latency_s=verifier_latency_s,
    )


async def _run(
    upstream: str, guard: str, n: int, concurrency: int, verifier_latency_s: float, rounds: int
) -> dict[str, list[list[float]]]:
    limits = httpx.Limits(max_connections=2 * concurrency, max_keepalive_connections=2 * concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:  # room to keep both servers' connections
        deadline = time.monotonic() + 60
        while True:  # the guard's uvicorn may still be starting
            try:
                await client.get(f"{guard}/docs")
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the guard did not start"
                await asyncio.sleep(0.1)
        modes = _modes(client, upstream, guard, verifier_latency_s)
        for one in modes.values():  # warm-up: connections, first-call caches
            await _measure(one, concurrency, concurrency)
        found: dict[str, list[list[float]]] = {mode: [] for mode in modes}
        names = list(modes)
        for round_ in range(rounds):
            # Rotate the order each round, so drift on a shared machine does not favour one mode.
            for name in itertools.islice(itertools.cycle(names), round_, round_ + len(names)):
                found[name].append(await _measure(modes[name], n, concurrency))
    return found


def _p99(latencies: list[float]) -> float:
    return statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else latencies[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="requests per mode and round")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight at a time")
    parser.add_argument("--upstream-latency", type=float, default=0.1, help="seconds the upstream takes (U)")
    parser.add_argument("--verifier-latency", type=float, default=0.05, help="seconds per verifier model call (L)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median of round means)")
    args = parser.parse_args()
    found = guard_overhead(
        n=args.n,
        concurrency=args.concurrency,
        upstream_latency_s=args.upstream_latency,
        verifier_latency_s=args.verifier_latency,
        rounds=args.rounds,
    )
    for mode, latency in found.latency_s.items():
        extra = ""
        if mode.startswith("guarded"):
            extra = f"  added {found.added_ms(mode):7.2f} ms  plumbing {found.plumbing_ms(mode):7.2f} ms"
        print(f"{mode:15s} mean {1000 * latency:8.2f} ms  p99 {1000 * found.p99_s[mode]:8.2f} ms{extra}")
    base = found.latency_s["upstream"]
    print(
        f"RESULT added_ms={found.added_ms('guarded'):.2f} added_stream_ms={found.added_ms('guarded_stream'):.2f} "
        f"plumbing_ms={found.plumbing_ms('guarded'):.2f} plumbing_stream_ms={found.plumbing_ms('guarded_stream'):.2f} "
        f"ratio={found.latency_s['guarded'] / base:.3f} stream_ratio={found.latency_s['guarded_stream'] / base:.3f} "
        f"verifier_ms={1000 * found.latency_s['verifier']:.2f} upstream_ms={1000 * base:.2f} n={found.n} "
        f"concurrency={found.concurrency} upstream_latency_s={found.upstream_latency_s} "
        f"verifier_latency_s={found.verifier_latency_s}"
    )


if __name__ == "__main__":
    main()
