"""Step adapters: one agent's run as another agent's checker reads it, so a checker's process reward can score a
different agent's trajectories (StepGap's typed reward on Veri-R1 rollouts).

:func:`veri_r1_trace` maps a Veri-R1 run onto StepGap's step tuple ``s_i = (c_i, q_i, e_i, a_i)``: the question
is the claim; ``c_i`` is the turn's plan and think text; ``q_i`` its search query; ``e_i`` the entries the
following information turn showed; and the answer step's conclusion hypothesis is the claim for SUPPORT, its
negation for REFUTE and none for NOT ENOUGH INFO (an abstention). Each trace step keeps the trajectory step's
index, segment and token span, so the checker's labels land back on the right tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from evigraph.agents.stepgap.schemas import Trace, TraceStep
from evigraph.agents.veri_r1.data import information_entries
from evigraph.trajectory import Trajectory

__all__ = ("ADAPTERS", "adapter", "negated", "veri_r1_trace")

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


ADAPTERS: dict[tuple[str, str], Callable[[Trajectory], Trace | None]] = {("veri-r1", "stepgap"): veri_r1_trace}
"""``(agent, checker)`` → adapter."""


def adapter(name: str) -> Callable[[Trajectory], Trace | None]:
    """The adapter called ``"AGENT->CHECKER"``.

    Raises:
        KeyError: no such adapter (the message lists them).
    """
    source, _, target = name.partition("->")
    found = ADAPTERS.get((source.strip(), target.strip()))
    if found is None:
        known = ", ".join(f"{a}->{b}" for a, b in ADAPTERS)
        raise KeyError(f"no step adapter {name!r}; known: {known}")
    return found
