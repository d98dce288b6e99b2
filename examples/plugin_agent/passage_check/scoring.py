"""The reward object the framework calls (``reward(trajectory, gold)``): evigraph's
:class:`~evigraph.rewards.TrajectoryReward` reads the run once and hands the reading to the components."""

from __future__ import annotations

from evigraph.rewards import Scored, TrajectoryReward
from evigraph.trajectory import Trajectory
from passage_check.rewards import correct, well_formed
from passage_check.schemas import Gold, PassageCheckOutput
from passage_check.verdict import read_verdict

__all__ = ("REWARD", "PassageCheckReward")


class PassageCheckReward(TrajectoryReward[PassageCheckOutput, Gold]):
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

    def read(self, trajectory: Trajectory) -> PassageCheckOutput:
        """The run's output, or a foreign system's reply read as ours."""
        if trajectory.output is not None:
            return PassageCheckOutput.model_validate(trajectory.output)
        return read_verdict(trajectory.policy_text)

    def score(self, output: PassageCheckOutput, gold: Gold, trajectory: Trajectory) -> Scored:
        return Scored({"correct": correct(output.verdict, gold.supported), "well_formed": well_formed(output)})


REWARD = PassageCheckReward()
