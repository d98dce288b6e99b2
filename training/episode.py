"""One training episode in engine-neutral terms: what a run of the agent's graph leaves for any trainer.

:meth:`~evigraph.training.executor.GraphExecutor.episode` runs the graph on a generator and returns an
:class:`Episode`; each engine converts it once into its own fields: OpenRLHF's response dict
(:func:`~evigraph.training.samples.openrlhf_sample`) and TRL's rollout fields
(:func:`~evigraph.training.trl_rollout.trl_sample`).

Coordinates are the sequence's: position ``t`` is token ``token_ids[t]``, and every per-token list
(``policy_mask``, ``logprobs``) and every step span (half-open ``(start, end)``) uses them. No shift: an engine
that scores token ``t + 1`` at position ``t`` (OpenRLHF's action mask) shifts when it converts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, model_validator

from evigraph.errors import TokenContractError
from evigraph.tokens import rollout_logprobs
from evigraph.trajectory import Trajectory

__all__ = ("Episode", "EpisodeStep")


class EpisodeStep(BaseModel):
    """One rewarded step: its exact tokens and its value of each reward type."""

    model_config = ConfigDict(frozen=True)

    index: int
    """The trajectory step's index."""
    kind: str
    """The trajectory step's kind (``search``, ``answer``, ...; ``step`` when the trajectory has no such step)."""
    span: tuple[int, int]
    """Half-open token range in sequence coordinates."""
    values: dict[str, float]
    """Its value per reward type (``{"quote": -0.33}``, or several types when process rewards are mixed in)."""

    @property
    def value(self) -> float:
        """The step's total value (the sum over its types)."""
        return sum(self.values.values())


class Episode(BaseModel):
    """A finished episode (see the module docstring).

    Example (a 2-token prompt, a policy turn, one observation token, a policy turn):
        >>> e = Episode(id="t", token_ids=(1, 2, 3, 4, 5, 6), policy_mask=(0, 0, 1, 1, 0, 1),
        ...     logprobs=(0, 0, -.5, -.5, 0, -.1), outcome=1.0,
        ...     steps=(EpisodeStep(index=0, kind="search", span=(2, 4), values={"v": 0.5}),))
        >>> e.prompt_length, e.action_ranges(), e.steps[0].value
        (2, [(2, 4), (5, 6)], 0.5)
    """

    model_config = ConfigDict(frozen=True)

    id: str
    """The trajectory's id."""
    token_ids: tuple[int, ...]
    """The whole sequence: prompt, policy and environment tokens."""
    policy_mask: tuple[int, ...]
    """Per token: 1 if the policy sampled it, 0 for prompt and environment tokens."""
    logprobs: tuple[float, ...]
    """Per token: the sampled token's log-probability under the policy that generated it; 0.0 off-policy."""
    outcome: float
    """The sample's reward (the configured outcome component, with any mixed-in process terms)."""
    steps: tuple[EpisodeStep, ...] = ()
    """Rewarded steps in sequence order (empty without a per-step value)."""
    logs: dict[str, float] = {}
    """Scalar logs: the reward's components and counters (``<agent>/<name>``), the mixed-in terms'."""
    negative: bool | None = None
    """The gold is the negative class (CAPO); ``None`` when the reward has no such class."""
    truncated: bool = False
    """The sequence budget ended the run (see :func:`truncated`)."""

    @model_validator(mode="after")
    def _check(self) -> Episode:
        n = len(self.token_ids)
        if len(self.policy_mask) != n or len(self.logprobs) != n:
            raise ValueError(f"{n} tokens, {len(self.policy_mask)} mask and {len(self.logprobs)} logprob entries")
        for step in self.steps:
            start, end = step.span
            if not 0 <= start <= end <= n:
                raise ValueError(f"step {step.index}: span {step.span} lies outside the {n} tokens")
        return self

    @property
    def prompt_length(self) -> int:
        """Tokens before the first policy token (the whole sequence when the policy sampled none)."""
        return next((t for t, m in enumerate(self.policy_mask) if m), len(self.token_ids))

    def action_ranges(self) -> list[tuple[int, int]]:
        """Half-open ranges of consecutive policy tokens."""
        ranges: list[tuple[int, int]] = []
        for t, m in enumerate(self.policy_mask):
            if m and ranges and ranges[-1][1] == t:
                ranges[-1] = (ranges[-1][0], t + 1)
            elif m:
                ranges.append((t, t + 1))
        return ranges

    @classmethod
    def of(
        cls,
        trajectory: Trajectory,
        *,
        outcome: float,
        max_length: int,
        steps: Sequence[EpisodeStep] = (),
        logs: Mapping[str, float] | None = None,
        negative: bool | None = None,
    ) -> Episode:
        """The episode of a strict run (its segments carry exact token ids).

        Raises:
            TokenContractError: a segment without token ids (not a strict run).
        """
        tokens = trajectory.token_ids()
        ranges = trajectory.action_ranges()
        if tokens is None or ranges is None:
            raise TokenContractError(f"trajectory {trajectory.id!r} has segments without token ids")
        mask = [0] * len(tokens)
        for start, end in ranges:
            mask[start:end] = [1] * (end - start)
        return cls(
            id=trajectory.id,
            token_ids=tuple(tokens),
            policy_mask=tuple(mask),
            logprobs=tuple(rollout_logprobs(trajectory.segments, strict=False)),
            outcome=float(outcome),
            steps=tuple(steps),
            logs=dict(logs or {}),
            negative=negative,
            truncated=truncated(trajectory, len(tokens), max_length),
        )


def truncated(trajectory: Trajectory, n_tokens: int, max_length: int) -> bool:
    """The budget ended the run: its last policy turn hit the cap, the sequence fills ``max_length``, or the
    run stopped on the budget before it could answer."""
    policy = [s for s in trajectory.segments if s.origin == "policy"]
    if policy and policy[-1].finish_reason == "length":
        return True
    if trajectory.error is not None and trajectory.error.type == "BudgetExhausted":
        return True
    return n_tokens >= max_length
