"""Mixing an agent's own reward with checker-based process rewards (the ``mix`` section of a training config).

A sample's reward is ``outcome_weight × (the agent's outcome)`` (plus the process terms when
``process_in_scalar``). Each process term scores this run with another agent's reward -- through a step adapter
and a frozen checker (StepGap's typed reward on Veri-R1 rollouts: ``veri-r1->stepgap``) -- and adds ``weight ×``
one of its per-step values to each step. The trainer knows no agent: ``adapter: AGENT->CHECKER`` finds the
reader in AGENT's spec (``AgentSpec.step_readers[CHECKER]``) and the frozen checker in CHECKER's
(``AgentSpec.checker``). Each term is its own reward *type*: its per-step values travel in
their own list, so the trainer can normalise types separately (``process_additive``), and its scalar is logged
under its name.

```yaml
mix:
  outcome_weight: 1.0
  process:
    - name: gap                   # the type name (log key, per-type list)
      adapter: veri-r1->stepgap   # whose steps, read as which checker's steps
      reward: typed               # the checker agent's reward
      options: {preset: typed_shape, lam: 1.0}
      value: bracket              # which per-step value of it
      em_from: label              # the agent's component that says the outcome was right (> 0)
      weight: 0.5
      judge: openai:teacher@http://127.0.0.1:8001/v1
      judge_settings: {max_new_tokens: 256}   # any generator setting but the model (optional)
      nli: /models/deberta-v3-large-nli
```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evigraph.errors import ConfigError
from evigraph.rewards import AgentReward, Rewards
from evigraph.training.checker_cache import CachedChecker
from evigraph.trajectory import Trajectory

__all__ = ("MixedReward", "ProcessTerm", "RewardMix", "adapter", "build_mix", "step_adapters")


def step_adapters() -> dict[str, Callable[[Trajectory], Any]]:
    """Every ``"AGENT->CHECKER"`` reader the registered agents declare (``AgentSpec.step_readers``)."""
    from evigraph.imports import resolve
    from evigraph.registry import load_agents

    agents, _ = load_agents()
    return {
        f"{name}->{checker}": resolve(path)
        for name, spec in agents.items()
        for checker, path in spec.step_readers.items()
    }


def adapter(name: str) -> Callable[[Trajectory], Any]:
    """The reader called ``"AGENT->CHECKER"``: AGENT's runs as CHECKER's traces.

    Raises:
        ConfigError: no registered agent declares it (the message lists those that exist).
    """
    from evigraph.registry import get_agent

    source, _, target = (part.strip() for part in name.partition("->"))
    readers = get_agent(source).load().step_readers if source else {}
    if target not in readers:
        known = ", ".join(step_adapters()) or "none"
        raise ConfigError(f"no step adapter {name!r}; known: {known}")
    return readers[target]


class ProcessTerm(BaseModel):
    """One checker-based process reward (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    adapter: str
    reward: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    value: str = "bracket"
    em_from: str
    weight: float = 1.0
    judge: str | None = None
    """The checker agent's frozen judge (a model spec); not with ``checker``."""
    checker: str | None = None
    """A frozen checker of your own instead of the checker agent's judge-based one: ``module:factory``, called with
    ``checker_options`` (e.g. the synthetic world's rule checker, ``evigraph.agents.veri_r1.world:world_checker``)."""
    checker_options: dict[str, Any] = Field(default_factory=dict)
    judge_settings: dict[str, Any] = Field(default_factory=dict)
    """The judge's generator settings besides its model (``max_new_tokens``, ``temperature`` ...): a small
    judge on a CPU is affordable only with a short token cap."""
    nli: str | None = None

    @field_validator("judge_settings")
    @classmethod
    def _settings_are_generator_settings(cls, settings: dict[str, Any]) -> dict[str, Any]:
        from evigraph.config import GeneratorConfig

        if "model" in settings:
            raise ValueError("the judge's model is `judge`, not a judge_settings key")
        GeneratorConfig.model_validate({"model": "x", **settings})
        return settings

    @model_validator(mode="after")
    def _one_checker(self) -> ProcessTerm:
        if (self.judge is None) == (self.checker is None):
            raise ValueError(f"process term {self.name!r}: give a judge (the checker agent's checker) or a checker")
        return self


class RewardMix(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome_weight: float = 1.0
    process: list[ProcessTerm] = Field(default_factory=list)
    process_in_scalar: bool = False
    """Also add the weighted step values to the sample's scalar reward (the only way they act under plain
    ``grpo``; with ``process_additive`` or the StepGap modes they act per step and must stay out of it)."""


class MixedReward:
    """The mixed reward of one run: ``await mixed(trajectory, own_rewards)`` → (scalar, per-step typed values,
    logs). Built once per rollout actor (:func:`build_mix`); the checker services are shared by its episodes."""

    def __init__(self, mix: RewardMix, terms: list[tuple[ProcessTerm, Any, AgentReward, CachedChecker]]) -> None:
        self.mix = mix
        self.terms = terms

    async def __call__(
        self, trajectory: Trajectory, own: Rewards, outcome: float
    ) -> tuple[float, dict[int, dict[str, float]], dict[str, float]]:
        """``own`` is the agent's reward on the run and ``outcome`` the component chosen as its outcome.

        Returns:
            The sample's reward, per trajectory-step index its typed values, and scalar logs.
        """
        total = self.mix.outcome_weight * outcome
        per_step: dict[int, dict[str, float]] = {}
        logs: dict[str, float] = {}
        for term, to_trace, reward, service in self.terms:
            trace = to_trace(trajectory)
            scored = 0.0
            if trace is not None:
                checks = await service.check(trace)
                em = float(own.as_dict().get(term.em_from, 0.0) > 0)
                checked = service.annotate(trajectory, trace, checks)
                rewards = reward(checked, reward.gold_schema.model_validate({"em": em}))
                scored = rewards.value
                for step in rewards.steps:
                    if term.value in step.values:
                        per_step.setdefault(step.index, {})[term.name] = term.weight * step.values[term.value]
            logs[f"{term.name}/return"] = scored
            if self.mix.process_in_scalar:
                total += sum(v.get(term.name, 0.0) for v in per_step.values())
        return total, per_step, logs


def build_mix(mix: RewardMix) -> MixedReward:
    """Resolve the terms: the adapter, the checker agent's reward (configured), a frozen checker service."""
    from evigraph.config import GeneratorConfig
    from evigraph.generators.factory import make_generator
    from evigraph.registry import get_agent
    from evigraph.tools.nli import make_nli

    terms = []
    for term in mix.process:
        to_trace = adapter(term.adapter)
        checker_agent = get_agent(term.adapter.partition("->")[2].strip()).load()
        reward = checker_agent.reward(term.reward)
        if term.options:
            reward = reward.configure(reward.options.model_validate(term.options))  # type: ignore[attr-defined]
        if term.checker is not None:
            from evigraph.imports import resolve

            service = CachedChecker(resolve(term.checker)(**term.checker_options))
        else:
            judge = make_generator(GeneratorConfig.model_validate({**term.judge_settings, "model": term.judge}))
            factory = checker_agent.require("checker")
            service = CachedChecker(factory(judge, nli=make_nli(term.nli) if term.nli else None))
        terms.append((term, to_trace, reward, service))
    return MixedReward(mix, terms)
