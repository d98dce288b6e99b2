"""The one reward signature every agent offers: a trajectory and its gold answer → named components.

The trainer, ``evigraph reward`` and the graphs (when a run is given its gold answer) all call an agent's reward
the same way::

    rewards = reward(trajectory, gold)        # gold: an instance of reward.gold_schema
    rewards.value                             # the scalar GRPO optimises (the component reward.scalar names)
    rewards.as_dict()                         # every component, for logs and reports

An :class:`AgentReward` is a picklable callable object (Ray ships it to rollout workers) that declares which of
its components is the training scalar -- by declaration, not by a naming convention -- and the pydantic model
its gold answers validate into. Component functions stay pure functions of typed values in the agent's
``rewards.py``; the reward object only reads the trajectory and hands them their arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, NamedTuple, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, model_validator

from evigraph.trajectory import RewardComponent, Trajectory

__all__ = ("AgentReward", "ConfigurableReward", "Rewards", "Scored", "StepRewards", "TrajectoryReward")


class StepRewards(BaseModel):
    """One step's share of a process reward: where it sits in the policy's tokens and its named values."""

    model_config = ConfigDict(frozen=True)

    index: int
    token_span: tuple[int, int] | None = None
    """Half-open span into the whole token sequence (``Trajectory.steps[index].token_span``)."""
    values: dict[str, float]


class Rewards(BaseModel):
    """One trajectory's reward: its named components and which one is the training scalar."""

    model_config = ConfigDict(frozen=True)

    components: tuple[RewardComponent, ...]
    scalar: str
    """The name of the component the trainer optimises."""
    steps: tuple[StepRewards, ...] = ()
    """Process rewards: one entry per scored step (its token span and values), for dense credit assignment;
    empty for outcome-only rewards."""

    @model_validator(mode="after")
    def _scalar_is_a_component(self) -> Rewards:
        names = [c.type for c in self.components]
        if len(set(names)) != len(names):
            raise ValueError(f"component names must be unique, got {names}")
        if self.scalar not in names:
            raise ValueError(f"scalar {self.scalar!r} is not one of the components {names}")
        return self

    @classmethod
    def of(cls, values: Mapping[str, float], *, scalar: str, steps: Sequence[StepRewards] = ()) -> Rewards:
        """Named component values (in their order), the scalar's name and any per-step values."""
        components = tuple(RewardComponent(type=name, value=value) for name, value in values.items())
        return cls(components=components, scalar=scalar, steps=tuple(steps))

    @property
    def value(self) -> float:
        """The training scalar."""
        return next(c.value for c in self.components if c.type == self.scalar)

    def as_dict(self) -> dict[str, float]:
        return {c.type: c.value for c in self.components}

    def record(self) -> dict[str, Any]:
        """The JSON line ``evigraph reward`` prints (without the id): every component, the scalar's name and,
        for process rewards, the per-step values."""
        line: dict[str, Any] = {**self.as_dict(), "scalar": self.scalar}
        if self.steps:
            line["steps"] = [{"index": s.index, "token_span": s.token_span, **s.values} for s in self.steps]
        return line


@runtime_checkable
class AgentReward(Protocol):
    """What an agent's reward object provides (see the module docstring)."""

    __name__: str
    """The log key of the reward (``veri_r1_final``)."""
    scalar: str
    """The component the trainer optimises."""
    gold_schema: type[BaseModel]
    """The model gold answers validate into (from a data file's line, a graph's ``gold`` input or a training
    label)."""

    def __call__(self, trajectory: Trajectory, gold: Any) -> Rewards:
        """Score ``trajectory`` (its ``output``, or its transcript when it has none) against ``gold``."""
        ...


@runtime_checkable
class ConfigurableReward(AgentReward, Protocol):
    """A reward with run-time parameters (a preset, a weight): ``options`` becomes flags of ``evigraph reward``
    and a section of the training config, and :meth:`configure` returns the reward built with them."""

    options: type[BaseModel]

    def configure(self, options: BaseModel) -> AgentReward: ...


Reading = TypeVar("Reading")
Gold = TypeVar("Gold", bound=BaseModel)


class Scored(NamedTuple):
    """What a :class:`TrajectoryReward` scored: every component by name (the scalar's included, every sample the
    same names) and, for a process reward, the per-step values."""

    values: Mapping[str, float]
    steps: Sequence[StepRewards] = ()


class TrajectoryReward(Generic[Reading, Gold]):
    """The one shape of an agent's reward object: the gold answer validated once, the trajectory read once, the
    reading scored by the agent's pure component functions.

    A subclass sets ``scalar``, ``gold_schema`` and ``__name__`` and writes :meth:`read` (what the trajectory
    concluded: usually its last policy turn re-read against its own inputs, so a foreign system's completion
    scores exactly like ours) and :meth:`score`.
    """

    scalar: ClassVar[str]
    gold_schema: ClassVar[type[BaseModel]]
    __name__: str

    def read(self, trajectory: Trajectory) -> Reading:
        """What ``trajectory`` concluded, as the components read it (never raises on model text)."""
        raise NotImplementedError

    def score(self, reading: Reading, gold: Gold, trajectory: Trajectory) -> Scored:
        """The components of ``reading`` against ``gold`` (and per-step values of a process reward)."""
        raise NotImplementedError

    def __call__(self, trajectory: Trajectory, gold: Any) -> Rewards:
        target = gold if isinstance(gold, self.gold_schema) else self.gold_schema.model_validate(gold)
        scored = self.score(self.read(trajectory), target, trajectory)  # type: ignore[arg-type]
        return Rewards.of(scored.values, scalar=self.scalar, steps=scored.steps)
