"""Veri-R1's ``passed`` rule (agents/veri_r1/verification.py), each clause on its own."""

from __future__ import annotations

from types import SimpleNamespace

from evigraph.agents.veri_r1.verification import to_verification

_SUPPORT = {"label": "SUPPORT", "evidence": [], "answered": True, "format_ok": True}


def test_support_without_an_error_passes() -> None:
    verdict = to_verification({"output": _SUPPORT, "trajectory": SimpleNamespace(error=None)})
    assert verdict.passed is True


def test_support_with_an_error_does_not_pass() -> None:
    error = SimpleNamespace(type="SearchError", message="index unavailable")
    verdict = to_verification({"output": _SUPPORT, "trajectory": SimpleNamespace(error=error)})
    assert verdict.passed is False
    assert verdict.error == "SearchError: index unavailable"
    assert verdict.repair is not None
