"""Where a checker's labels go on the checked agent's trajectory: each step's payload gains the label, the repair,
the pipeline path and the reasoning and query that were judged (what StepGap's reward reads). Shared by every
frozen checker (StepGap's LLM checker, rule checkers of synthetic worlds)."""

from __future__ import annotations

from evigraph.agents.stepgap.schemas import Trace, TraceCheck
from evigraph.trajectory import Trajectory

__all__ = ("annotated",)


def annotated(trajectory: Trajectory, trace: Trace, checks: TraceCheck) -> Trajectory:
    """A copy of ``trajectory`` whose steps carry the checker's label, repair, path and the reasoning and query it
    judged (what StepGap's reward reads); trace steps map back through their ``step_index``."""
    by_position = {check.index: check for check in checks.steps}
    payloads = {}
    for position, step in enumerate(trace.steps):
        check = by_position.get(position)
        target = getattr(step, "step_index", position)
        if check is not None:
            payloads[target] = {
                "label": check.label,
                "repair": check.repair,
                "pipeline_path": check.pipeline_path,
                "reasoning": step.reasoning,
                "query": step.query,
            }
    steps = [
        s.model_copy(update={"payload": {**s.payload, **payloads[s.index]}}) if s.index in payloads else s
        for s in trajectory.steps
    ]
    return trajectory.model_copy(update={"steps": steps})
