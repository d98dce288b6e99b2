"""What serving a verifier over HTTP adds to each verification, over the same verifications run in-process.

C clients (default 64) each send one SEVA verification after another, for S seconds, to ``evigraph serve`` (a
subprocess on a free loopback port, its access log on) whose model is scripted to answer after L = 0.2 s
(``scripted:FILE`` with ``delay_s``: the shape of a batched model server, latency without CPU). The peer runs the
same verifications in this process, C at a time, through :meth:`Verifier.averify` on the same scripted model, for
the same S seconds. Each verification is timed from its call to its verdict; every verdict must come back as
scripted (passed), anything else -- a non-200 status, a refused or broken connection, a failed verdict -- counts as
an error. The two run in R interleaved rounds of S/R seconds each (the order alternating), so load from other jobs
on a shared machine falls on both.

``overhead_pct`` = 100 × (the median over rounds of mean latency over HTTP / mean latency in-process − 1); with a
closed loop of C clients it is also the throughput lost to HTTP. CPU per verification is printed for both (the
server's own process over HTTP). The clients are a lean keep-alive HTTP/1.1 loop in this process, so that what is
measured is the server, not a client library.

Then the guarded OpenAI-compatible endpoint: what it adds over its upstream alone, plain and streaming, measured
by ``serve_guard.guard_overhead`` (three processes; see ``benchmarks/serve_guard.py``) with its defaults, reported
as ``guard_added_ms`` / ``guard_added_stream_ms`` and the guard's own share of them (``guard_plumbing_*``).

    python benchmarks/serve_load.py [--seconds 60] [--clients 64] [--latency 0.2] [--rounds 3] [--no-guard]

Goal (issue 31): 0 errors, overhead ≤ 5 %.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import operator
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lean_http import Connection, uvicorn_subprocess  # a sibling script (this folder is on sys.path)

from evigraph.embed.verifier import Verifier
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.machine import tune_gc_for_long_run

SOURCE = "Hog Island Light was a lighthouse in Virginia. It was first lit in 1854."
INPUTS = {"claim": "Hog Island Light was first lit in 1854.", "source": SOURCE}
REPLY = json.dumps(
    {
        "evidence_alignment": [{"claim_span": "1854", "source_span": "It was first lit in 1854.", "status": "match"}],
        "reasoning_chain": [
            {
                "claim_part": "first lit in 1854",
                "source_evidence": "It was first lit in 1854.",
                "judgment": "supported",
                "explanation": "The source gives the same year.",
            }
        ],
        "label": "Attributable",
        "confidence": 0.9,
        "error_type": None,
        "fix_suggestion": None,
    }
)
"""SEVA's reply to every call: a passing verdict."""


@dataclass
class Load:
    """What one load run saw."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_s: float | None = None
    """CPU seconds the verifying process spent (the server's, over HTTP), where it could be read."""

    @property
    def requests(self) -> int:
        return len(self.latencies) + len(self.errors)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.latencies)

    @property
    def cpu_ms(self) -> float:
        return float("nan") if self.cpu_s is None else 1000 * self.cpu_s / self.requests

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1)]

    def __add__(self, other: Load) -> Load:
        cpu = None if self.cpu_s is None or other.cpu_s is None else self.cpu_s + other.cpu_s
        return Load(self.latencies + other.latencies, self.errors + other.errors, self.seconds + other.seconds, cpu)

    def line(self, name: str) -> str:
        return (
            f"{name:10s} requests {self.requests:6d}  errors {len(self.errors):3d}  mean {1000 * self.mean:7.1f} ms  "
            f"p50 {1000 * self.percentile(50):7.1f} ms  p99 {1000 * self.percentile(99):7.1f} ms  "
            f"{self.requests / self.seconds:6.1f} req/s  cpu {self.cpu_ms:5.2f} ms/req"
        )


async def closed_loop(
    one: Callable[[], Awaitable[str | None]], *, clients: int, seconds: float, cpu: Callable[[], float | None]
) -> Load:
    """``clients`` workers calling ``one`` back to back for ``seconds``; ``one`` returns an error or ``None``.
    ``cpu`` reads the CPU seconds of the process that verifies."""
    load = Load()
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < stop:
            started = time.perf_counter()
            try:
                error = await one()
            except Exception as failure:
                error = f"{type(failure).__name__}: {failure}"
            if error is None:
                load.latencies.append(time.perf_counter() - started)
            else:
                load.errors.append(error)

    started, cpu_before = time.perf_counter(), cpu()
    await asyncio.gather(*(worker() for _ in range(clients)))
    load.seconds, cpu_after = time.perf_counter() - started, cpu()
    load.cpu_s = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return load


def in_process_peer(latency: float) -> Callable[[], Awaitable[str | None]]:
    """One verification through ``Verifier.averify`` on the scripted model (the peer)."""
    verifier = Verifier("seva", model=ScriptedGenerator(lambda _t, _p: REPLY, delay_s=latency))

    async def one() -> str | None:
        verdict = await verifier.averify(INPUTS)
        return None if verdict.passed else f"verdict: {verdict.error or verdict.label}"

    return one


@contextmanager
def server(*, clients: int, seconds: float, latency: float) -> Iterator[tuple[str, int]]:
    """``evigraph serve`` in a subprocess, its model scripted with enough replies for the run; yields its URL and
    process id."""
    with tempfile.TemporaryDirectory() as folder:
        replies = Path(folder) / "replies.json"
        needed = math.ceil(clients * (seconds + 10) / latency * 1.2)
        replies.write_text(json.dumps({"replies": [REPLY] * needed, "delay_s": latency}), encoding="utf-8")
        argv = [sys.executable, "-m", "evigraph.cli.app", "serve", "--agent", "seva", "--model", f"scripted:{replies}",
                "--port", "0", "--max-concurrency", str(clients)]  # fmt: skip
        with uvicorn_subprocess(argv, name="evigraph serve") as (port, pid):
            yield f"http://127.0.0.1:{port}", pid


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of process ``pid`` so far (``None`` without Linux's ``/proc``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http_peer(url: str, clients: int) -> tuple[Callable[[], Awaitable[str | None]], list[Connection]]:
    """One verification posted to ``/v1/verify/seva`` on a free connection of ``clients`` kept alive."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connections = [Connection(host, int(port)) for _ in range(clients)]
    idle = list(connections)
    body = json.dumps(INPUTS).encode()

    async def one() -> str | None:
        connection = idle.pop()
        try:
            status, payload = await connection.post("/v1/verify/seva", body)
        finally:
            idle.append(connection)
        if status != 200:
            return f"HTTP {status}"
        verdict = json.loads(payload)
        return None if verdict["passed"] else f"verdict: {verdict['error'] or verdict['label']}"

    return one, connections


async def verify_load(*, clients: int, seconds: float, latency: float, rounds: int) -> list[tuple[Load, Load]]:
    """``(over HTTP, in-process)`` for ``POST /v1/verify/seva``, per round."""
    found: list[tuple[Load, Load]] = []
    with server(clients=clients, seconds=seconds, latency=latency) as (url, pid):
        http, connections = http_peer(url, clients)
        local = in_process_peer(latency)

        async def over_http(seconds: float) -> Load:
            for connection in connections:  # fresh ones: uvicorn closes connections idle for 5 s
                connection.close()
            return await closed_loop(http, clients=clients, seconds=seconds, cpu=lambda: cpu_seconds(pid))

        async def in_process(seconds: float) -> Load:
            return await closed_loop(local, clients=clients, seconds=seconds, cpu=time.process_time)

        measures = {"http": over_http, "local": in_process}
        try:
            for measure in measures.values():  # warm-up: connections, imports, first-call caches
                await measure(min(2.0, seconds))
            for round_ in range(rounds):
                order = list(measures) if round_ % 2 == 0 else list(reversed(measures))
                loads = {name: await measures[name](seconds / rounds) for name in order}
                found.append((loads["http"], loads["local"]))
        finally:
            for connection in connections:
                connection.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds of load per peer (S)")
    parser.add_argument("--clients", type=int, default=64, help="concurrent clients (C)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the scripted model takes per call (L)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (R)")
    parser.add_argument("--no-guard", action="store_true", help="skip the guarded endpoint's measurement")
    args = parser.parse_args()
    tune_gc_for_long_run()

    rounds = asyncio.run(
        verify_load(clients=args.clients, seconds=args.seconds, latency=args.latency, rounds=args.rounds)
    )
    http = functools.reduce(operator.add, (h for h, _ in rounds))
    local = functools.reduce(operator.add, (loc for _, loc in rounds))
    print(http.line("http"))
    print(local.line("in-process"))
    print("rounds (mean latency, ms): " + "  ".join(f"{1000 * h.mean:.1f}/{1000 * loc.mean:.1f}" for h, loc in rounds))
    for error in dict.fromkeys(http.errors + local.errors):
        print(f"error: {error}")
    overhead_pct = 100 * (statistics.median(h.mean / loc.mean for h, loc in rounds) - 1)
    guard = ""
    if not args.no_guard:
        from serve_guard import guard_overhead  # the sibling benchmark (this script's folder is on sys.path)

        found = guard_overhead(n=200, concurrency=16, upstream_latency_s=0.1, verifier_latency_s=0.05, rounds=3)
        for mode in ("guarded", "guarded_stream"):
            print(f"{mode:15s} added {found.added_ms(mode):7.2f} ms over the upstream alone, "
                  f"of which the guard's own work {found.plumbing_ms(mode):6.2f} ms")  # fmt: skip
        guard = (
            f"guard_added_ms={found.added_ms('guarded'):.2f} "
            f"guard_added_stream_ms={found.added_ms('guarded_stream'):.2f} "
            f"guard_plumbing_ms={found.plumbing_ms('guarded'):.2f} "
            f"guard_plumbing_stream_ms={found.plumbing_ms('guarded_stream'):.2f} "
        )
    p50_pct = 100 * (http.percentile(50) / local.percentile(50) - 1)
    print(
        f"RESULT overhead_pct={overhead_pct:.2f} p50_overhead_pct={p50_pct:.2f} requests={http.requests} "
        f"errors={len(http.errors)} p50_ms={1000 * http.percentile(50):.1f} p99_ms={1000 * http.percentile(99):.1f} "
        f"inprocess_p50_ms={1000 * local.percentile(50):.1f} inprocess_p99_ms={1000 * local.percentile(99):.1f} "
        f"throughput_ratio={(http.requests / http.seconds) / (local.requests / local.seconds):.4f} "
        f"cpu_ms={http.cpu_ms:.2f} inprocess_cpu_ms={local.cpu_ms:.2f} clients={args.clients} "
        f"seconds={args.seconds:g} rounds={args.rounds} latency_s={args.latency} {guard}"
        f"goal_met={overhead_pct <= 5.0 and not http.errors}"
    )


if __name__ == "__main__":
    main()
