"""RLSeek's reward objects: what the graph, ``evigraph reward rlseek`` and the trainer call.

The reward re-reads the trajectory's last policy turn against the run's own inputs (:func:`detection_of`), so a
foreign system's completion is scored exactly like ours. Components: ``span`` (§3.1), ``penalty`` (§3.2),
``final`` (§3.3, the training scalar), ``parse_ok`` and ``quotes_valid`` (0/1, for logs). Per step, ``quote`` is
minus the step's share of the penalty (:func:`~evigraph.agents.rlseek.rewards.step_penalties`, which sum to
the penalty), placed on the step's token span for dense credit.
"""

from __future__ import annotations

from evigraph.agents.rlseek.prompts import render
from evigraph.agents.rlseek.rewards import final_reward, quotation_penalty, span_reward, step_penalties
from evigraph.agents.rlseek.schemas import TASKS, RLSeekGold, RLSeekOutput
from evigraph.agents.rlseek.verdict import detect
from evigraph.rewards import Scored, StepRewards, TrajectoryReward
from evigraph.trajectory import Trajectory, last_policy_turn

__all__ = ("REWARD", "SPAN_ONLY_REWARD", "RLSeekReward", "detection_of")


def detection_of(trajectory: Trajectory) -> RLSeekOutput:
    """Parse the trajectory's last policy turn against its inputs (``task``, ``source``, ``response``,
    ``question``), as the graph does. A trajectory without usable inputs is read against empty texts, so it
    scores as the failure it is (a reward never raises)."""
    inputs = trajectory.input
    task = inputs.get("task") if inputs.get("task") in TASKS else "summary"
    try:
        texts = render(task, inputs.get("source") or "", inputs.get("response") or "", inputs.get("question"))
    except TypeError:
        texts = render(task, "", "")
    last = last_policy_turn(trajectory.segments)
    return detect(
        last.text if last else "",
        task=task,
        source=texts.source,
        response=texts.response,
        truncated=last is not None and last.finish_reason == "length",
    )


class RLSeekReward(TrajectoryReward[RLSeekOutput, RLSeekGold]):
    """``r_final = r_span - r_penalty`` (``penalty=False``: the "w/o Penalty" ablation, ``final = r_span``)."""

    scalar = "final"
    gold_schema = RLSeekGold

    def __init__(self, *, penalty: bool = True, name: str = "rlseek_final") -> None:
        self.penalty = penalty
        self.__name__ = name

    @staticmethod
    def is_negative(gold: RLSeekGold) -> bool:
        """The sample's gold is the negative (non-hallucinated) class: CAPO's ``alpha`` applies to it."""
        return not gold.spans

    def read(self, trajectory: Trajectory) -> RLSeekOutput:
        return detection_of(trajectory)

    def score(self, output: RLSeekOutput, gold: RLSeekGold, trajectory: Trajectory) -> Scored:
        span = span_reward(
            [(s.start, s.end) for s in output.spans],
            gold.spans,
            phantom_chars=output.phantom_chars,
            listed=bool(output.raw_list),
            parse_ok=output.parse_ok,
        )
        overlaps = _overlaps(output)
        penalty = quotation_penalty([o for step in overlaps for o in step], valid=output.quotes_valid)
        values = {
            "span": span,
            "penalty": penalty,
            "final": final_reward(span, penalty if self.penalty else 0.0),
            "parse_ok": float(output.parse_ok),
            "quotes_valid": float(output.quotes_valid),
        }
        if not self.penalty:
            return Scored(values)
        shares = step_penalties(overlaps, broken=[bool(s.problems) for s in output.steps])
        spans = {s.index: s.token_span for s in trajectory.steps if s.kind == "verify"}
        steps = tuple(
            StepRewards(index=step.index, token_span=spans.get(step.index), values={"quote": -share if share else 0.0})
            for step, share in zip(output.steps, shares, strict=True)
        )
        return Scored(values, steps)


def _overlaps(output: RLSeekOutput) -> list[list[tuple[int, int]]]:
    """Per step, its quotes' ``(LCS, length)`` pairs."""
    return [[(q.lcs, q.length) for q in output.quotes if q.step == step.index] for step in output.steps]


REWARD = RLSeekReward()
"""The paper's reward (default)."""
SPAN_ONLY_REWARD = RLSeekReward(penalty=False, name="rlseek_span_only")
"""The "w/o Penalty" ablation (spec §7 Table 4): quotes are requested but not rewarded."""
