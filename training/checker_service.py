"""A frozen checker as a reward service: StepGap's checker graph with its own judge and NLI, shared by every
episode of a rollout actor.

- **Frozen**: the judge is a generator of its own (an OpenAI-compatible server such as a ``vllm serve`` of the
  teacher, or any other backend), never the policy being trained; the NLI is a cross-encoder checkpoint or the
  judge's fallback.
- **Batched**: the NLI pairs of concurrently checked traces reach the engine as one batch
  (:class:`~evigraph.tools.nli.CoalescingNLI`); the judge's server batches its own requests.
- **Cached**: checks are keyed by the trace's content (question, and per step its text, query, evidence and
  hypothesis) and the service's version, so identical rollouts -- frequent in a GRPO group -- are checked once,
  and concurrent requests for the same trace share one run. The NLI engine caches (premise, hypothesis, model)
  pairs itself (:mod:`evigraph.tools.nli`).
- **Versioned**: :attr:`CheckerService.provenance` names the checker, the evigraph version, a hash of the
  checker config, the judge and the NLI; every reward computed from it records that, so a run's rewards can be
  recomputed and audited.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from typing import Any

from evigraph import __version__
from evigraph.agents.stepgap.schemas import StepGapConfig, Trace, TraceCheck
from evigraph.generators.base import Generator
from evigraph.graphs.context import RunContext
from evigraph.graphs.stepgap_checker import build_checker_graph
from evigraph.tools.nli import CoalescingNLI
from evigraph.trajectory import Trajectory

__all__ = ("CheckerService", "annotated", "trace_key")


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


class CheckerService:
    """StepGap's checker over a frozen ``judge`` and ``nli``, with a content cache (see the module docstring).

    Args:
        judge: the LLM for stages A-C.
        nli: the NLI engine for stages D-E (``None``: the judge's logprob fallback).
        config: the checker's options.
        cache_size: traces kept (least recently used first out).
    """

    def __init__(
        self, judge: Generator, *, nli: Any | None = None, config: StepGapConfig | None = None, cache_size: int = 4096
    ) -> None:
        self.judge = judge
        self.config = config or StepGapConfig()
        # Rollouts check their traces concurrently: their NLI pairs go to the engine as one batch per round.
        self.nli = CoalescingNLI(nli) if nli is not None else None
        self.graph = build_checker_graph(None, nli=self.nli, config=self.config)
        self.cache_size = cache_size
        self._done: OrderedDict[str, TraceCheck] = OrderedDict()
        self._running: dict[str, asyncio.Future[TraceCheck]] = {}
        self.hits = 0
        self.misses = 0
        config_hash = hashlib.sha256(self.config.model_dump_json().encode()).hexdigest()[:12]
        self.provenance = {
            "checker": "stepgap",
            "evigraph": __version__,
            "config": config_hash,
            "judge": judge.name,
            "nli": getattr(nli, "engine", None) or f"generator:{judge.name}",
        }
        self.version = f"stepgap/{__version__}/{config_hash}/{judge.name}/{self.provenance['nli']}"

    async def check(self, trace: Trace) -> TraceCheck:
        """The checks of ``trace``: from the cache, from a run already under way for the same trace, or new."""
        key = trace_key(trace)
        if key in self._done:
            self._done.move_to_end(key)
            self.hits += 1
            return self._done[key]
        running = self._running.get(key)
        if running is not None:
            self.hits += 1
            return await asyncio.shield(running)
        self.misses += 1
        future: asyncio.Future[TraceCheck] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            result = await self.graph.ainvoke({"trace": trace}, context=RunContext(generator=self.judge))
            checks: TraceCheck = result["checks"]
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: waiting callers re-raise it, nobody logs it as lost
            raise
        finally:
            self._running.pop(key, None)
        future.set_result(checks)
        self._done[key] = checks
        while len(self._done) > self.cache_size:
            self._done.popitem(last=False)
        return checks


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
