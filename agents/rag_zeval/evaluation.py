"""RAG-Zeval's evaluation adapter: ranked candidate sets in, claim-level judgements and rankings out.

- ``evigraph eval rag-zeval --data D --out DIR``: ``D`` is JSONL of :class:`~.schemas.RankedSet` lines (what
  ``evigraph synthesize rag-zeval`` writes: ``{"id", "question", "reference", "candidates": [{"text",
  "alpha"}, ...], "kind"}``). Reports ranking accuracy against the known order (full, best-only, pairwise),
  the format rate (the §3.1 gate), how replies were read (strict / lenient / failed), mean claims per
  candidate and the mean reward components.
- ``evigraph score rag-zeval --pred P --gold G``: predictions ``{"id", "scores": [S per candidate, in the
  gold file's candidate order]}`` (another system's) or our eval lines; gold: the same ranked sets or
  ``{"id", "alphas": [...]}`` lines.
- ``evigraph reward rag-zeval --input F``: our eval lines, or ``{"id", "question", "reference", "candidates":
  [texts], "letters": [...], "completion", "gold": {"alphas"}}`` lines of another system's replies.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from pydantic import model_validator

from evigraph.agents.rag_zeval.metrics import RankingMetrics, ranking_metrics
from evigraph.agents.rag_zeval.schemas import RagZevalGold, RagZevalOutput, RankedSet, ReferenceKind
from evigraph.agents.rag_zeval.scoring import exact_scores
from evigraph.evaluation.adapter import BaseEvaluation, GoldLine, PredictionLine
from evigraph.trajectory import Segment, Trajectory

__all__ = ("EVALUATION", "RagZevalEvalReport", "RagZevalEvaluation", "RagZevalGoldLine", "RagZevalPrediction")


class RagZevalGoldLine(GoldLine, RagZevalGold):
    """One gold line: the candidates' alphas in the record's candidate order."""

    @model_validator(mode="before")
    @classmethod
    def _from_ranked_set(cls, data: Any) -> Any:
        if isinstance(data, dict) and "alphas" not in data and isinstance(data.get("candidates"), list):
            return {**data, "alphas": [c.get("alpha") if isinstance(c, dict) else None for c in data["candidates"]]}
        return data


class RagZevalRecord(RankedSet):
    """One input line (a ranked set); its gold is the candidates' alphas."""

    @property
    def gold(self) -> RagZevalGoldLine:
        return RagZevalGoldLine(id=self.id, alphas=tuple(c.alpha for c in self.candidates))


class RagZevalPrediction(PredictionLine):
    """A prediction to score or reward: ours (``output``) or another system's (``scores``; for ``reward``,
    ``completion`` with the run's inputs)."""

    output_model = RagZevalOutput
    answer_fields = ("scores",)

    scores: list[float] | None = None
    question: str | None = None
    reference: str | None = None
    candidates: list[str] | None = None
    letters: list[str] | None = None
    kind: ReferenceKind = "faithfulness"

    def exact(self) -> list[Fraction] | None:
        """Scores as exact fractions (``None``: the run failed, every candidate counts as 0)."""
        if self.parsed_output is not None:
            return exact_scores(self.parsed_output)
        if self.scores is not None:
            return [Fraction(str(s)) for s in self.scores]
        return None


class RagZevalEvalReport(RankingMetrics):
    """Ranking metrics (top level, for the headline) and, for our runs, how replies read and mean rewards."""

    format_rate: float | None = None
    """Share of our replies that pass the §3.1 format gate."""
    parse_modes: dict[str, int] | None = None
    mean_claims: float | None = None
    """Mean claims per candidate (§4.3's monitor)."""
    reward: dict[str, float] | None = None
    """Mean reward components of our runs that carry them. Runs that failed (backend error, budget) count as
    wrong in the ranking metrics; the runner reports their number as ``n_failed_runs``."""


class RagZevalEvaluation(BaseEvaluation):
    record_model = RagZevalRecord
    gold_model = RagZevalGoldLine
    result_model = RagZevalPrediction
    prediction_model = RagZevalPrediction
    headline = ("ranking_accuracy", "top1_accuracy", "pairwise_accuracy", "format_rate")

    def graph_input(self, record: RagZevalRecord) -> dict[str, Any]:
        return {
            "id": record.id,
            "question": record.question,
            "reference": record.reference,
            "candidates": [c.text for c in record.candidates],
            "kind": record.kind,
            "gold": {"alphas": [c.alpha for c in record.candidates]},
        }

    def gold_of(self, record: RagZevalRecord) -> RagZevalGoldLine:
        return record.gold

    def curriculum_input(self, record: RagZevalRecord, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """A curriculum stage's graph input: ``{"candidates": N}`` keeps N of the record's candidates (a seeded
        choice per record, O6); a record with fewer keeps all of them."""
        unknown = sorted(set(options) - {"candidates"})
        if unknown:
            raise ValueError(f"unknown option(s) {unknown} (RAG-Zeval's stages take: candidates)")
        size = options.get("candidates")
        if size is None:
            return self.graph_input(record)
        if not isinstance(size, int) or isinstance(size, bool):
            raise ValueError(f"candidates must be an integer, got {size!r}")
        return self.graph_input(record.subset(size, seed=seed))

    def report(self, pairs: Sequence[tuple[RagZevalPrediction, RagZevalGoldLine]], options: Any) -> RagZevalEvalReport:
        instances = []
        for prediction, gold in pairs:
            scores = prediction.exact() or [Fraction(0)] * len(gold.alphas)
            if len(scores) != len(gold.alphas):
                raise ValueError(
                    f"prediction {prediction.id!r}: {len(scores)} scores for {len(gold.alphas)} gold candidates"
                )
            instances.append((scores, gold.alphas))
        ours = [p for p, _ in pairs if p.ours]
        outputs = [p.parsed_output for p in ours if p.parsed_output is not None]
        rewards = [p.rewards for p in ours if p.rewards]
        claims = [c.total for o in outputs for c in o.candidates]
        modes: dict[str, int] = {}
        for output in outputs:
            modes[output.parse_mode] = modes.get(output.parse_mode, 0) + 1
        return RagZevalEvalReport(
            **ranking_metrics(instances).model_dump(),
            format_rate=sum(o.format_ok for o in outputs) / len(ours) if ours else None,
            parse_modes=modes or None,
            mean_claims=statistics.fmean(claims) if claims else None,
            reward={k: statistics.fmean(r.get(k, 0.0) for r in rewards) for k in rewards[0]} if rewards else None,
        )

    def trajectory_of(self, prediction: RagZevalPrediction) -> Trajectory:
        if prediction.trajectory is not None:
            return prediction.trajectory
        missing = [k for k in ("question", "reference", "candidates", "completion") if getattr(prediction, k) is None]
        if missing:
            raise ValueError(
                f"prediction {prediction.id!r} has no trajectory; a reward input line needs question, reference, "
                f"candidates and completion (missing: {', '.join(missing)})"
            )
        inputs = {
            "question": prediction.question,
            "reference": prediction.reference,
            "candidates": prediction.candidates,
            "kind": prediction.kind,
            "letters": prediction.letters,
        }
        segments = [Segment(origin="policy", text=prediction.completion or "")]
        return Trajectory(id=prediction.id, agent="rag-zeval", input=inputs, segments=segments)


EVALUATION = RagZevalEvaluation()
