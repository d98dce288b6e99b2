"""Skip markers shared by test modules."""

from __future__ import annotations

import importlib.util

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
