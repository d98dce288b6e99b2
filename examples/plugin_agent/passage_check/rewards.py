"""Rewards: pure component functions, and the reward object the framework calls (``reward(trajectory, gold)``)."""

from __future__ import annotations

from evigraph.rewards import Rewards
from evigraph.trajectory import RewardComponent, Trajectory
from passage_check.schemas import Gold, PassageCheckOutput
from passage_check.verdict import read_verdict

__all__ = ("REWARD", "PassageCheckReward", "correct", "well_formed")


def correct(verdict: str | None, supported: bool) -> float:
    """1.0 when the verdict matches the gold answer, else 0.0 (no verdict is wrong)."""
    return 1.0 if verdict == ("yes" if supported else "no") else 0.0


def well_formed(output: PassageCheckOutput) -> float:
    """1.0 for exactly one answer block and nothing outside it, else 0.0."""
    return 1.0 if output.well_formed else 0.0


class PassageCheckReward:
    """Components ``correct`` and ``well_formed``; the trainer optimises ``correct``.

    Example:
        >>> from evigraph.trajectory import Segment
        >>> turn = Segment(origin="policy", text="<answer>no</answer>")
        >>> run = Trajectory(agent="passage-check", input={}, segments=[turn])
        >>> REWARD(run, Gold(supported=False)).as_dict()
        {'correct': 1.0, 'well_formed': 1.0}
    """

    __name__ = "passage_check_correct"
    scalar = "correct"
    gold_schema = Gold

    def __call__(self, trajectory: Trajectory, gold: Gold) -> Rewards:
        output = (
            PassageCheckOutput.model_validate(trajectory.output)
            if trajectory.output is not None
            else read_verdict(trajectory.policy_text)
        )
        components = (
            RewardComponent(type="correct", value=correct(output.verdict, gold.supported)),
            RewardComponent(type="well_formed", value=well_formed(output)),
        )
        return Rewards(components=components, scalar=self.scalar)


REWARD = PassageCheckReward()
