"""Helpers for tests that drive ``evigraph`` as a user does: a subprocess, JSONL inputs, scripted models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ("run_cli", "scripted_model", "write_jsonl")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m evigraph.cli.app ARGS`` with plain, wide output."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "evigraph.cli.app", *args], env=env, capture_output=True, text=True, timeout=300
    )


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def scripted_model(path: Path, replies: list[str]) -> str:
    """A ``scripted:`` model spec replaying ``replies``."""
    path.write_text(json.dumps(replies), encoding="utf-8")
    return f"scripted:{path}"
