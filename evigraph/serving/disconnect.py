"""Work that stops when its HTTP client leaves: a verification nobody will read is cancelled, not finished."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from fastapi import Request

__all__ = ("CLIENT_CLOSED", "ClientGone", "until_disconnected")

T = TypeVar("T")

CLIENT_CLOSED = 499
"""The status logged for a request whose client left before the answer (nginx's; nobody receives it)."""


class ClientGone(Exception):
    """The client disconnected before the answer."""


async def until_disconnected(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result, or :class:`ClientGone` -- with ``work`` cancelled -- as soon as the client disconnects."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnect(request))
    try:
        await asyncio.wait((task, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, watcher):
            pending.cancel()  # a no-op on a finished task
        await asyncio.gather(task, watcher, return_exceptions=True)
    if not task.cancelled():
        return task.result()
    raise ClientGone


async def _disconnect(request: Request) -> None:
    # The body was read: what the server receives next is the disconnect (uvicorn waits for it).
    while (await request.receive())["type"] != "http.disconnect":
        pass
