"""One event loop for every synchronous call into async code, so clients bound to a loop survive between calls.

``asyncio.run`` makes a loop per call and closes it. A client created on the first loop then fails on the next
call with "Event loop is closed": LangChain's ``ChatOpenAI`` shares one ``httpx.AsyncClient`` per base URL across
the process, and evigraph's OpenAI-compatible generator holds one too. :func:`run_sync` runs the coroutine on one
long-lived loop in a daemon thread instead, in a copy of the caller's context (LangGraph's config and
LangChain's callbacks live in context variables), and works from inside a running loop as well.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ("run_sync",)

_T = TypeVar("_T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _shared_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="evigraph-sync-loop", daemon=True).start()
        return _loop


def run_sync(make: Callable[[], Awaitable[_T]]) -> _T:
    """``await make()`` for a synchronous caller, on the shared loop; its exceptions are raised here.

    Raises:
        RuntimeError: called from a coroutine already running on the shared loop (it would wait on itself).
    """
    loop = _shared_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("a synchronous call from inside evigraph's shared loop would deadlock: await it instead")
    context = contextvars.copy_context()

    async def main() -> _T:
        async def call() -> _T:
            return await make()

        return await asyncio.get_running_loop().create_task(call(), context=context)

    return asyncio.run_coroutine_threadsafe(main(), loop).result()
