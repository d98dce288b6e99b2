"""`evigraph corpus build|search|list` through the real CLI, in a private cache directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evigraph.cli.app import build_app
from tests.markers import requires_pyserini

pytestmark = [pytest.mark.java, requires_pyserini]
runner = CliRunner()


def test_build_list_search_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "wiki.jsonl"
    rows = [
        {"id": "Alpha", "text": "Alpha is a red boat. It sails at night."},
        {"id": "Beta", "text": "Beta is a garden."},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    app = build_app()
    built = runner.invoke(app, ["corpus", "build", str(source), "--name", "mine", "--group-sentences", "1"])
    assert built.exit_code == 0, built.output
    assert "3 entries from 2 documents" in built.output
    again = runner.invoke(app, ["corpus", "build", str(source), "--name", "mine", "--group-sentences", "1"])
    assert "skipped" in again.output
    listing = runner.invoke(app, ["corpus", "list"])
    assert "mine" in listing.output and "demo" in listing.output
    found = runner.invoke(app, ["corpus", "search", "mine", "sails at night", "-k", "1"])
    assert found.exit_code == 0, found.output
    assert "[[Alpha_sentence_1]]: It sails at night." in found.output
