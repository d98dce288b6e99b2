"""StepGap's checker result as the one embedding verdict (``AgentSpec.verification``).

A host embeds StepGap's *checker* over its own steps (``AgentSpec.verifier_builder``: the graph of
:mod:`evigraph.graphs.stepgap_checker`, input ``{"trace": Trace}``), not the Search-R1 rollout graph.

``passed``: every step was checked and none has a gap (all ``no-gap``); a step the judge could not check fails
the trace, since nothing was shown about it. ``label``: the first gap's label in step order (``CC``, ``IE``,
``MB``; ``gap`` for the NLI-only checker, whose gap types are placeholders), ``no-gap`` when there is none,
``None`` when some step went unchecked. ``confidence``: that first gap's confidence, or the lowest step
confidence of a gap-free trace. ``steps``: every step's label, repair action (``retract``, ``re-search``,
``bridging-search``; ``None`` for a gap-free, unchecked or NLI-only-flagged step) and the step as the judge read
it. ``evidence``: the validated Stage-C quotes (verbatim in their step's evidence). ``repair``: what to tell the
host's model, step by step (counted from 1), in our words; the judge's rationales stay in ``detail`` (the dumped
:class:`~evigraph.agents.stepgap.schemas.TraceCheck`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.stepgap.labels import RepairAction
from evigraph.agents.stepgap.schemas import StepCheck, TraceCheck
from evigraph.verification import CitedEvidence, StepVerdict, Verification, failure_of

__all__ = ("to_verification",)

_ACTIONS: dict[RepairAction, str] = {
    "retract": "its evidence contradicts it or it drifts from the question; retract it",
    "re-search": "its evidence does not bear on it; search again for evidence about the right entity",
    "bridging-search": "its evidence does not give the fact it needs; search for the missing link",
}


def to_verification(result: Mapping[str, Any]) -> Verification:
    """The verdict of one StepGap checker run (its graph's result: ``checks`` and ``trajectory``)."""
    checks = TraceCheck.model_validate(result["checks"])
    trajectory = result.get("trajectory")
    shown = {s.index: s.text for s in getattr(trajectory, "steps", ())}
    error = failure_of(trajectory) or next((f"step {c.index + 1}: {c.error}" for c in checks.steps if c.error), None)
    gaps = [c for c in checks.steps if c.label not in (None, "no-gap")]
    unchecked = any(c.label is None for c in checks.steps)
    passed = error is None and bool(checks.steps) and not gaps and not unchecked
    if gaps:
        label: str | None = "gap" if checks.binary else gaps[0].label
        confidence: float | None = gaps[0].confidence
    elif unchecked or not checks.steps:
        label, confidence = None, None
    else:
        label, confidence = "no-gap", min(c.confidence for c in checks.steps)
    return Verification(
        agent="stepgap",
        passed=passed,
        label=label,
        confidence=confidence,
        evidence=[CitedEvidence(text=c.quote, found=True) for c in checks.steps if c.quote],
        steps=[_step(c, shown.get(c.index, ""), binary=checks.binary) for c in checks.steps],
        repair=None if passed else _repair(checks, gaps),
        error=error,
        detail=checks.model_dump(mode="json"),
    )


def _step(check: StepCheck, text: str, *, binary: bool) -> StepVerdict:
    action = None if check.label in (None, "no-gap") or binary else check.repair
    return StepVerdict(index=check.index, label=check.label, repair=action, text=text)


def _repair(checks: TraceCheck, gaps: list[StepCheck]) -> str:
    if not checks.steps:
        return "There were no steps to check. Show the steps behind the answer, each with its evidence."
    notes = [f"Step {c.index + 1}: {_action(c, binary=checks.binary)}." for c in gaps]
    if notes:
        notes.insert(0, "Some steps are not backed by their evidence.")
    unchecked = [str(c.index + 1) for c in checks.steps if c.label is None]
    if unchecked:
        notes.append(f"Step(s) {', '.join(unchecked)} could not be checked; make sure their evidence backs them.")
    return " ".join([*notes, "Redo those steps before answering."])


def _action(check: StepCheck, *, binary: bool) -> str:
    if binary or check.repair not in _ACTIONS:  # the NLI-only checker's gap types are placeholders
        return "its evidence does not back it; redo it"
    return _ACTIONS[check.repair]
