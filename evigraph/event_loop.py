"""The one bridge from synchronous code into evigraph's async code: every sync entry point (the CLI's verbs, the
jobs, a generator's or an NLI model's sync call, the embedding wrappers, the TRL rollout) goes through
:func:`run_sync`, never ``asyncio.run``.

``asyncio.run`` makes a loop per call and closes it. A client created on the first loop then fails on the next
call with "Event loop is closed": LangChain's ``ChatOpenAI`` shares one ``httpx.AsyncClient`` per base URL across
the process, and evigraph's OpenAI-compatible generator holds one too. :func:`run_sync` runs the coroutine on one
long-lived loop in a daemon thread instead, in a copy of the caller's context (LangGraph's config and
LangChain's callbacks live in context variables), and works from inside a running loop as well. A caller
interrupted while it waits (Ctrl-C, or a signal handler that raises) cancels the coroutine and waits for its
cleanup before the interrupt goes on, as ``asyncio.run`` would: no work is left running behind the caller.
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
_CANCEL_WAIT_S = 30.0
"""How long an interrupted caller waits for the cancelled work's cleanup."""


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
    finished = threading.Event()

    async def main() -> _T:
        async def call() -> _T:
            return await make()

        try:
            # Cancelling this task cancels the one it awaits and resumes only once that one has finished.
            return await asyncio.get_running_loop().create_task(call(), context=context)
        finally:
            finished.set()

    future = asyncio.run_coroutine_threadsafe(main(), loop)
    try:
        return future.result()
    except BaseException:
        if not finished.is_set():
            # Interrupted while waiting: stop the work, let its cleanup run, then let the interrupt go on.
            future.cancel()
            finished.wait(_CANCEL_WAIT_S)
        raise
