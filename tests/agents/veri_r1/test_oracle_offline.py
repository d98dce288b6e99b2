"""The offline graph driven by a scripted oracle reproduces the reference evaluator's numbers end to end."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.markers import requires_shared_data, shared_data

DATA = shared_data("veri-r1-claim-verification")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "veri_r1_oracle.py"


@requires_shared_data("veri-r1-claim-verification")
def test_oracle_through_the_offline_graph_matches_the_reference_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("veri_r1_oracle", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setattr(example, "DATASETS", ("fever", "feverous"))  # the two quirky sets keep it fast
    reports = example.oracle_reports(DATA)
    for name, veri, evidence in (("fever", 0.9956, 0.6626), ("feverous", 0.9694, 0.9543)):
        compat, clean = reports[name]["compat"], reports[name]["clean"]
        assert compat["label_accuracy"] == 1.0 and compat["format_rate"] == 1.0
        assert round(compat["verification_accuracy"], 4) == veri == round(compat["joint_accuracy"], 4)
        assert round(compat["evidence_score"], 4) == evidence
        assert clean["joint_accuracy"] == clean["evidence_score"] == clean["format_rate"] == 1.0
