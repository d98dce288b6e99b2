"""Atomic, durable file writes: the one way evigraph replaces a file.

A writer fills a temporary file in the target's folder, flushes and fsyncs it, renames it over the target
(``os.replace``, atomic on POSIX and Windows) and fsyncs the folder so the rename itself survives a power
loss. A reader therefore sees either the old file or the whole new one, never a torn one, and a failed
write leaves the old file untouched and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

__all__ = ("atomic_write", "atomic_writer")


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], mode: Literal["w", "wb"] = "w") -> Iterator[IO[Any]]:
    """Open a temporary file that replaces ``path`` when the ``with`` block ends without an exception.

    Example:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "report.json"
        >>> with atomic_writer(target) as handle:
        ...     _ = handle.write("{}\\n")
        >>> target.read_text()
        '{}\\n'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # A unique name: two writers of the same target never share a temporary file.
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    encoding = "utf-8" if mode == "w" else None
    try:
        with tmp.open(mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(target.parent)


def atomic_write(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Replace ``path`` with ``data`` atomically and durably (text is written as UTF-8); returns the path."""
    if isinstance(data, bytes):
        with atomic_writer(path, "wb") as binary:
            binary.write(data)
    else:
        with atomic_writer(path, "w") as text:
            text.write(data)
    return Path(path)


def _fsync_dir(folder: Path) -> None:
    # Directories cannot be opened for fsync on Windows; the rename is still atomic there.
    if os.name == "nt":
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
