"""Process-wide runtime settings shared by the local backends (torch threads, the user cache directory).

Nothing here imports torch at module level: ``import evigraph.machine`` stays cheap, and torch is only
touched when a function that needs it is called.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = (
    "available_cpus",
    "cache_root",
    "configure_torch_threads",
    "pid_alive",
    "quiet_progress_bars",
    "tune_gc_for_long_run",
)

logger = logging.getLogger(__name__)

CACHE_ENV = "EVIGRAPH_CACHE_DIR"
"""Environment variable that moves evigraph's user cache (models, indexes) somewhere else."""


def available_cpus() -> int:
    """CPU cores this process may run on (respects ``taskset``/cgroup affinity where the OS reports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows have no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def configure_torch_threads(num_threads: int | None) -> int:
    """Set torch's intra-op thread count and return the count now in effect.

    Args:
        num_threads: the thread count to use. ``None`` picks a default: 1 on machines with at most 2 cores
            (unless ``OMP_NUM_THREADS`` says otherwise), else torch's own default is left alone.

    Returns:
        ``torch.get_num_threads()`` after the change.

    Why 1 on small machines: with 2 OpenMP threads on 2 cores, any other busy process makes the threads
    spin at barriers and generation drops from ~13 to ~2-3 tokens/s; one thread keeps ~12-13 tokens/s.

    Note that torch keeps this setting per process, so it affects every model in the process.
    """
    import torch

    if num_threads is not None:
        if num_threads < 1:
            from evigraph.errors import ConfigError

            raise ConfigError(f"num_threads must be >= 1, got {num_threads}", source="num_threads")
        torch.set_num_threads(num_threads)
    elif "OMP_NUM_THREADS" not in os.environ and available_cpus() <= 2:
        torch.set_num_threads(1)
    threads = torch.get_num_threads()
    logger.debug("torch uses %d intra-op thread(s)", threads)
    return threads


def cache_root() -> Path:
    """evigraph's user cache directory: ``$EVIGRAPH_CACHE_DIR``, else ``$XDG_CACHE_HOME/evigraph``, else
    ``~/.cache/evigraph``. Never inside the repository."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "evigraph"


GC_THRESHOLDS = (50_000, 20, 20)
"""Collector thresholds for long concurrent runs (CPython's default first threshold is 700 allocations)."""


def tune_gc_for_long_run() -> None:
    """Prepare the garbage collector for a long run of many concurrent rollouts. Call once, at the start.

    - ``gc.freeze()``: the objects alive now (modules, model wrappers, indexes, compiled graphs) live for the
      whole process; frozen, they are no longer rescanned by every full collection.
    - :data:`GC_THRESHOLDS`: hundreds of live rollouts allocate many small objects per turn; with the default
      first threshold a young collection runs every 700 allocations and each one walks every young rollout
      state. Together these cut ~0.2 ms of CPU per turn on ``benchmarks/rollout_concurrency.py``.

    Memory is still reclaimed (reference counting frees almost everything; cycles are collected less often).
    Objects frozen here that later become garbage are not reclaimed, which is why this is done once and not
    inside library calls.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@contextlib.contextmanager
def quiet_progress_bars() -> Iterator[None]:
    """Hide transformers' progress bars (loading weights, writing shards) inside the block, unless the
    ``evigraph`` logger is at INFO (``evigraph -v``): a user sees evigraph's own status line instead."""
    if logging.getLogger("evigraph").isEnabledFor(logging.INFO):
        yield
        return
    from transformers.utils import logging as transformers_logging

    was_enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            transformers_logging.enable_progress_bar()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one owned by another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
