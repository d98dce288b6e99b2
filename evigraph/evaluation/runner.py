"""The resumable, concurrent evaluation runner shared by every agent.

:func:`run_records` runs an async ``run_one`` over the input records with bounded concurrency and appends
one JSON line per finished record to ``out_path`` (flush + fsync per line, in completion order). The output
file *is* the checkpoint: a restarted run skips the ids already there, so a crash, Ctrl-C or SIGKILL loses at
most the records that were in flight. A line torn by a kill mid-write is repaired on start; any other corrupt
line is an error, because silently dropping it would silently drop a result.

A result with a non-null ``error`` is a failed run of the agent (data, not a crash) and counts as done unless
``retry_failed=True``. An exception *raised* by ``run_one`` is a bug: scheduling stops, in-flight records
finish and are written, then the exception is re-raised.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from evigraph.errors import ConfigError, InputDataError
from evigraph.files import atomic_write
from evigraph.jsonl import read_jsonl, repair_torn_tail

if TYPE_CHECKING:
    from rich.progress import Progress, Task

__all__ = ("RunSummary", "read_results", "run_records", "write_report")

log = logging.getLogger(__name__)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class RunSummary(BaseModel):
    """What one invocation of :func:`run_records` did."""

    total: int
    """Input records (after ``--limit``)."""
    already_done: int
    """Input records whose result was already in the output at start (and was kept)."""
    ran: int
    """Records run and written by this invocation."""
    failed: int
    """Records run by this invocation whose result has a non-null ``error``."""
    previously_failed: int = 0
    """Of ``already_done``, results with a non-null ``error`` (kept because ``retry_failed`` was off)."""
    extra_in_output: int = 0
    """Ids in the output that are not in the input (kept untouched, with a warning)."""
    wall_s: float
    records_per_s: float
    """``ran / wall_s``."""


async def run_records(
    items: Sequence[T],
    run_one: Callable[[T], Awaitable[BaseModel]],
    *,
    id_of: Callable[[T], str],
    out_path: Path,
    concurrency: int = 4,
    progress: bool = True,
    description: str = "eval",
    retry_failed: bool = False,
) -> RunSummary:
    """Run ``run_one`` on every item whose id is not yet in ``out_path``, appending each result as a JSON line.

    Args:
        items: the input records; ids (``id_of``) must be unique.
        run_one: runs one record; must return a pydantic model whose ``id`` equals ``id_of(item)`` and which may
            have an ``error`` field (non-null = a failed run, still written and counted as done).
        id_of: the id of an item.
        out_path: the JSONL output, which is also the checkpoint; created (with its folder) if missing.
        concurrency: at most this many ``run_one`` calls in flight.
        progress: show a rich progress bar on stderr.
        description: label of the progress bar.
        retry_failed: drop results with a non-null ``error`` from the output first, and run those records again.

    Raises:
        InputDataError: a corrupt line in ``out_path`` other than a torn last line (``file:line``).
        ConfigError: ``concurrency`` < 1, or duplicate ids in ``items``.
        Exception: whatever ``run_one`` raised (after in-flight records were finished and written), or a
            ``TypeError``/``ValueError`` when a result is not a model with the expected ``id``.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}", source="--concurrency")
    started = time.perf_counter()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)

    wanted: list[tuple[str, T]] = [(id_of(item), item) for item in items]
    wanted_ids = {record_id for record_id, _ in wanted}
    if len(wanted_ids) != len(wanted):
        raise ConfigError("input records have duplicate ids; ids must be unique")

    existing = _prepare_output(out_path, retry_failed=retry_failed)
    extra = [record_id for record_id in existing if record_id not in wanted_ids]
    if extra:
        shown = ", ".join(repr(record_id) for record_id in extra[:5])
        log.warning("%s holds %d result(s) for ids not in the input (kept): %s", out_path, len(extra), shown)
    pending = [(record_id, item) for record_id, item in wanted if record_id not in existing]
    already_done = len(wanted) - len(pending)
    previously_failed = sum(1 for record_id in wanted_ids if existing.get(record_id, False))
    if already_done:
        # A resumed run says what it skips, so a rerun after Ctrl-C visibly continues instead of starting over.
        _say(
            f"{out_path} already holds {already_done} of {len(wanted)} records: skipping them, "
            f"running the other {len(pending)}",
            progress=progress,
        )

    ran = failed = 0
    stop = False
    errors: list[BaseException] = []
    queue: Iterator[tuple[str, T]] = iter(pending)
    bar = _Bar(description, total=len(wanted), completed=already_done) if progress else None

    with _LineWriter(out_path) as writer:

        async def worker() -> None:
            nonlocal ran, failed, stop
            # Workers pull from one shared iterator, so only `concurrency` coroutines ever exist at once.
            for record_id, item in queue:
                try:
                    result = await run_one(item)
                    line = _result_line(result, record_id)
                except Exception as error:  # a bug in run_one: stop scheduling, keep what finished
                    stop = True
                    errors.append(error)
                    return
                writer.write(line)
                ran += 1
                failed += getattr(result, "error", None) is not None
                if bar is not None:
                    bar.advance()
                if stop:
                    return

        tasks = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(pending)))]
        try:
            if bar is not None:
                bar.start()
            await asyncio.gather(*tasks)
        finally:
            # Cancellation (Ctrl-C) or an unexpected BaseException: cancel in-flight records; everything already
            # finished is on disk because each line is fsynced as it is written.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if bar is not None:
                bar.stop()

    if errors:
        raise errors[0]
    wall_s = time.perf_counter() - started
    return RunSummary(
        total=len(wanted),
        already_done=already_done,
        ran=ran,
        failed=failed,
        previously_failed=previously_failed,
        extra_in_output=len(extra),
        wall_s=wall_s,
        records_per_s=ran / wall_s if wall_s > 0 else 0.0,
    )


def read_results(out_path: Path, model: type[M]) -> list[M]:
    """Read the results in ``out_path`` as ``model`` (skipping a torn last line left by a kill mid-write).

    Raises:
        InputDataError: any other corrupt or invalid line, as ``file:line``.
    """
    return list(read_jsonl(out_path, model, tolerate_truncated_tail=True))


def write_report(out_dir: Path, report: BaseModel, *, name: str = "report.json") -> Path:
    """Write ``report`` as indented JSON to ``out_dir/name`` atomically (:func:`~evigraph.files.atomic_write`)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    return atomic_write(path, report.model_dump_json(indent=2) + "\n")


def _say(message: str, *, progress: bool) -> None:
    """Tell the person watching (stderr, beside the progress bar); a quiet run (``progress=False``) logs it."""
    if not progress:
        log.info("%s", message)
        return
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True).print(Text(message, style="dim"), soft_wrap=True)


def _result_line(result: Any, record_id: str) -> str:
    if not isinstance(result, BaseModel):
        raise TypeError(f"run_one must return a pydantic model, got {type(result).__name__} for id {record_id!r}")
    result_id = getattr(result, "id", None)
    if result_id != record_id:
        raise ValueError(
            f"run_one returned a result with id {result_id!r} for the record with id {record_id!r}; "
            "the result's `id` field must equal id_of(item)"
        )
    return result.model_dump_json() + "\n"


def _prepare_output(path: Path, *, retry_failed: bool) -> dict[str, bool]:
    """Repair a torn tail, check every other line, drop failed results if asked; return ``{id: failed}``."""
    if not path.exists():
        return {}
    repair_torn_tail(path)
    with path.open("r", encoding="utf-8") as handle:
        lines = handle.readlines()

    failed_by_id: dict[str, bool] = {}
    line_of: dict[str, int] = {}
    kept: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputDataError(
                str(path), number, f"corrupt result line ({error.msg} at column {error.colno}); fix or remove it"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise InputDataError(str(path), number, "a result line must be a JSON object with a string `id`")
        record_id = data["id"]
        if record_id in line_of:
            raise InputDataError(
                str(path), number, f"duplicate result id {record_id!r} (lines {line_of[record_id]} and {number})"
            )
        line_of[record_id] = number
        is_failed = data.get("error") is not None
        if retry_failed and is_failed:
            continue
        failed_by_id[record_id] = is_failed
        kept.append(line)

    if retry_failed and len(kept) != len(line_of):
        log.info("%s: removing %d failed result(s) to run them again", path, len(line_of) - len(kept))
        atomic_write(path, "".join(kept))
    return failed_by_id


class _LineWriter:
    """The single writer: one line at a time (a lock, so lines never interleave), flushed and fsynced."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._handle: IO[str] | None = None

    def __enter__(self) -> _LineWriter:
        self._handle = self._path.open("a", encoding="utf-8")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()

    def write(self, line: str) -> None:
        assert self._handle is not None, "writer used outside its `with` block"
        # Synchronous on purpose: no await between write and fsync, so a line is on disk before the next
        # coroutine runs (fsync costs well under a millisecond on a local disk).
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())


class _Bar:
    """A rich progress bar on stderr: description, bar, n/total (counting already-done), rate, elapsed, ETA."""

    def __init__(self, description: str, *, total: int, completed: int) -> None:
        self._description = description
        self._total = total
        self._completed = completed
        self._progress: Progress | None = None
        self._task_id: Any = None

    def start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.text import Text

        resumed_at = self._completed

        class RateColumn(ProgressColumn):
            # Records of a micro-batched backend finish in bursts, so rich's windowed speed swings wildly;
            # the mean since this run started is what the ETA needs.
            def render(self, task: Task) -> Text:
                elapsed = task.finished_time if task.finished else task.elapsed
                speed = (task.completed - resumed_at) / elapsed if elapsed else 0.0
                return Text(f"{speed:.3g} it/s" if speed else "? it/s", style="progress.data.speed")

        class EtaColumn(ProgressColumn):
            def render(self, task: Task) -> Text:
                elapsed = task.elapsed or 0.0
                done = task.completed - resumed_at
                if task.finished or not done or task.total is None:
                    return Text("-:--:--", style="progress.remaining")
                seconds = int(elapsed / done * (task.total - task.completed))
                return Text(
                    f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}", style="progress.remaining"
                )

        # Rich redraws only on a terminal; redirected to a log it prints the final state once.
        console = Console(stderr=True)
        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            EtaColumn(),
            console=console,
            refresh_per_second=4,
        )
        self._task_id = self._progress.add_task(self._description, total=self._total, completed=self._completed)
        self._progress.start()

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task_id)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
