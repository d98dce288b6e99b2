"""The code base stays ruff-clean: lint rules and formatting (the configuration is pyproject.toml's)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    local = Path(sys.executable).with_name("ruff")
    found = str(local) if local.exists() else shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (it comes with the [dev] extra)")
    return [found]


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff(command: list[str]) -> None:
    done = subprocess.run([*_ruff(), *command], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
