"""Per-step advantage modes inside OpenRLHF's trainer, without a fork.

OpenRLHF 0.11.2 gives every action token of a sample the same group-normalised advantage, computed in
``RemoteExperienceMaker.compute_advantages_and_returns`` inside the trainer's Ray actor. :func:`install`
wraps that method: the original runs first (length penalties, KL, clipping, returns -- all unchanged), then
each sample's advantages and returns move by ``ours - stock``, where ``ours`` is the chosen mode of
:mod:`evigraph.training.advantages` and ``stock`` is plain GRPO on the same rewards. So mode ``grpo`` (or a
process coefficient of 0) leaves OpenRLHF's numbers exactly as they were, and every other mode changes only
the outcome part of the advantage.

Whatever the mode, the wrapper also logs the advantage-collapse diagnostic (SEVA spec §3.10):
``info[ZERO_STD_KEY]`` is 1.0 for every sample whose prompt group's rewards are all equal (group-normalised
advantages exactly 0), so its logged sample mean is the share of such groups in the step.

The per-step lists arrive in each experience's ``info`` (:mod:`evigraph.training.samples`); CAPO's negative
class in ``info[NEGATIVE_KEY]``. Delivery: Ray's ``worker_process_setup_hook`` runs :func:`setup_hook` in every
worker; it reads the mode from :data:`CONFIG_ENV` and patches the experience maker when (and only when) that
module is imported, so rollout workers, which never import it, stay untouched. The patch is written against
OpenRLHF :data:`OPENRLHF_VERSION` and refuses any other.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from evigraph.errors import ConfigError
from evigraph.training.advantages import AdvantageConfig, Rollout, advantages
from evigraph.training.samples import (
    NEGATIVE_KEY,
    STEP_INDEX_KEY,
    STEP_TYPE_PREFIX,
    STEP_VALUE_KEY,
    steps_from_lists,
    typed_values,
)

__all__ = (
    "CONFIG_ENV",
    "NEGATIVE_KEY",
    "OPENRLHF_VERSION",
    "TARGET_MODULE",
    "ZERO_STD_KEY",
    "adjust_advantages",
    "install",
    "setup_hook",
    "wrap",
)

logger = logging.getLogger(__name__)

OPENRLHF_VERSION = "0.11.2"
TARGET_MODULE = "openrlhf.trainer.ppo_utils.experience_maker"
CONFIG_ENV = "EVIGRAPH_ADVANTAGE_CONFIG"
"""JSON of an :class:`~evigraph.training.advantages.AdvantageConfig`, set in Ray's ``runtime_env``."""
ZERO_STD_KEY = "evigraph_zero_std_group"
"""``info`` key: 1.0 when the sample's group has zero reward variance; its logged mean is the share of groups."""
_WRAPPED = "__evigraph_advantage_mode__"


def _row(value: Any, j: int) -> list[float]:
    row = value[j]
    return row.tolist() if hasattr(row, "tolist") else list(row)


def adjust_advantages(experiences: Sequence[Any], config: AdvantageConfig, n_samples_per_prompt: int) -> None:
    """Move each experience's ``advantages`` and ``returns`` (set by OpenRLHF) by ``ours - stock`` on its
    action tokens, in place. Rows are grouped by ``index // n_samples_per_prompt``, as OpenRLHF groups them."""
    rollouts: list[Rollout] = []
    where: list[tuple[Any, int]] = []
    for experience in experiences:
        info = experience.info
        width = experience.action_mask.shape[-1]
        for j, index in enumerate(experience.index):
            steps: list[tuple[int, int, float]] = []
            types: list[dict[str, float]] = []
            if STEP_INDEX_KEY in info and STEP_VALUE_KEY in info:
                index_row, value_row = _row(info[STEP_INDEX_KEY], j)[:width], _row(info[STEP_VALUE_KEY], j)[:width]
                steps = steps_from_lists(index_row, value_row)
                typed = {
                    k[len(STEP_TYPE_PREFIX) :]: _row(v, j)[:width]
                    for k, v in info.items()
                    if k.startswith(STEP_TYPE_PREFIX)
                }
                types = typed_values(index_row, typed) if typed else []
            negative = NEGATIVE_KEY in info and bool(info[NEGATIVE_KEY][j])
            rollouts.append(
                Rollout(
                    group=int(index) // n_samples_per_prompt,
                    outcome=float(experience.rewards[j]),
                    action_mask=tuple(int(m) for m in _row(experience.action_mask, j)),
                    steps=tuple(steps),
                    step_types=tuple(types),
                    negative=negative,
                )
            )
            where.append((experience, j))
    stock = advantages(rollouts, AdvantageConfig(mode="grpo"))
    ours = advantages(rollouts, config)
    for (experience, j), mine, base in zip(where, ours, stock, strict=True):
        delta = [a - b for a, b in zip(mine, base, strict=True)]
        shift = experience.advantages.new_tensor(delta)
        experience.advantages[j] += shift
        experience.returns[j] += shift


def mark_zero_std_groups(experiences: Sequence[Any], n_samples_per_prompt: int) -> None:
    """Set ``info[ZERO_STD_KEY]`` on every experience: per sample, 1.0 when all rewards of its group are equal."""
    groups: dict[int, list[float]] = {}
    for experience in experiences:
        for j, index in enumerate(experience.index):
            groups.setdefault(int(index) // n_samples_per_prompt, []).append(float(experience.rewards[j]))
    collapsed = {g for g, rewards in groups.items() if max(rewards) == min(rewards)}
    for experience in experiences:
        flags = [float(int(index) // n_samples_per_prompt in collapsed) for index in experience.index]
        experience.info[ZERO_STD_KEY] = experience.rewards.new_tensor(flags)


def _adjusts(config: AdvantageConfig) -> bool:
    return not (config.mode == "grpo" or (config.mode == "process_additive" and config.coef == 0))


def wrap(original: Callable[..., Any], config: AdvantageConfig) -> Callable[..., Any]:
    """``compute_advantages_and_returns`` with the diagnostic logged and the mode applied after the original
    (idempotent)."""
    if getattr(original, _WRAPPED, None) is not None:
        return original

    def compute_advantages_and_returns(self: Any, experiences: list[Any]) -> list[Any]:
        experiences = original(self, experiences)
        args = self.strategy.args
        mark_zero_std_groups(experiences, args.rollout.n_samples_per_prompt)
        if not _adjusts(config):
            return experiences
        if args.algo.advantage.estimator != "group_norm":
            raise ConfigError(f"advantage mode {config.mode!r} needs --algo.advantage.estimator group_norm")
        adjust_advantages(experiences, config, args.rollout.n_samples_per_prompt)
        return experiences

    setattr(compute_advantages_and_returns, _WRAPPED, config.mode)
    compute_advantages_and_returns.__wrapped__ = original  # type: ignore[attr-defined]
    return compute_advantages_and_returns


def _patch(module: Any, config: AdvantageConfig) -> None:
    version = _openrlhf_version()
    if version != OPENRLHF_VERSION:
        raise ConfigError(
            f"evigraph's advantage patch targets openrlhf=={OPENRLHF_VERSION}, found {version}: pin it "
            f"(pip install openrlhf=={OPENRLHF_VERSION}) or train with --advantage grpo"
        )
    maker = module.RemoteExperienceMaker
    maker.compute_advantages_and_returns = wrap(maker.compute_advantages_and_returns, config)
    logger.info("advantage mode %s installed in %s", config.mode, TARGET_MODULE)


def _openrlhf_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openrlhf")
    except PackageNotFoundError:
        return None


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches :data:`TARGET_MODULE` right after its body runs (only that module; every other import is left
    to the other finders)."""

    def __init__(self, config: AdvantageConfig) -> None:
        self.config = config

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET_MODULE:
            return None
        sys.meta_path.remove(self)  # resolve the real spec without finding ourselves again
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        config = self.config

        def exec_and_patch(module: Any) -> None:
            exec_module(module)
            _patch(module, config)

        loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return spec


def install(config: AdvantageConfig) -> None:
    """Apply ``config``'s mode (and the zero-variance diagnostic) to OpenRLHF's experience maker: now if it is
    imported, else when it is."""
    module = sys.modules.get(TARGET_MODULE)
    if module is not None:
        _patch(module, config)
        return
    if not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport(config))


def setup_hook() -> None:
    """Ray's ``worker_process_setup_hook``: install the mode :data:`CONFIG_ENV` names (nothing when unset)."""
    raw = os.environ.get(CONFIG_ENV)
    if raw:
        install(AdvantageConfig.model_validate(json.loads(raw)))
