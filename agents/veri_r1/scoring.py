"""Veri-R1's rewards behind the framework's one signature (:class:`evigraph.rewards.AgentReward`):
``reward(trajectory, gold) -> Rewards``, with ``total`` declared as the training scalar.

The components are the pure functions of :mod:`.rewards`; this module only reads what a trajectory concluded --
the graph's structured ``output`` when it has one, else its transcript parsed as a flat response (a foreign
system's record) -- and the gold set as the chosen mode compares it.
"""

from __future__ import annotations

from evigraph.agents.veri_r1.gold import GoldRecord, gold_evidence
from evigraph.agents.veri_r1.metrics import Prediction, prediction_from_response
from evigraph.agents.veri_r1.rewards import compat_training_reward, final_reward
from evigraph.agents.veri_r1.schemas import VeriR1Output
from evigraph.rewards import Scored, TrajectoryReward
from evigraph.trajectory import Trajectory

__all__ = ("COMPAT_TRAINING_REWARD", "FINAL_REWARD", "VeriR1Reward", "prediction_of_trajectory")


def prediction_of_trajectory(trajectory: Trajectory, *, compat: bool = False) -> Prediction:
    """What a trajectory concluded: its structured output, else its transcript read as a flat response."""
    if trajectory.output is not None:
        output = VeriR1Output.model_validate(trajectory.output)
        return Prediction(
            id=trajectory.id, label=output.label, evidence=tuple(output.evidence), format_ok=output.format_ok
        )
    return prediction_from_response(trajectory.id, trajectory.response, compat=compat)


class VeriR1Reward(TrajectoryReward[Prediction, GoldRecord]):
    """``R = R_label · w_validity + R_evidence + R_format`` (spec §3.5), or with ``compat=True`` the reference's
    training reward (research notes §1.3). Components ``label``, ``validity``, ``evidence``, ``format``,
    ``total``; the scalar is ``total``.

    Example:
        >>> from evigraph.trajectory import Segment
        >>> answer = "<answer>\\nLabel: REFUTE\\nEvidence: [[Hog Island Light_sentence_3]]\\n</answer>"
        >>> trajectory = Trajectory(agent="veri-r1", input={}, segments=[
        ...     Segment(origin="prompt", role="user", text="Claim: ..."),
        ...     Segment(origin="policy", text="<think>1854, not 1853.</think>" + answer)])
        >>> gold = GoldRecord.model_validate({"label": "REFUTES", "evidence": ["Hog Island Light_sentence_3"]})
        >>> FINAL_REWARD(trajectory, gold).as_dict()
        {'label': 2.0, 'validity': 1.0, 'evidence': 1.0, 'format': 0.0, 'total': 3.0}
    """

    scalar = "total"
    gold_schema = GoldRecord

    def __init__(self, *, compat: bool = False) -> None:
        self.compat = compat
        self.__name__ = "veri_r1_compat_training" if compat else "veri_r1_final"

    def read(self, trajectory: Trajectory) -> Prediction:
        return prediction_of_trajectory(trajectory, compat=self.compat)

    def score(self, prediction: Prediction, gold: GoldRecord, trajectory: Trajectory) -> Scored:
        reward = compat_training_reward if self.compat else final_reward
        breakdown = reward(
            pred_label=prediction.label,
            pred_evidence=prediction.evidence,
            gold_label=gold.label,
            gold_evidence=gold_evidence(gold, compat=self.compat),
            format_ok=prediction.format_ok,
        )
        return Scored({c.type: c.value for c in breakdown.components()})

    def __repr__(self) -> str:
        return f"VeriR1Reward(compat={self.compat})"


FINAL_REWARD = VeriR1Reward()
"""The spec's reward (clean ids)."""
COMPAT_TRAINING_REWARD = VeriR1Reward(compat=True)
"""The reference implementation's training reward (half credit at ⌈|G|/2⌉ gold hits, raw gold ids)."""
