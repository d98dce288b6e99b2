"""Run directories shared by every agent's ``eval``: the settings a run was started with are stored in
``run.json`` so a resumed run cannot silently mix predictions made under different settings."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from evigraph.errors import ConfigError
from evigraph.evaluation.runner import RunSummary, run_records
from evigraph.files import atomic_write

__all__ = ("PREDICTIONS", "RUN_CONFIG", "prepare_run_dir", "run_in_dir")

T = TypeVar("T")

PREDICTIONS = "predictions.jsonl"
RUN_CONFIG = "run.json"


def prepare_run_dir(out_dir: Path, run_config: dict[str, Any]) -> Path:
    """Create ``out_dir`` (or check it holds a run with the same settings) and return the predictions path.

    Raises:
        ConfigError: ``out_dir`` holds predictions made with other settings (names the keys that differ).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    stored_path = out_dir / RUN_CONFIG
    wanted = json.loads(json.dumps(run_config, sort_keys=True, default=str))
    if stored_path.is_file():
        stored = json.loads(stored_path.read_text(encoding="utf-8"))
        differing = sorted(k for k in {*stored, *wanted} if stored.get(k) != wanted.get(k))
        if differing:
            raise ConfigError(
                f"{out_dir} holds a run with other settings ({', '.join(differing)} differ); "
                "use a new --out directory or delete the old one",
                source=str(stored_path),
            )
    else:
        atomic_write(stored_path, json.dumps(wanted, indent=2, sort_keys=True) + "\n")
    return out_dir / PREDICTIONS


def run_in_dir(
    items: Sequence[T],
    run_one: Callable[[T], Awaitable[BaseModel]],
    *,
    id_of: Callable[[T], str],
    out_dir: Path,
    run_config: dict[str, Any],
    concurrency: int = 4,
    retry_failed: bool = False,
    description: str = "eval",
) -> RunSummary:
    """What every agent's ``eval`` does: pin the settings in ``out_dir``, freeze the startup heap, and run
    (or resume) ``items`` into ``out_dir/predictions.jsonl`` with :func:`~evigraph.evaluation.runner.run_records`.
    """
    from evigraph.runtime import tune_gc_for_long_run

    predictions = prepare_run_dir(out_dir, run_config)
    tune_gc_for_long_run()  # the loaded model, index and graph live all run: keep the collector from rescanning them
    return asyncio.run(
        run_records(
            items,
            run_one,
            id_of=id_of,
            out_path=predictions,
            concurrency=concurrency,
            retry_failed=retry_failed,
            description=description,
        )
    )
