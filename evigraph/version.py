"""The installed distribution's version (a module of its own so that any floor can read it without the package
root, which reaches the embedding floor)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("evigraph")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ("__version__",)
