"""What ``evigraph train --help`` lists: every shipped config, its agent's rewards and their presets, read from the
configs and the agent registry (never a hand-kept list), and ``--reward NAME`` resolved against them.

A reward's presets are the values of each ``Literal`` field of its ``options`` model (StepGap's ``preset``:
``typed_shape``, ``binary_gap`` ...), so ``--reward typed_shape`` means ``--set reward_options.preset=typed_shape``
and ``--reward span-only`` means ``--set reward=span-only``.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError

__all__ = ("ConfigEntry", "RewardEntry", "catalogue", "render_catalogue", "reward_overrides", "rewards_of")


class RewardEntry(BaseModel):
    """One of an agent's rewards and its presets (option field → allowed values)."""

    model_config = ConfigDict(frozen=True)

    name: str
    presets: dict[str, tuple[str, ...]] = {}


class ConfigEntry(BaseModel):
    """A shipped config: its agent, the reward it trains with (and that reward's options), the agent's rewards."""

    model_config = ConfigDict(frozen=True)

    name: str
    agent: str
    reward: str
    reward_options: dict[str, Any] = {}
    rewards: tuple[RewardEntry, ...]
    searches: bool


def rewards_of(agent: Any) -> tuple[RewardEntry, ...]:
    """A loaded agent's rewards with their presets (the ``Literal`` fields of each reward's ``options``)."""
    entries = []
    for name, reward in agent.rewards.items():
        options = getattr(reward, "options", None)
        presets: dict[str, tuple[str, ...]] = {}
        if isinstance(options, type) and issubclass(options, BaseModel):
            for field, info in options.model_fields.items():
                if typing.get_origin(info.annotation) is typing.Literal:
                    presets[field] = tuple(str(v) for v in typing.get_args(info.annotation))
        entries.append(RewardEntry(name=name, presets=presets))
    return tuple(entries)


def catalogue() -> list[ConfigEntry]:
    """Every shipped GRPO config with its agent's rewards (loads each agent once)."""
    from evigraph.registry import get_agent
    from evigraph.training.config import builtin_configs, load_train_config

    entries = []
    for name in builtin_configs():
        config = load_train_config(name)
        agent = get_agent(config.agent).load()
        entries.append(
            ConfigEntry(
                name=name,
                agent=config.agent,
                reward=config.reward or next(iter(agent.rewards), ""),
                reward_options=config.reward_options,
                rewards=rewards_of(agent),
                searches="search" in agent.spec.resources,
            )
        )
    return entries


def render_catalogue(entries: list[ConfigEntry]) -> str:
    """The ``--help`` epilog: one paragraph per config (no square brackets: rich reads them as markup).

    Example:
        >>> entry = ConfigEntry(name="x", agent="a", reward="typed", reward_options={"preset": "typed_shape"},
        ...     rewards=(RewardEntry(name="typed", presets={"preset": ("binary_gap", "typed_shape")}),), searches=True)
        >>> print(render_catalogue([entry]).splitlines()[1])  # doctest: +NORMALIZE_WHITESPACE
        x (agent a, searches: --corpus or --retriever-url): reward typed (preset=typed_shape);
        rewards: typed (preset: binary_gap | typed_shape)
    """
    lines = ["Shipped configs (--reward NAME picks a reward or a preset):"]
    for entry in entries:
        options = ", ".join(f"{k}={v}" for k, v in entry.reward_options.items())
        rewards = "; ".join(
            reward.name + "".join(f" ({field}: {' | '.join(values)})" for field, values in reward.presets.items())
            for reward in entry.rewards
        )
        search = ", searches: --corpus or --retriever-url" if entry.searches else ""
        default = f"{entry.reward} ({options})" if options else entry.reward
        lines.append(f"{entry.name} (agent {entry.agent}{search}): reward {default}; rewards: {rewards}")
    return "\n".join(lines)


def reward_overrides(agent: Any, reward: str | None, choice: str) -> list[str]:
    """The ``--set`` overrides ``--reward CHOICE`` means for ``agent`` whose config trains with ``reward``: a
    reward's name selects it; a preset value of the configured reward's options sets that option.

    Raises:
        ConfigError: ``choice`` is neither (the message lists both).
    """
    entries = rewards_of(agent)
    if any(entry.name == choice for entry in entries):
        return [f"reward={choice}"]
    current = next((e for e in entries if e.name == reward), entries[0] if entries else None)
    for field, values in (current.presets if current else {}).items():
        if choice in values:
            return [f"reward_options.{field}={choice}"]
    presets = sorted({v for values in (current.presets if current else {}).values() for v in values})
    raise ConfigError(
        f"--reward {choice!r}: {agent.name} has rewards {', '.join(e.name for e in entries) or 'none'}"
        + (f" and presets {', '.join(presets)}" if presets else ""),
        source="--reward",
    )
