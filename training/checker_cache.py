"""A frozen checker as a reward service, shared by every episode of a rollout actor.

A checker agent (StepGap) declares ``AgentSpec.checker``: a factory ``factory(judge, nli=...)`` returning a
:class:`FrozenChecker` -- how to key a trace, check it and put the checks back on the trajectory. This module
adds what every such checker needs around that, without knowing which agent it is:

- **Cached**: checks are keyed by the checker's content key of the trace, so identical rollouts -- frequent in a
  GRPO group -- are checked once, and concurrent requests for the same trace share one run (least recently used
  first out).
- **Versioned**: :attr:`CachedChecker.provenance` is the checker's own record (its name, the evigraph version,
  a hash of its config, the judge and the NLI); every reward computed from it records that, so a run's rewards
  can be recomputed and audited.
- **Frozen**: the judge is a generator of its own, never the policy being trained (the factory receives it).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from evigraph.trajectory import Trajectory

__all__ = ("CachedChecker", "FrozenChecker")


@runtime_checkable
class FrozenChecker(Protocol):
    """What a checker agent's factory returns (``AgentSpec.checker``)."""

    provenance: Mapping[str, str]
    """Names the checker, the evigraph version, its config hash, the judge and the NLI."""

    def key(self, trace: Any) -> str:
        """A hash of what the checker reads of ``trace`` (ids, spans and positions left out)."""
        ...

    async def check(self, trace: Any) -> Any:
        """Check ``trace`` (one run of the checker's graph)."""
        ...

    def annotate(self, trajectory: Trajectory, trace: Any, checks: Any) -> Trajectory:
        """A copy of ``trajectory`` carrying the checks where the checker's reward reads them."""
        ...


class CachedChecker:
    """``checker`` behind a content cache with shared in-flight runs (see the module docstring).

    Args:
        checker: the frozen checker (from a checker agent's ``AgentSpec.checker`` factory).
        cache_size: traces kept.
    """

    def __init__(self, checker: FrozenChecker, *, cache_size: int = 4096) -> None:
        self.checker = checker
        self.cache_size = cache_size
        self._done: OrderedDict[str, Any] = OrderedDict()
        self._running: dict[str, asyncio.Future[Any]] = {}
        self.hits = 0
        self.misses = 0

    @property
    def provenance(self) -> dict[str, str]:
        return dict(self.checker.provenance)

    @property
    def version(self) -> str:
        """The provenance as one string (a cache or log key)."""
        return "/".join(str(v) for v in self.checker.provenance.values())

    def annotate(self, trajectory: Trajectory, trace: Any, checks: Any) -> Trajectory:
        return self.checker.annotate(trajectory, trace, checks)

    async def check(self, trace: Any) -> Any:
        """The checks of ``trace``: from the cache, from a run already under way for the same trace, or new."""
        key = self.checker.key(trace)
        if key in self._done:
            self._done.move_to_end(key)
            self.hits += 1
            return self._done[key]
        running = self._running.get(key)
        if running is not None:
            self.hits += 1
            return await asyncio.shield(running)
        self.misses += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            checks = await self.checker.check(trace)
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
