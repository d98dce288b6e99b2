"""Batching NLI calls across concurrent callers (the rollouts of one training step, the traces of an eval).

Each caller of :meth:`CoalescingNLI.abatch_classify` parks its pairs; the first one also schedules a flush
that runs after the event loop has let every other ready coroutine park theirs (one ``asyncio.sleep(0)`` round,
or ``window_s`` when given), then sends all parked pairs as one ``abatch_classify`` of the wrapped engine, whose
cache and sorted batches then see the whole set. Results go back to each caller in its own order; a failure
reaches every caller of that flush.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from evigraph.tools.nli.engine import Pair
from evigraph.tools.nli.results import NLIResult

__all__ = ("CoalescingNLI",)


class CoalescingNLI:
    """Wraps an NLI engine (``abatch_classify``, or a synchronous ``batch_classify``); every other attribute is
    the engine's.

    Args:
        nli: the engine.
        window_s: how long the first caller waits for others (0: one scheduler round).
        max_pairs: flush at once when this many pairs are parked.
    """

    def __init__(self, nli: Any, *, window_s: float = 0.0, max_pairs: int = 1024) -> None:
        self.nli = nli
        self.window_s = window_s
        self.max_pairs = max_pairs
        self._parked: list[tuple[list[Pair], asyncio.Future[list[NLIResult]]]] = []
        self._flush: asyncio.Task[None] | None = None
        self.flushes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.nli, name)

    async def abatch_classify(self, pairs: Sequence[Pair]) -> list[NLIResult]:
        if not pairs:
            return []
        future: asyncio.Future[list[NLIResult]] = asyncio.get_running_loop().create_future()
        self._parked.append((list(pairs), future))
        if sum(len(p) for p, _ in self._parked) >= self.max_pairs:
            await self._send()
        elif self._flush is None:
            self._flush = asyncio.create_task(self._later())
        return await future

    async def _later(self) -> None:
        await asyncio.sleep(self.window_s)
        self._flush = None
        await self._send()

    async def _send(self) -> None:
        parked, self._parked = self._parked, []
        if not parked:
            return
        self.flushes += 1
        everything = [pair for pairs, _ in parked for pair in pairs]
        batch = getattr(self.nli, "abatch_classify", None)
        try:
            if batch is not None:
                results = await batch(everything)
            else:  # a synchronous engine runs on a worker thread
                results = await asyncio.to_thread(self.nli.batch_classify, everything)
        except Exception as error:
            for _, future in parked:
                if not future.done():
                    future.set_exception(error)
            return
        position = 0
        for pairs, future in parked:
            if not future.done():
                future.set_result(list(results[position : position + len(pairs)]))
            position += len(pairs)
