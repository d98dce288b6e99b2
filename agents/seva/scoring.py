"""SEVA's reward objects: what the graph, ``evigraph reward seva`` and the trainer call.

The reward re-reads the trajectory's last policy turn (:func:`verdict_of`), so a foreign system's completion is
scored exactly like ours, and a reply cut by the token cap scores 0. Components: ``reward`` (the training
scalar), ``format``, ``alignment``, ``chain``, ``label``, ``diagnosis``, ``confidence``, ``calibration`` and
``parse_ok``; every sample carries the same keys (the trainer's logs need one key set).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from evigraph.agents.seva.rewards import RewardWeights, binary_reward, process_reward
from evigraph.agents.seva.schemas import SevaGold, SevaOutput
from evigraph.agents.seva.verdict import read_verdict
from evigraph.rewards import Scored, TrajectoryReward
from evigraph.trajectory import Trajectory, last_policy_turn

__all__ = ("BINARY_REWARD", "REWARD", "SevaReward", "SevaRewardOptions", "verdict_of")


def verdict_of(trajectory: Trajectory) -> SevaOutput:
    """The trajectory's last policy turn read as a verdict against its own source."""
    last = last_policy_turn(trajectory.segments)
    source = trajectory.input.get("source")
    return read_verdict(
        last.text if last else "",
        source=source if isinstance(source, str) else "",
        truncated=last is not None and last.finish_reason == "length",
    )


class SevaRewardOptions(BaseModel):
    """Parameters of the SEVA reward (flags of ``evigraph reward seva``, ``reward_options`` of a training config)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    # the process/outcome splits of spec §3.11
    process_share: float = Field(0.7, ge=0.0, le=1.0)
    """Share of the reward on format, alignment and chain (split 1:3:3 among them); the label and the error
    diagnosis share the rest."""
    # the fix spec §3.12 suggests
    label_normalized: bool = False
    """Rescale the label-and-diagnosis part per gold label, so that a model unsure of the label (p = 0.5)
    gains nothing by always answering the same label."""


class SevaReward(TrajectoryReward[SevaOutput, SevaGold]):
    """The five-component process reward with calibration (``kind="process"``), or the binary ablation."""

    scalar = "reward"
    gold_schema: ClassVar[type[BaseModel]] = SevaGold
    options: ClassVar[type[BaseModel]] = SevaRewardOptions

    def __init__(self, kind: Literal["process", "binary"] = "process", options: SevaRewardOptions | None = None):
        self.kind = kind
        self.settings = options or SevaRewardOptions()
        self.__name__ = f"seva_{kind}"

    def configure(self, options: BaseModel) -> SevaReward:
        return SevaReward(self.kind, SevaRewardOptions.model_validate(options.model_dump()))

    def read(self, trajectory: Trajectory) -> SevaOutput:
        return verdict_of(trajectory)

    def score(self, verdict: SevaOutput, gold: SevaGold, trajectory: Trajectory) -> Scored:
        parts = process_reward(
            verdict.parsed,
            gold.label,
            RewardWeights.split(self.settings.process_share),
            label_normalized=self.settings.label_normalized,
        )
        scalar = binary_reward(verdict.parsed, gold.label) if self.kind == "binary" else parts.total
        return Scored(
            {"reward": scalar, **parts.model_dump(exclude={"total", "parse_ok"}), "parse_ok": float(parts.parse_ok)}
        )


REWARD = SevaReward()
"""The paper's process reward (default)."""
BINARY_REWARD = SevaReward("binary")
"""The §3.11 ablation: 1 for the right label, nothing else."""
