"""Atomic writes: a reader sees the old file or the whole new one; a failed write changes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evigraph.files import atomic_write, atomic_writer


def test_atomic_write_creates_folders_and_replaces_text_and_bytes(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "report.json"
    assert atomic_write(target, "first\n") == target
    atomic_write(target, "second\n")
    assert target.read_text(encoding="utf-8") == "second\n"
    atomic_write(target, b"\x89PNG")
    assert target.read_bytes() == b"\x89PNG"
    assert os.listdir(target.parent) == ["report.json"]  # no temporary file left behind


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "kept.jsonl"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="disk full"), atomic_writer(target) as handle:
        handle.write("half of the new")
        raise RuntimeError("disk full")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["kept.jsonl"]


def test_the_new_content_is_invisible_until_the_block_ends(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("old", encoding="utf-8")
    with atomic_writer(target) as handle:
        handle.write("new")
        handle.flush()
        assert target.read_text(encoding="utf-8") == "old"
    assert target.read_text(encoding="utf-8") == "new"


def test_every_writer_in_the_package_goes_through_the_helper() -> None:
    """No module renames a temporary file itself: one durable path for every writer."""
    root = Path(__file__).resolve().parents[1]
    offenders = []
    for folder in ("evigraph", "agents", "tools", "graphs", "training", "corpora"):
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if path.name == "files.py":
                continue
            for needle in ('with_suffix(".tmp")', 'with_suffix(path.suffix + ".tmp")', 'name + ".tmp"'):
                if needle in text:
                    offenders.append(f"{path.relative_to(root)}: {needle}")
    # corpora/build.py swaps a whole index folder (a directory rename, not a file write).
    assert offenders == ['corpora/build.py: name + ".tmp"'], offenders
