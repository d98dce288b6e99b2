"""Veri-R1 in the synthetic world (:mod:`evigraph.corpora.world`): demonstration replies for a warm start, and a
deterministic step checker that gives StepGap's labels to Veri-R1 runs there.

**Demonstrations.** :func:`demonstration` writes the replies of one run, turn by turn, in Veri-R1's protocol:
a plan and a search for the person, a think that copies the fact the claim is about, and either a second search
for the firm (2-hop claims) or the answer. A think that checks a fact names the fact read and the value the claim
states side by side, so the label follows from two nearby words. ``second_hop=False`` on a 2-hop claim writes the
*lazy* run: it answers right after the first search, NOT ENOUGH INFO, since the firm's town was never read. A warm
start that mostly skips the second hop knows how to check a fact it has in front of it but rarely goes and gets
the missing one: that is what RL has to discover.

**Checker.** :class:`WorldChecker` is a frozen checker (``evigraph.training.checker_cache.FrozenChecker``) for
the ``veri-r1->stepgap`` process term: it labels each step of a Veri-R1 run (read as a StepGap trace) from the
world's facts, no model involved:

- a search whose query names no entity on the claim's path, or repeats an earlier query, and a turn that neither
  searches nor answers (it brings no evidence; left *no-gap*, its +0.20 paid for every broken turn and a policy
  learned to write nothing else, measured): **IE**;
- a think that states a fact the world contradicts (a wrong town or firm): **CC**;
- an answer given before every entity on the path was retrieved (the second hop skipped): **MB**;
- anything else: **no-gap**.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evigraph.agents.stepgap.annotation import annotated
from evigraph.agents.stepgap.schemas import StepCheck, Trace, TraceCheck, TraceStep
from evigraph.corpora.world import Claim, World, claim_path
from evigraph.trajectory import Trajectory
from evigraph.version import __version__

__all__ = ("WorldChecker", "demonstration", "world_checker")

_FACTS: tuple[tuple[re.Pattern[str], Callable[[World, str], str | None]], ...] = (
    (re.compile(r"(\w+) lives in (\w+)"), lambda w, name: (p := w.person(name)) and p.town),
    (re.compile(r"(\w+) works for (\w+)"), lambda w, name: (p := w.person(name)) and p.firm),
    (re.compile(r"(\w+) is based in (\w+)"), lambda w, name: (f := w.firm(name)) and f.town),
)
"""The facts a think may state, each with the world's true value of it (``None``: not a known entity)."""


def _answer(label: str, cited: list[str]) -> str:
    evidence = ", ".join(f"[[{name}]]" for name in cited)
    return f"<answer>\nLabel: {label}\nEvidence: {evidence}\n</answer>"


def demonstration(claim: Claim, world: World, *, second_hop: bool = True) -> list[str]:
    """The replies of one run on ``claim``, one per turn (see the module docstring).

    Example:
        >>> from evigraph.corpora.world import WorldConfig, build_world, make_claims
        >>> world = build_world(WorldConfig(seed=3, people=4, firms=2, towns=3))
        >>> claim = next(c for c in make_claims(world, world.people, per_person=4, seed=0, prefix="c") if c.hops == 2)
        >>> len(demonstration(claim, world)), len(demonstration(claim, world, second_hop=False))
        (3, 2)
    """
    person = world.person(claim.path[0])
    if person is None:
        raise ValueError(f"claim {claim.id}: {claim.path[0]!r} is not a person of this world")
    opening = f"<plan>Look up {person.name}.</plan>\n<search>{person.name}</search>"
    said = f"; the claim says {claim.stated}.</think>\n"
    if claim.hops == 1:
        return [opening, f"<think>{person.name} lives in {person.town}{said}" + _answer(claim.label, [person.name])]
    firm = world.firm(person.firm)
    assert firm is not None
    step = f"<think>{person.name} works for {firm.name}.</think>\n"
    if not second_hop:
        return [opening, step + _answer("NOT ENOUGH INFO", [person.name])]
    return [
        opening,
        step + f"<search>{firm.name}</search>",
        f"<think>{firm.name} is based in {firm.town}{said}" + _answer(claim.label, [person.name, firm.name]),
    ]


def _answers(step: TraceStep) -> bool:
    """The step answered (an abstention too: the trace leaves its conclusion empty, its text keeps the block)."""
    return step.answer is not None or "<answer>" in (step.text or "")


def _contradicts(world: World, reasoning: str) -> str | None:
    """The first fact stated in ``reasoning`` that the world contradicts, as a rationale (``None``: none)."""
    for pattern, truth in _FACTS:
        for subject, value in pattern.findall(reasoning):
            true = truth(world, subject)
            if true is not None and true != value:
                return f"{subject}: {value} stated, the world says {true}"
    return None


class WorldChecker:
    """StepGap's labels for Veri-R1 runs in one world, by rule (see the module docstring).

    Args:
        world: the world's ``world.json`` (written by :func:`evigraph.corpora.world.write_world`) or the world.
    """

    def __init__(self, world: str | Path | World) -> None:
        if not isinstance(world, World):
            world = World.model_validate_json(Path(world).read_text(encoding="utf-8"))
        self.world = world
        digest = hashlib.sha256(world.model_dump_json().encode()).hexdigest()[:12]
        self.provenance = {"checker": "world-rules", "evigraph": __version__, "config": digest, "judge": "none"}

    def key(self, trace: Trace) -> str:
        content = [trace.question, [(s.reasoning, s.query, s.answer, [e.id for e in s.evidence]) for s in trace.steps]]
        return hashlib.sha256(json.dumps(content).encode()).hexdigest()

    async def check(self, trace: Trace) -> TraceCheck:
        return self.check_now(trace)

    def check_now(self, trace: Trace) -> TraceCheck:
        """The checks of ``trace`` (synchronous; :meth:`check` is the service's awaitable form)."""
        path = claim_path(self.world, trace.question) or []
        retrieved: set[str] = set()
        queries: set[str] = set()
        checks = []
        for index, step in enumerate(trace.steps):
            label, why = "no-gap", "consistent with the world"
            contradiction = _contradicts(self.world, step.reasoning)
            query = " ".join((step.query or "").split()).lower()
            if contradiction is not None:
                label, why = "CC", contradiction
            elif not _answers(step) and (query in queries or not any(n.lower() in query for n in path)):
                label = "IE"
                why = (
                    "neither searches nor answers"
                    if step.query is None
                    else "repeats an earlier query"
                    if query in queries
                    else "names nothing on the claim's path"
                )
            elif _answers(step) and not set(path) <= retrieved:
                label, why = "MB", f"answered before retrieving {sorted(set(path) - retrieved)}"
            if step.query is not None:
                queries.add(query)
            retrieved |= {e.id for e in step.evidence}
            checks.append(
                StepCheck(
                    index=index,
                    kind=step.kind,
                    label=label,  # type: ignore[arg-type]
                    confidence=1.0,
                    rationale=why,
                    pipeline_path=f"rule:{label}",
                    token_span=step.token_span,
                )
            )
        return TraceCheck(id=trace.id, question=trace.question, steps=checks, judge="world-rules", nli=None)

    def annotate(self, trajectory: Trajectory, trace: Trace, checks: TraceCheck) -> Trajectory:
        return annotated(trajectory, trace, checks)


def world_checker(*, world: str, **_: Any) -> WorldChecker:
    """The factory a training config's ``mix`` term names (``checker: evigraph.agents.veri_r1.world:world_checker``,
    ``checker_options: {world: PATH/world.json}``)."""
    return WorldChecker(world)
