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


@pytest.mark.parametrize("verbose", [False, True])
def test_the_jvm_is_quiet_unless_asked(tmp_path: Path, verbose: bool) -> None:
    """Building and searching print no Lucene/Anserini INFO lines into the user's terminal unless -v."""
    import os
    import subprocess
    import sys

    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps({"id": "Alpha", "text": "Alpha is a red boat."}) + "\n", encoding="utf-8")
    env = {**os.environ, "EVIGRAPH_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
    flags = ["-v"] if verbose else []
    build = [sys.executable, "-m", "evigraph", *flags, "corpus", "build", str(source), "--out", str(tmp_path / "c")]
    search = [sys.executable, "-m", "evigraph", *flags, "corpus", "search", str(tmp_path / "c"), "red boat"]
    output = ""
    for command in (build, search):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        output += done.stdout + done.stderr
    java_info = [line for line in output.splitlines() if "INFO" in line and ("lucene" in line or "index." in line)]
    assert bool(java_info) is verbose, output[-800:]
