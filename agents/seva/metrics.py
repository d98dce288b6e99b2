"""SEVA's metrics (specs/seva.md §4, §3.10) as pure functions.

Not Attributable is the flagged class in the paper's error naming: ``fpr`` = gold Attributable predicted Not
Attributable over gold Attributable, ``fnr`` = gold Not Attributable predicted Attributable over gold Not
Attributable. A missing or unknown label counts as wrong (O7): it lowers recall of the gold class and is
nobody's false positive; the confusion matrix shows it in a ``none`` column.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from evigraph.agents.seva.rewards import alignment_score, chain_score
from evigraph.agents.seva.schemas import ATTRIBUTABLE, ERROR_TYPES, LABELS, NOT_ATTRIBUTABLE, Label, SevaOutput
from evigraph.metrics import accuracy, confusion, macro_f1, per_class_f1, ratio

__all__ = (
    "LabelMetrics",
    "StructureMetrics",
    "error_type_distribution",
    "label_metrics",
    "structure_metrics",
    "zero_variance_share",
)

NO_LABEL = "none"


class LabelMetrics(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int
    accuracy: float
    macro_f1: float
    f1_attributable: float
    f1_not_attributable: float
    fpr: float | None
    """Gold Attributable flagged Not Attributable, over gold Attributable (``None`` without such items)."""
    fnr: float | None
    """Gold Not Attributable passed as Attributable, over gold Not Attributable."""
    predicted_na_share: float
    """Share of items predicted Not Attributable (the negative-prediction bias, Table 16)."""
    confusion: dict[str, dict[str, int]]
    """``confusion[gold][predicted]`` counts; ``none`` = no readable label."""


def label_metrics(pairs: Sequence[tuple[Label | None, Label]]) -> LabelMetrics:
    """Accuracy, per-class and macro F1, FPR/FNR and the confusion matrix of ``(predicted, gold)`` pairs."""
    matrix = confusion(
        [gold for _, gold in pairs],
        [predicted for predicted, _ in pairs],
        rows=LABELS,
        columns=(*LABELS, NO_LABEL),
        missing=NO_LABEL,
    )
    f1 = per_class_f1(matrix, LABELS)
    n_a, n_na = sum(matrix[ATTRIBUTABLE].values()), sum(matrix[NOT_ATTRIBUTABLE].values())
    n = n_a + n_na
    return LabelMetrics(
        n=n,
        accuracy=accuracy(matrix),
        macro_f1=macro_f1(f1),
        f1_attributable=f1[ATTRIBUTABLE],
        f1_not_attributable=f1[NOT_ATTRIBUTABLE],
        # The paper's rates (module doc), not one-vs-rest FNR: a missing label only counts in the denominator,
        # and a rate over no gold item of the class is undefined (None) rather than 0.
        fpr=matrix[ATTRIBUTABLE][NOT_ATTRIBUTABLE] / n_a if n_a else None,
        fnr=matrix[NOT_ATTRIBUTABLE][ATTRIBUTABLE] / n_na if n_na else None,
        predicted_na_share=ratio(sum(row[NOT_ATTRIBUTABLE] for row in matrix.values()), n),
        confusion=matrix,
    )


class StructureMetrics(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int
    parse_rate: float
    format_compliance: float
    """Share of replies that parse with R_f = 1 (§4)."""
    alignment_quality: float | None
    """Mean R_a over replies that hold an alignment list (``None`` when none does)."""
    chain_quality: float | None
    """Mean R_c over replies that hold a reasoning chain list."""
    grounded_share: float | None
    """Beyond the paper: share of quoted source spans found in the source, pooled over replies."""
    truncated: int


def structure_metrics(outputs: Sequence[SevaOutput]) -> StructureMetrics:
    """Structural quality of a set of replies (failed runs count as unparseable)."""
    parsed = [o.parsed for o in outputs if o.parsed is not None]
    alignments = [
        alignment_score(p["evidence_alignment"]) for p in parsed if isinstance(p.get("evidence_alignment"), list)
    ]
    chains = [chain_score(p["reasoning_chain"]) for p in parsed if isinstance(p.get("reasoning_chain"), list)]
    spans = [c.found for o in outputs for c in o.source_spans]
    n = len(outputs)
    return StructureMetrics(
        n=n,
        parse_rate=ratio(len(parsed), n),
        format_compliance=ratio(sum(o.parse_ok and o.format_score == 1.0 for o in outputs), n),
        alignment_quality=statistics.fmean(alignments) if alignments else None,
        chain_quality=statistics.fmean(chains) if chains else None,
        grounded_share=sum(spans) / len(spans) if spans else None,
        truncated=sum(o.truncated for o in outputs),
    )


def error_type_distribution(outputs: Sequence[SevaOutput]) -> dict[str, int]:
    """Error types named by Not Attributable predictions, in taxonomy order, then ``other`` (a type outside the
    taxonomy) and ``missing`` (no type given)."""
    counts: Counter[str] = Counter()
    for output in outputs:
        if output.label != NOT_ATTRIBUTABLE:
            continue
        kind = output.error_type
        counts[kind if kind in ERROR_TYPES else ("missing" if kind is None else "other")] += 1
    return {k: counts[k] for k in (*ERROR_TYPES, "other", "missing")}


def zero_variance_share(groups: Sequence[Sequence[float]]) -> float:
    """The advantage-collapse diagnostic of §3.10: the share of GRPO groups whose rewards are all equal (their
    group-normalised advantages are all exactly 0)."""
    if not groups:
        return 0.0
    return sum(max(g) == min(g) for g in groups if g) / len(groups)
