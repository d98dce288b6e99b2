"""Concurrent searches merged into one ``batch_search`` call: the retrieval server's batching, and the dense
searchers' ``asearch`` (one query encoding pass for every search a rollout batch has in flight).

A single worker collects requests arriving within ``window_s`` of the first (and any that queued while the
previous batch ran), up to ``max_queries`` queries, runs one ``search.batch_search`` with the largest ``k`` in a
worker thread (the event loop stays free), trims each request's hits to its own ``k`` and answers every request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evigraph.trajectory import Evidence

__all__ = ("SearchBatcher",)

logger = logging.getLogger(__name__)


class BatchSearch(Protocol):
    """What the batcher calls (any :class:`~evigraph.tools.search.SearchTool`)."""

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Evidence]]: ...


@dataclass
class _Pending:
    queries: list[str]
    k: int
    future: asyncio.Future[list[list[Evidence]]] = field(repr=False)


class SearchBatcher:
    """One worker task that turns queued requests into ``batch_search`` calls (started on first use)."""

    def __init__(self, search: BatchSearch, *, max_queries: int, window_s: float) -> None:
        self.search, self.max_queries, self.window_s = search, max_queries, window_s
        self._queue: asyncio.Queue[_Pending] | None = None
        self._task: asyncio.Task[None] | None = None
        self._held: _Pending | None = None

    async def submit(self, queries: list[str], k: int) -> list[list[Evidence]]:
        if self._task is None or self._task.done():
            self._queue = asyncio.Queue()
            self._task = asyncio.create_task(self._run(self._queue), name="evigraph-retrieval-batcher")
        assert self._queue is not None
        future: asyncio.Future[list[list[Evidence]]] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(queries, k, future))
        return await future

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _collect(self, queue: asyncio.Queue[_Pending]) -> list[_Pending]:
        batch = [self._held] if self._held is not None else [await queue.get()]
        self._held = None
        total = len(batch[0].queries)
        deadline = asyncio.get_running_loop().time() + self.window_s
        while total < self.max_queries:
            try:
                item = queue.get_nowait()  # whatever queued while the previous batch ran
            except asyncio.QueueEmpty:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                try:
                    item = await asyncio.wait_for(queue.get(), remaining)
                except TimeoutError:
                    break
            if total + len(item.queries) > self.max_queries:
                self._held = item  # first in the next batch, so order is kept
                break
            batch.append(item)
            total += len(item.queries)
        return batch

    async def _run(self, queue: asyncio.Queue[_Pending]) -> None:
        while True:
            batch = [p for p in await self._collect(queue) if not p.future.done()]  # drop cancelled requests
            if not batch:
                continue
            queries = [q for p in batch for q in p.queries]
            try:
                hits = await asyncio.to_thread(self.search.batch_search, queries, max(p.k for p in batch))
                if len(hits) != len(queries):
                    raise RuntimeError(f"batch_search returned {len(hits)} result lists for {len(queries)} queries")
            except Exception as error:
                logger.exception("batch_search failed for %d queries", len(queries))
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(error)
                continue
            start = 0
            for p in batch:
                if not p.future.done():
                    p.future.set_result([h[: p.k] for h in hits[start : start + len(p.queries)]])
                start += len(p.queries)
