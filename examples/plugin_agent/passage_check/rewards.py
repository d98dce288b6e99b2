"""Reward components: pure functions of typed values (the reward object in :mod:`passage_check.scoring` calls them)."""

from __future__ import annotations

from passage_check.schemas import PassageCheckOutput

__all__ = ("correct", "well_formed")


def correct(verdict: str | None, supported: bool) -> float:
    """1.0 when the verdict matches the gold answer, else 0.0 (no verdict is wrong)."""
    return 1.0 if verdict == ("yes" if supported else "no") else 0.0


def well_formed(output: PassageCheckOutput) -> float:
    """1.0 for exactly one answer block and nothing outside it, else 0.0."""
    return 1.0 if output.well_formed else 0.0
