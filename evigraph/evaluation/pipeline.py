"""Run directories shared by every agent's ``eval``: the settings a run was started with are stored in
``run.json`` so a resumed run cannot silently mix predictions made under different settings."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from evigraph.errors import ConfigError

__all__ = ("PREDICTIONS", "RUN_CONFIG", "prepare_run_dir")

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
        tmp = stored_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(wanted, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, stored_path)
    return out_dir / PREDICTIONS
