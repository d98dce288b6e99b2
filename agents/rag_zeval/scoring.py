"""RAG-Zeval's reward objects: what the graph, ``evigraph reward rag-zeval`` and the trainer call.

The reward re-reads the trajectory's last policy turn *strictly* (§2.2: no regex salvage in training) against the
run's inputs -- the letters each candidate was shown under and the reference as shown -- so a foreign system's
reply scores exactly like ours. Components: ``format`` (§3.1), ``evidence`` (§3.2), ``accuracy`` (§3.3, or §3.4
for the "best" variant), ``reward`` (§3.5, the training scalar) and, for logs (§4.3), ``claims`` (mean claims
per candidate) and ``format_failure`` (0/1).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, NamedTuple

from evigraph.agents.rag_zeval.parsing import read_evaluation
from evigraph.agents.rag_zeval.prompts import show
from evigraph.agents.rag_zeval.rewards import (
    combined_reward,
    evidence_reward,
    format_reward,
    ranking_accuracy,
    top1_accuracy,
)
from evigraph.agents.rag_zeval.schemas import LETTERS, RagZevalGold, RagZevalOutput
from evigraph.rewards import Scored, TrajectoryReward
from evigraph.trajectory import Trajectory, last_policy_turn

__all__ = ("BEST_REWARD", "REWARD", "RagZevalReading", "RagZevalReward", "exact_scores", "letters_of")


def letters_of(inputs: dict[str, Any]) -> tuple[str, ...]:
    """The letters a run showed its candidates under (stored in the trajectory's inputs); prompt order when a
    foreign record does not say."""
    candidates = inputs.get("candidates") or ()
    letters = inputs.get("letters")
    shown = isinstance(letters, (list, tuple)) and len(letters) == len(candidates)
    if shown and all(isinstance(x, str) for x in letters):
        return tuple(letters)
    return tuple(LETTERS[: len(candidates)])


def exact_scores(output: RagZevalOutput) -> list[Fraction]:
    """``S(y)`` per candidate as exact fractions (ties are ties, §4.1)."""
    return [Fraction(c.supported, c.total) if c.total else Fraction(0) for c in output.candidates]


class RagZevalReading(NamedTuple):
    """A trajectory as the reward reads it: the strict reading of its reply and what the run showed."""

    output: RagZevalOutput
    candidates: list[str]
    reference: str
    """The reference as shown (escaped), which evidence must come from."""


class RagZevalReward(TrajectoryReward[RagZevalReading, RagZevalGold]):
    """The paper's reward (``ranking="full"``) or the "predict the best" ablation (``ranking="best"``)."""

    scalar = "reward"
    gold_schema = RagZevalGold

    def __init__(self, *, ranking: str = "full", name: str = "rag_zeval_ranking") -> None:
        if ranking not in ("full", "best"):
            raise ValueError(f"ranking must be 'full' or 'best', got {ranking!r}")
        self.ranking = ranking
        self.__name__ = name

    def read(self, trajectory: Trajectory) -> RagZevalReading:
        inputs = trajectory.input
        candidates = [str(c) for c in inputs.get("candidates") or ()]
        last = last_policy_turn(trajectory.segments)
        truncated = last is not None and last.finish_reason == "length"
        output = read_evaluation(last.reply if last else "", letters_of(inputs), truncated=truncated)  # strict
        shown = show(str(inputs.get("question", "")), str(inputs.get("reference", "")), candidates)
        return RagZevalReading(output, candidates, shown.reference)

    def score(self, reading: RagZevalReading, gold: RagZevalGold, trajectory: Trajectory) -> Scored:
        output, candidates = reading.output, reading.candidates
        if len(gold.alphas) != len(candidates):
            problems: tuple[str, ...] = (f"{len(gold.alphas)} gold alphas for {len(candidates)} candidates",)
        else:
            problems = () if output.format_ok else (output.parse_error or "format",)
        r_f = format_reward(problems)
        r_a = 0
        if r_f == 0.0:
            rank = ranking_accuracy if self.ranking == "full" else top1_accuracy
            r_a = rank(exact_scores(output), gold.alphas)
        # A reply that passes the gate has exactly the shown ids and only well-typed claims: its claims' evidence
        # is every evidence string of the reply (§3.2, O16).
        evidence = [e for c in output.candidates for claim in c.claims for e in claim.grounding_evidence]
        r_e = evidence_reward(evidence, reading.reference) if r_f == 0.0 else 0.0
        counts: Sequence[int] = [c.total for c in output.candidates]
        return Scored(
            {
                "format": r_f,
                "evidence": r_e,
                "accuracy": float(r_a),
                "reward": combined_reward(r_f, r_a, r_e),
                "claims": sum(counts) / len(counts) if counts else 0.0,
                "format_failure": float(r_f != 0.0),
            }
        )


REWARD = RagZevalReward()
"""The paper's reward: the full ranking must be right (default)."""
BEST_REWARD = RagZevalReward(ranking="best", name="rag_zeval_best")
"""The "predicting the best" ablation (§3.4)."""
