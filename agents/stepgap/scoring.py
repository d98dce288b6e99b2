"""StepGap's reward object (specs/stepgap.md §3): the typed process reward over a checked trajectory, through the
kit's one reward signature.

It reads each step's checker label, kind, reasoning text and query from the trajectory (our rollouts write them
into ``Step.payload``; a foreign record's steps are converted the same way by the evaluation adapter), takes
``r_EM`` from the gold (given, or computed from the answer and the gold aliases), and calls the pure functions of
:mod:`.rewards`. Per step it reports the bracket ``λ·(base + shape)`` and the per-token return
``r_EM + λ·bracket`` on the step's token span: the dense values the trainer spreads over those tokens (§3.4).

A step the checker could not label (judge failure) carries no reward terms and is skipped for shaping; the
preceding label then stays the previous one.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evigraph.agents.stepgap.labels import GAP_LABELS
from evigraph.agents.stepgap.rewards import Preset, RewardStep, em_reward, score_trace
from evigraph.rewards import Scored, StepRewards, TrajectoryReward
from evigraph.trajectory import Trajectory

__all__ = ("REWARD", "TYPED_PRESETS", "RewardGold", "StepGapReward", "StepGapRewardOptions", "reward_steps")


TYPED_PRESETS = frozenset({"typed_base", "typed_shape"})
"""Presets that read the gap type, which binary checkers (nli-only) do not give (§5)."""


class StepGapRewardOptions(BaseModel):
    """Parameters of the StepGap reward (flags of ``evigraph reward stepgap``; the training config's section)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    # the configurations compared in spec §5
    preset: Preset = "typed_shape"
    """Reward configuration: search_only (answer match only), binary_gap (a bonus per step without a gap),
    untyped_dense (any gap costs the same), typed_base (each gap type has its own value) or typed_shape
    (typed_base plus a bonus for repairing the step after a gap)."""
    # λ of spec §3.3
    lam: float = Field(1.0, ge=0.0)
    """Weight of the per-step terms against the answer's exact-match reward."""


class RewardGold(BaseModel):
    """What the reward needs of the gold: ``em`` (0/1) when known, else the answer aliases to compute it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    em: int | None = Field(None, ge=0, le=1)
    golds: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _scorable(self) -> RewardGold:
        if self.em is None and not self.golds:
            raise ValueError("the gold needs 'em' (0 or 1) or 'golds' (answer aliases)")
        return self


def reward_steps(trajectory: Trajectory) -> tuple[list[RewardStep], list[int]]:
    """The labelled steps of a trajectory as the reward reads them, and their indices in ``trajectory.steps``."""
    steps: list[RewardStep] = []
    indices: list[int] = []
    for i, step in enumerate(trajectory.steps):
        label = step.payload.get("label")
        if label not in GAP_LABELS:
            continue
        steps.append(
            RewardStep(
                kind="answer" if step.kind == "answer" else "search",
                text=str(step.payload.get("reasoning", step.text)),
                query=step.payload.get("query"),
                label=label,
            )
        )
        indices.append(i)
    return steps, indices


class CheckedRun(NamedTuple):
    """A checked trajectory as the reward reads it."""

    answer: Any
    steps: list[RewardStep]
    indices: list[int]
    """Each reward step's index in ``trajectory.steps``."""
    binary: bool
    """The checker only told gap from no gap."""
    variant: str


class StepGapReward(TrajectoryReward[CheckedRun, RewardGold]):
    """``R = r_EM + λ·Σ_i [r_base(τ_i) + r_shape(τ_{i−1}, s_i)]`` with the dense per-step values."""

    __name__ = "stepgap_return"
    scalar = "return"
    gold_schema: ClassVar[type[BaseModel]] = RewardGold
    options: ClassVar[type[BaseModel]] = StepGapRewardOptions

    def __init__(self, options: StepGapRewardOptions | None = None) -> None:
        self.settings = options or StepGapRewardOptions()

    def configure(self, options: BaseModel) -> StepGapReward:
        return StepGapReward(StepGapRewardOptions.model_validate(options.model_dump()))

    def read(self, trajectory: Trajectory) -> CheckedRun:
        output = trajectory.output or {}
        checks = output.get("checks") or {}
        steps, indices = reward_steps(trajectory)
        return CheckedRun(
            output.get("answer"), steps, indices, bool(checks.get("binary")), checks.get("variant", "binary")
        )

    def score(self, run: CheckedRun, gold: RewardGold, trajectory: Trajectory) -> Scored:
        em = gold.em if gold.em is not None else em_reward(run.answer, gold.golds)
        if run.binary and self.settings.preset in TYPED_PRESETS:
            raise ValueError(
                f"the {run.variant} checker only tells gap from no gap; a typed preset "
                f"({self.settings.preset}) needs typed labels (use binary_gap or untyped_dense)"
            )
        spans = [trajectory.steps[i].token_span for i in run.indices]
        scored = score_trace(em, run.steps, preset=self.settings.preset, lam=self.settings.lam)
        lam = self.settings.lam
        per_step = tuple(
            StepRewards(
                index=i,
                token_span=span,
                values={"base": s.base, "shape": s.shape, "bracket": lam * s.bracket, "dense": em + lam * s.bracket},
            )
            for i, span, s in zip(run.indices, spans, scored.steps, strict=True)
        )
        values = {
            "return": scored.total,
            "em": float(em),
            "base": sum(s.base for s in scored.steps),
            "shape": sum(s.shape for s in scored.steps),
        }
        return Scored(values, per_step)


REWARD = StepGapReward()
