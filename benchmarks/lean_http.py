"""What the HTTP load benchmarks share (``serve_load.py``, ``corpus_scale.py``): a server started as a subprocess on
a free loopback port, and the leanest keep-alive client, so that what is measured is the server, not a client
library (httpx spends more CPU per request than the server on these paths, on the server's cores)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ("Connection", "uvicorn_subprocess")


class Connection:
    """One keep-alive HTTP/1.1 connection: ``POST`` a JSON body, read the status and the ``Content-Length`` body;
    reconnects when the server closes."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.streams is None:
            self.streams = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.streams
        try:
            head = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()
            lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
            payload = await reader.readexactly(int(headers["content-length"]))
        except Exception:
            self.close()
            raise
        if headers.get("connection") == "close":
            self.close()
        return int(lines[0].split()[1]), payload

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


@contextmanager
def uvicorn_subprocess(argv: Sequence[str], *, name: str, timeout_s: float = 120.0) -> Iterator[tuple[int, int]]:
    """Run ``argv`` (a command serving under uvicorn with ``--port 0``) with one torch thread until the block ends;
    yields ``(port, pid)`` once uvicorn says where it listens.

    Raises:
        RuntimeError: the process ended or did not listen within ``timeout_s`` (with its log's tail).
    """
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "serve.log"
        with log.open("w") as stderr:
            process = subprocess.Popen(
                list(argv), stdout=subprocess.DEVNULL, stderr=stderr, env={**os.environ, "OMP_NUM_THREADS": "1"}
            )
        try:
            deadline = time.monotonic() + timeout_s
            while "Uvicorn running on" not in (text := log.read_text(errors="replace")):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not start:\n{text[-4000:]}")
                time.sleep(0.05)
            line = next(x for x in text.splitlines() if "Uvicorn running on" in x)
            yield int(line.rsplit(":", 1)[1].split()[0]), process.pid
        finally:
            process.terminate()
            process.wait(60)
