"""examples/rlseek_eval.py with its scripted oracle over the bundled RAGTruth-format fixtures: through the real
graph, span mapping and metrics, a detector that lists the gold spans scores perfectly."""

from __future__ import annotations

import json
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from tests.examples.loading import load_example

FIXTURES = Path(str(files("evigraph.agents.rlseek.fixtures")))


def test_the_oracle_reaches_the_ceiling_on_the_fixtures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    argv = ["rlseek_eval.py", "--data", str(FIXTURES), "--limit", "40", "--oracle", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    load_example("rlseek_eval").main()
    printed = capsys.readouterr().out
    report = json.loads(printed[: printed.rindex("run directory:")])
    assert report["generator"] == "oracle" and report["n"] == report["n_gold"] == 31
    assert report["span"]["average"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert report["sample"]["fp"] == report["sample"]["fn"] == 0 and report["format_rate"] == 1.0
    assert report["quotes"]["found_rate"] == 1.0 and report["reward"]["final"] == 1.0
    assert printed.rstrip().endswith(f"run directory: {out}")
    assert len((out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()) == 31
