"""ASGI apps served for real in tests: uvicorn on a free loopback port, in a thread or on the test's own loop."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import uvicorn

__all__ = ("running", "running_here")


@contextlib.contextmanager
def running(app: Any, *, start_s: float = 20) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields its base URL (``http://127.0.0.1:N``)."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_s
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(20)


@contextlib.asynccontextmanager
async def running_here(app: Any, *, start_s: float = 20) -> AsyncIterator[str]:
    """``app`` under uvicorn on the test's own event loop (so the test sees the server's tasks)."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(start_s):
        while not server.started:
            await asyncio.sleep(0.01)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 20)
