"""A synchronous host's saver as its embedded verifier sees it.

A verifier graph is async (its nodes are coroutines), so a synchronous host's call runs it with ``ainvoke`` on
evigraph's shared loop (:mod:`evigraph.event_loop`). Inside a host graph that run is the node's subgraph: LangGraph
lends it the host's saver through the config (``configurable["__pregel_checkpointer"]``) and the async run calls
the saver's async methods -- which a sync-only saver such as ``SqliteSaver`` does not have
(``NotImplementedError``), and which an async saver bound to another loop (``AsyncSqliteSaver``) cannot serve from
this one. :func:`sync_host_config` therefore lends the verifier the same saver seen through its synchronous
methods, the ones the synchronous host itself uses (:class:`SyncBackedSaver`, each call in a worker thread).
Async hosts need nothing: their saver's async methods work.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from typing import Any, overload

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.constants import CONFIG_KEY_CHECKPOINTER

__all__ = ("SyncBackedSaver", "sync_host_config")


class SyncBackedSaver(BaseCheckpointSaver[Any]):
    """``saver`` whose async methods run its synchronous ones in a worker thread; the sync methods pass through."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=saver.serde)
        self.saver = saver
        # LangGraph passes ``task_path`` only to savers whose signature takes it: forward it on the same terms.
        self._task_path = inspect.signature(saver.put_writes).parameters.get("task_path") is not None

    @property
    def config_specs(self) -> list[Any]:
        return self.saver.config_specs

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> SyncBackedSaver:
        # Strict msgpack mode narrows each graph's serializer to its schema's types: narrow the wrapped saver's.
        narrowed = self.saver.with_allowlist(extra_allowlist)
        return self if narrowed is self.saver else SyncBackedSaver(narrowed)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)

    # -- synchronous: the wrapped saver's own ----------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.saver.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.saver.put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if self._task_path:
            self.saver.put_writes(config, writes, task_id, task_path=task_path)
        else:
            self.saver.put_writes(config, writes, task_id)

    def delete_thread(self, thread_id: str) -> None:
        self.saver.delete_thread(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.saver.delete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.saver.copy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.saver.prune(thread_ids, strategy=strategy)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self.saver.get_delta_channel_history(config=config, channels=channels)

    # -- asynchronous: the synchronous ones in a worker thread (the shared loop keeps serving other runs) ----------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(self.get_delta_channel_history, config=config, channels=channels)


@overload
def sync_host_config(config: RunnableConfig) -> RunnableConfig: ...
@overload
def sync_host_config(config: None = None) -> RunnableConfig | None: ...
def sync_host_config(config: RunnableConfig | None = None) -> RunnableConfig | None:
    """The config a synchronous caller runs a verifier graph with: ``config`` (default: the caller's own, from
    LangChain's context) with the host's saver, if it lends one, seen through its synchronous methods; else
    ``config`` unchanged."""
    merged = ensure_config(config)
    configurable = merged.get("configurable") or {}
    saver = configurable.get(CONFIG_KEY_CHECKPOINTER)  # how a parent graph lends a subgraph its saver
    if not isinstance(saver, BaseCheckpointSaver) or isinstance(saver, SyncBackedSaver):
        return config
    return {**merged, "configurable": {**configurable, CONFIG_KEY_CHECKPOINTER: SyncBackedSaver(saver)}}
