"""StepGap as a frozen checker of other agents' runs during training (``AgentSpec.checker``).

The trainer wraps :class:`StepGapChecker` in its generic cache (:class:`~evigraph.training.checker_cache.
CachedChecker`); this module says what is StepGap's own: the content key of a trace, one run of the checker
graph over a frozen judge and NLI, and where the checks go on the checked agent's trajectory.

- **Frozen**: the judge is a generator of its own (an OpenAI-compatible server such as a ``vllm serve`` of the
  teacher, or any other backend), never the policy being trained; the NLI is a cross-encoder checkpoint or the
  judge's fallback.
- **Batched**: the NLI pairs of concurrently checked traces reach the engine as one batch
  (:class:`~evigraph.tools.nli.CoalescingNLI`); the judge's server batches its own requests. The NLI engine
  caches (premise, hypothesis, model) pairs itself (:mod:`evigraph.tools.nli`).

It sits on the job floor (it builds the checker graph); see ``docs/architecture.md``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from evigraph.agents.stepgap.annotation import annotated
from evigraph.agents.stepgap.schemas import StepGapConfig, Trace, TraceCheck
from evigraph.generators.base import Generator
from evigraph.graphs.kit.context import RunContext
from evigraph.graphs.stepgap_checker import build_checker_graph
from evigraph.tools.nli import CoalescingNLI
from evigraph.trajectory import Trajectory
from evigraph.version import __version__

__all__ = ("StepGapChecker", "annotated", "trace_key")


def trace_key(trace: Trace) -> str:
    """A hash of what the checker reads of ``trace`` (ids, spans and positions are left out)."""
    content = {
        "question": trace.question,
        "steps": [
            {
                "text": step.text,
                "reasoning": step.reasoning,
                "query": step.query,
                "answer": step.answer,
                "evidence": [[e.id, e.title, e.text] for e in step.evidence],
            }
            for step in trace.steps
        ],
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class StepGapChecker:
    """StepGap's checker over a frozen ``judge`` and ``nli`` (a
    :class:`~evigraph.training.checker_cache.FrozenChecker`).

    Args:
        judge: the LLM for stages A-C.
        nli: the NLI engine for stages D-E (``None``: the judge's logprob fallback).
        config: the checker's options.
    """

    def __init__(self, judge: Generator, *, nli: Any | None = None, config: StepGapConfig | None = None) -> None:
        self.judge = judge
        self.config = config or StepGapConfig()
        # Rollouts check their traces concurrently: their NLI pairs go to the engine as one batch per round.
        self.nli = CoalescingNLI(nli) if nli is not None else None
        self.graph = build_checker_graph(None, nli=self.nli, config=self.config)
        self.provenance = {
            "checker": "stepgap",
            "evigraph": __version__,
            "config": hashlib.sha256(self.config.model_dump_json().encode()).hexdigest()[:12],
            "judge": judge.name,
            "nli": getattr(nli, "engine", None) or f"generator:{judge.name}",
        }

    def key(self, trace: Trace) -> str:
        return trace_key(trace)

    async def check(self, trace: Trace) -> TraceCheck:
        result = await self.graph.ainvoke({"trace": trace}, context=RunContext(generator=self.judge))
        return result["checks"]

    def annotate(self, trajectory: Trajectory, trace: Trace, checks: TraceCheck) -> Trajectory:
        return annotated(trajectory, trace, checks)
