"""Skip markers shared by test modules."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def missing(*modules: str) -> list[str]:
    """Which of ``modules`` are not installed (found without importing: importing jnius starts the JVM)."""
    return [name for name in modules if importlib.util.find_spec(name) is None]


def requires(*modules: str) -> pytest.MarkDecorator:
    """Skip unless ``modules`` are installed (``evigraph setup`` installs Pyserini and its JVM bridge)."""
    absent = missing(*modules)
    return pytest.mark.skipif(bool(absent), reason=f"not installed: {', '.join(absent)} (evigraph setup)")


requires_pyserini = requires("jnius", "pyserini")
"""Pyserini with its JVM bridge; always paired with the ``java`` mark."""


def shared_data(name: str) -> Path:
    """A folder of the read-only shared data (``../shared/data/<name>`` beside the checkout, else the
    workplace's ``/work/shared``); tests skip with :data:`requires_shared_data` when it is absent."""
    for root in (Path(__file__).resolve().parents[2] / "shared" / "data", Path("/work/shared/data")):
        if (root / name).is_dir():
            return root / name
    return Path("/nonexistent") / name


def requires_shared_data(name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not shared_data(name).is_dir(), reason=f"shared data {name!r} is not here")
