"""Training data for a distilled StepGap checker (specs/stepgap.md §2.8 distillation, notes 10 and 18).

One example per checked step: the student sees exactly the judge's single-call prompt for that step, plus the
NLI stages' results as text (label and probabilities: the student cannot run the NLI itself, note 18), and
learns to write the teacher's whole reply -- the A-C JSON -- followed by the full ``pipeline_path`` and the
label, never the label alone (a student trained on labels learned to skip NLI, note 10). Steps the teacher
could not check, and binary (NLI-only) checks, give no example.
"""

from __future__ import annotations

import json
from typing import Any

from evigraph.agents.stepgap.judge import single_prompt, step_views
from evigraph.agents.stepgap.schemas import StepGapConfig, StepGapOutput, Trace, TraceCheck
from evigraph.trajectory import Trajectory

__all__ = ("student_examples", "student_examples_of", "student_target")

_NLI_STAGES = ("D", "E")


def student_target(judgement: dict[str, Any], pipeline_path: str, label: str) -> str:
    """The reply a student learns: the judge's JSON, then the path and the label on their own lines.

    Example:
        >>> print(student_target({"step_1_quote_search": {"found_quote": False}}, "stageC:no_quote", "no-gap"))
        {"step_1_quote_search": {"found_quote": false}}
        pipeline_path: stageC:no_quote
        label: no-gap
    """
    return f"{json.dumps(judgement, ensure_ascii=False)}\npipeline_path: {pipeline_path}\nlabel: {label}"


def student_examples(trace: Trace, checks: TraceCheck, config: StepGapConfig | None = None) -> list[dict[str, Any]]:
    """``{"id", "step", "messages": [user, assistant]}`` per step the teacher checked."""
    if checks.binary:
        return []
    config = config or StepGapConfig()
    views = step_views(trace, config)
    examples = []
    for check in checks.steps:
        if check.label is None or check.judgement is None or not 0 <= check.index < len(views):
            continue
        prompt = single_prompt(views[check.index], max_chars=config.max_evidence_chars)
        nli = [f"- stage {d.stage}: {d.decision} ({d.detail})" for d in check.stages if d.stage in _NLI_STAGES]
        if nli:
            prompt += "\n\nNLI results for this step:\n" + "\n".join(nli)
        examples.append(
            {
                "id": f"{trace.id or 'trace'}#{check.index}",
                "step": check.index,
                "messages": [
                    {"role": "user", "content": prompt},
                    {"role": "assistant", "content": student_target(check.judgement, check.pipeline_path, check.label)},
                ],
            }
        )
    return examples


def student_examples_of(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The examples of one stored checker run (``AgentSpec.distill``: ``evigraph export-sft stepgap --student``)."""
    output = StepGapOutput.model_validate(trajectory.output)
    return student_examples(output.trace, output.checks) if output.trace is not None else []
