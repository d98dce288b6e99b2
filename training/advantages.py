"""Per-token advantages for group-relative training, as pure functions (no torch, no I/O).

Every mode reads the same per-sample record, :class:`Rollout`: its prompt group, its outcome reward, its
action mask (1 on policy tokens) and its steps as ``(start, end, value)`` over the same token positions; it
returns one advantage per token (0 where the mask is 0).

- ``grpo``: stock GRPO (OpenRLHF's ``group_norm``), ``(r_i - mean_g) / (std_g + eps)`` on every action token.
- ``capo``: ``grpo``, times ``alpha`` for samples whose gold is the negative class (RLSeek's non-hallucinated).
- ``stepgap_dense`` (StepGap §3.4): token return ``R_t = r_i + lam * value(step(t))``, standardised with the
  mean and std pooled over every action token of the group.
- ``stepgap_sequence`` (StepGap §3.3 as one scalar): ``R_i = r_i + lam * sum(step values)``, then ``grpo``.
- ``process_additive`` (the OpenRLHF notes' §6.3): ``grpo`` plus ``coef * P_t``, where step values are
  normalised over all steps of the group (each reward type separately, :attr:`Rollout.step_types`), each is
  placed on its step's last token, and ``P_t`` sums them from ``t`` to the end (reverse cumulative, gamma 1).

Normalisation is :mod:`evigraph.group_norm` (the one implementation, StepGap's worked examples use it too):
standard deviations are unbiased (N - 1), as torch's default that OpenRLHF uses; a group of one sample, or one
value, has std 0. ``coef = 0`` gives back stock GRPO's numbers exactly; ``stepgap_dense`` with ``lam = 0``
ranks like GRPO but divides by the token-pooled std.

**Rollouts of one prompt with different numbers of steps.** ``grpo``/``capo``/``stepgap_sequence`` see one
scalar per sample, so step counts only matter through the sum (``stepgap_sequence``: more steps, larger
magnitude). ``stepgap_dense`` pools *tokens*: a longer rollout weighs more in the group's mean and std, and
each token is judged against that pooled baseline. ``process_additive`` pools *steps*: each step value counts
once, but a token's process term sums every later step of its own rollout, so early tokens of long rollouts
collect more terms (of either sign) than those of short ones; divide ``coef`` accordingly when step counts
vary a lot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evigraph.group_norm import mean_std, pooled_standardise, standardise

__all__ = ("MODES", "AdvantageConfig", "AdvantageMode", "Rollout", "advantages")

AdvantageMode = Literal["grpo", "capo", "stepgap_dense", "stepgap_sequence", "process_additive"]
MODES: tuple[AdvantageMode, ...] = ("grpo", "capo", "stepgap_dense", "stepgap_sequence", "process_additive")


class Rollout(BaseModel):
    """One sample as the advantage modes read it."""

    model_config = ConfigDict(frozen=True)

    group: int
    """Its prompt group (OpenRLHF: ``index // n_samples_per_prompt``)."""
    outcome: float
    """The outcome reward (the scalar OpenRLHF receives)."""
    action_mask: tuple[int, ...]
    """1 on policy (action) tokens, 0 on prompt and environment tokens."""
    steps: tuple[tuple[int, int, float], ...] = ()
    """``(start, end, value)``: a step's half-open token range in mask coordinates and its process reward."""
    negative: bool = False
    """The sample's gold is the negative class (CAPO's non-hallucinated samples)."""
    step_types: tuple[dict[str, float], ...] = ()
    """Per step (parallel to ``steps``), its value split by reward type; ``process_additive`` normalises each
    type over the group separately. Empty: one type, the step's value."""

    @model_validator(mode="after")
    def _check(self) -> Rollout:
        for start, end, _ in self.steps:
            if not 0 <= start <= end <= len(self.action_mask):
                raise ValueError(f"step [{start}, {end}) lies outside the {len(self.action_mask)} mask positions")
        if self.step_types and len(self.step_types) != len(self.steps):
            raise ValueError(f"{len(self.step_types)} typed values for {len(self.steps)} steps")
        return self

    def typed_steps(self) -> list[tuple[int, int, dict[str, float]]]:
        """``(start, end, {type: value})`` per step."""
        types = self.step_types or tuple({"step": value} for _, _, value in self.steps)
        return [(start, end, dict(values)) for (start, end, _), values in zip(self.steps, types, strict=True)]


class AdvantageConfig(BaseModel):
    """Which mode and its coefficients."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    mode: AdvantageMode = "grpo"
    """How per-token advantages are formed (see the module docstring)."""
    coef: float = 1.0
    """``process_additive``: weight of the process term."""
    lam: float = Field(1.0, ge=0)
    """``stepgap_dense`` / ``stepgap_sequence``: weight of the step brackets (StepGap's λ)."""
    alpha: float = Field(0.5, ge=0)
    """``capo``: factor on negative-class samples."""
    eps: float = Field(1e-9, gt=0)
    """Added to the std (OpenRLHF's ``group_norm`` uses 1e-9; StepGap's dense reading writes 1e-6)."""


def advantages(rollouts: Sequence[Rollout], config: AdvantageConfig | None = None) -> list[list[float]]:
    """Per-token advantages of ``rollouts`` (one list per rollout, as long as its action mask).

    Example (the OpenRLHF notes' fixture: one prompt, outcomes 1, 0, 1, 0):
        >>> group = [Rollout(group=0, outcome=r, action_mask=(0, 1, 1)) for r in (1, 0, 1, 0)]
        >>> [round(a[1], 3) for a in advantages(group)]
        [0.866, -0.866, 0.866, -0.866]
    """
    config = config or AdvantageConfig()
    if config.mode == "stepgap_dense":
        return _dense(rollouts, config)
    if config.mode == "stepgap_sequence":
        returns = [r.outcome + config.lam * sum(v for _, _, v in r.steps) for r in rollouts]
        return _spread(rollouts, _group_normalised(rollouts, returns, config.eps))
    base = _group_normalised(rollouts, [r.outcome for r in rollouts], config.eps)
    if config.mode == "capo":
        base = [a * config.alpha if r.negative else a for a, r in zip(base, rollouts, strict=True)]
    spread = _spread(rollouts, base)
    if config.mode == "process_additive" and config.coef:
        for tokens, process in zip(spread, _process_terms(rollouts, config.eps), strict=True):
            for t, value in enumerate(process):
                tokens[t] += config.coef * value
    return spread


def _groups(rollouts: Sequence[Rollout]) -> dict[int, list[int]]:
    members: dict[int, list[int]] = defaultdict(list)
    for i, rollout in enumerate(rollouts):
        members[rollout.group].append(i)
    return members


def _group_normalised(rollouts: Sequence[Rollout], returns: Sequence[float], eps: float) -> list[float]:
    normalised = [0.0] * len(rollouts)
    for members in _groups(rollouts).values():
        for i, value in zip(members, standardise([returns[i] for i in members], eps=eps), strict=True):
            normalised[i] = value
    return normalised


def _spread(rollouts: Sequence[Rollout], per_sample: Sequence[float]) -> list[list[float]]:
    """Each sample's scalar on its action tokens."""
    return [[a if m else 0.0 for m in r.action_mask] for r, a in zip(rollouts, per_sample, strict=True)]


def _token_returns(rollout: Rollout, lam: float) -> list[float]:
    """``r + lam * value`` of the step each token belongs to (``r`` outside every step)."""
    returns = [rollout.outcome] * len(rollout.action_mask)
    for start, end, value in rollout.steps:
        for t in range(start, end):
            returns[t] = rollout.outcome + lam * value
    return returns


def _dense(rollouts: Sequence[Rollout], config: AdvantageConfig) -> list[list[float]]:
    """Token returns standardised over every action token of the group (pooled), 0 off the mask."""
    out: list[list[float]] = [[] for _ in rollouts]
    for members in _groups(rollouts).values():
        returns = {i: _token_returns(rollouts[i], config.lam) for i in members}
        masked = [[v for v, m in zip(returns[i], rollouts[i].action_mask, strict=True) if m] for i in members]
        for i, values in zip(members, pooled_standardise(masked, eps=config.eps), strict=True):
            on_mask = iter(values)
            out[i] = [next(on_mask) if m else 0.0 for m in rollouts[i].action_mask]
    return out


def _process_terms(rollouts: Sequence[Rollout], eps: float) -> list[list[float]]:
    """``P_t`` of ``process_additive``: step values normalised over all steps of the group (each reward type on
    its own), summed per step, placed on the step's last token, and summed from t to the end."""
    terms: list[list[float]] = [[0.0] * len(r.action_mask) for r in rollouts]
    for members in _groups(rollouts).values():
        typed = {i: [(s, e, v) for s, e, v in rollouts[i].typed_steps() if e > s] for i in members}
        names = sorted({name for i in members for _, _, values in typed[i] for name in values})
        stats = {name: mean_std([v[name] for i in members for _, _, v in typed[i] if name in v]) for name in names}
        for i in members:
            rollout = rollouts[i]
            placed = [0.0] * len(rollout.action_mask)
            for _, end, values in typed[i]:
                placed[end - 1] += sum((v - stats[n][0]) / (stats[n][1] + eps) for n, v in values.items())
            running = 0.0
            for t in range(len(placed) - 1, -1, -1):
                running += placed[t]
                terms[i][t] = running if rollout.action_mask[t] else 0.0
    return terms
