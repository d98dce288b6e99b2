"""The one sync-to-async bridge (``evigraph.event_loop.run_sync``): one loop across calls, the caller's context,
errors raised at the caller, no deadlock from inside the shared loop, and an interrupted caller leaves no work
running. Also: no library module calls ``asyncio.run`` itself (the source is scanned)."""

from __future__ import annotations

import ast
import asyncio
import contextvars
import signal
import threading
import time
from pathlib import Path

import pytest

from evigraph.event_loop import run_sync

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("evigraph", "agents", "graphs", "training", "tools", "corpora")
"""Installed code: examples and benchmarks are scripts, where ``asyncio.run(main())`` is the idiom."""

_marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")


def test_calls_share_one_loop_and_see_the_callers_context() -> None:
    async def loop_and_marker() -> tuple[asyncio.AbstractEventLoop, str]:
        return asyncio.get_running_loop(), _marker.get()

    token = _marker.set("caller")
    try:
        first, seen = run_sync(loop_and_marker)
        second, _ = run_sync(loop_and_marker)
    finally:
        _marker.reset(token)
    assert first is second and not first.is_closed()
    assert seen == "caller"


def test_an_error_of_the_work_is_raised_at_the_caller() -> None:
    async def fail() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        run_sync(fail)


def test_a_call_from_inside_the_shared_loop_is_refused_not_deadlocked() -> None:
    async def nested() -> None:
        async def inner() -> int:
            return 1

        run_sync(inner)

    with pytest.raises(RuntimeError, match="deadlock"):
        run_sync(nested)


def test_a_call_from_another_running_loop_works() -> None:
    async def value() -> int:
        return 7

    async def host() -> int:
        return run_sync(value)

    assert asyncio.run(host()) == 7


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_an_interrupted_caller_cancels_the_work_and_waits_for_its_cleanup() -> None:
    """Ctrl-C while waiting (a SIGALRM handler raising KeyboardInterrupt in the main thread stands in for it): the
    work is cancelled, its ``finally`` has run by the time the interrupt reaches the caller, and it never reaches
    the line after its long wait."""
    assert threading.current_thread() is threading.main_thread()
    events: list[str] = []

    async def long_work() -> None:
        try:
            events.append("started")
            await asyncio.sleep(30)
            events.append("finished")
        finally:
            await asyncio.sleep(0.2)  # cleanup that itself awaits
            events.append("cleaned up")

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_sync(long_work)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert events == ["started", "cleaned up"]
    assert time.monotonic() - started < 10


def _asyncio_run_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "asyncio"
    ]


def test_no_library_module_calls_asyncio_run() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for folder in LIBRARY
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in _asyncio_run_calls(path)
    }
    assert not found, f"use evigraph.event_loop.run_sync instead of asyncio.run: {sorted(found)}"


def test_the_scan_finds_a_call() -> None:
    """The scan above is not vacuous: it sees ``asyncio.run`` in this very file."""
    assert _asyncio_run_calls(Path(__file__))
