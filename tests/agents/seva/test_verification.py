"""SEVA's ``passed`` rule (agents/seva/verification.py), each clause on its own."""

from __future__ import annotations

from types import SimpleNamespace

from evigraph.agents.seva.verification import to_verification

_ATTRIBUTABLE = {"raw": "{}", "parse_ok": True, "label": "Attributable", "confidence": 0.9}


def test_attributable_without_an_error_passes() -> None:
    verdict = to_verification({"output": _ATTRIBUTABLE, "trajectory": SimpleNamespace(error=None)})
    assert verdict.passed is True
    assert verdict.error is None


def test_attributable_with_an_error_does_not_pass() -> None:
    error = SimpleNamespace(type="RuntimeError", message="backend failed")
    verdict = to_verification({"output": _ATTRIBUTABLE, "trajectory": SimpleNamespace(error=error)})
    assert verdict.passed is False
    assert verdict.error == "RuntimeError: backend failed"
    assert verdict.repair is not None
