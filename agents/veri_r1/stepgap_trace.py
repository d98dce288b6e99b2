"""A Veri-R1 run read as StepGap's trace, so StepGap's typed process reward can score Veri-R1 rollouts during
training (declared as ``step_readers={"stepgap": ...}`` in Veri-R1's spec; a training config's ``mix`` term
``adapter: veri-r1->stepgap``). This is the one place Veri-R1 builds on StepGap (``docs/architecture.md``).

:func:`veri_r1_trace` maps a Veri-R1 run onto StepGap's step tuple ``s_i = (c_i, q_i, e_i, a_i)``: the question
is the claim; ``c_i`` is the turn's plan and think text; ``q_i`` its search query; ``e_i`` the entries the
following information turn showed; and the answer step's conclusion hypothesis is the claim for SUPPORT, its
negation for REFUTE and none for NOT ENOUGH INFO (an abstention). Each trace step keeps the trajectory step's
index, segment and token span, so the checker's labels land back on the right tokens.
"""

from __future__ import annotations

import re

from evigraph.agents.stepgap.schemas import Trace, TraceStep
from evigraph.agents.veri_r1.data import information_entries
from evigraph.trajectory import Trajectory

__all__ = ("negated", "veri_r1_trace")

_REASONING = re.compile(r"<(plan|think)>(.*?)</\1>", re.DOTALL)


def negated(claim: str) -> str:
    """The hypothesis a REFUTE verdict concludes: the claim's negation, stated plainly.

    Example:
        >>> negated("Hog Island Light was first lit in 1853.")
        'It is not true that Hog Island Light was first lit in 1853.'
    """
    return f"It is not true that {claim.strip()}"


def veri_r1_trace(trajectory: Trajectory) -> Trace | None:
    """A Veri-R1 run as a StepGap trace (``None`` for a run without steps)."""
    claim = str(trajectory.input.get("claim") or "")
    if not claim or not trajectory.steps:
        return None
    label = (trajectory.output or {}).get("label")
    steps = []
    for step in trajectory.steps:
        index = step.segment_index
        text = trajectory.segments[index].text if index is not None else step.text
        reasoning = " ".join(body.strip() for _, body in _REASONING.findall(text))
        following = (
            trajectory.segments[index + 1] if index is not None and index + 1 < len(trajectory.segments) else None
        )
        evidence = (
            information_entries(following.text) if following is not None and following.origin == "environment" else []
        )
        answer = None
        if step.kind == "answer":
            answer = claim if label == "SUPPORT" else negated(claim) if label == "REFUTE" else None
        steps.append(
            TraceStep(
                reasoning=reasoning,
                query=step.payload.get("query"),
                evidence=evidence if step.kind != "answer" else [],
                answer=answer,
                text=text,
                segment_index=index,
                token_span=step.token_span,
                step_index=step.index,
            )
        )
    return Trace(id=trajectory.id, question=claim, steps=steps)
