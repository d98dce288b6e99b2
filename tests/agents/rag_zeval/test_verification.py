"""RAG-Zeval's ``passed`` rule (agents/rag_zeval/verification.py), each clause on its own."""

from __future__ import annotations

from types import SimpleNamespace

from evigraph.agents.rag_zeval.verification import to_verification


def _candidate(index: int, supported: int, total: int) -> dict[str, object]:
    return {"id": "ABC"[index], "index": index, "supported": supported, "total": total}


def test_no_candidates_does_not_pass() -> None:
    # No candidate was scored: nothing reached S(y) >= 0.5, so the verdict fails (and scores 0.0).
    verdict = to_verification({"output": {"candidates": []}, "trajectory": SimpleNamespace(error=None)})
    assert verdict.passed is False
    assert verdict.confidence == 0.0
    assert verdict.error is None


def test_one_candidate_at_the_pass_score_passes() -> None:
    # 1 supported of 2 claims: S(y) = 0.5, exactly PASS_SCORE.
    verdict = to_verification({"output": {"candidates": [_candidate(0, 1, 2)]}})
    assert verdict.passed is True
    assert verdict.confidence == 0.5


def test_a_failed_run_does_not_pass_even_with_a_full_score() -> None:
    error = SimpleNamespace(type="TimeoutError", message="generate timed out")
    verdict = to_verification(
        {"output": {"candidates": [_candidate(0, 2, 2)]}, "trajectory": SimpleNamespace(error=error)}
    )
    assert verdict.passed is False
    assert verdict.error == "TimeoutError: generate timed out"
