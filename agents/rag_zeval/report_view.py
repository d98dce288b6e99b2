"""One RAG-Zeval prediction line as the HTML run report shows it (``evigraph report``, :mod:`evigraph.report`).

The reference is shown with every grounding evidence string the claims cited, where it occurs verbatim; a
ranking table puts the answers in the evaluator's order with their scores ``S = supported / total``, ties named,
next to the gold order; and one table per answer lists its claims with support and evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from evigraph.agents.rag_zeval.rewards import ranking_accuracy, top1_accuracy
from evigraph.agents.rag_zeval.schemas import RagZevalGold, RagZevalOutput, ScoredCandidate
from evigraph.report.helpers import occurrences, record_view
from evigraph.report.view import Block, KeyValuesBlock, RecordView, TableBlock, TextBlock

__all__ = ("report_view",)


def _score(candidate: ScoredCandidate) -> Fraction:
    return Fraction(candidate.supported, candidate.total) if candidate.total else Fraction(0)


def _fraction(candidate: ScoredCandidate) -> str:
    return f"{candidate.supported}/{candidate.total}"


def _ranking(output: RagZevalOutput, gold: RagZevalGold | None) -> TableBlock:
    scores = [_score(c) for c in output.candidates]
    gold_rank = None
    if gold is not None and len(gold.alphas) == len(scores):
        order = sorted(range(len(gold.alphas)), key=lambda i: -gold.alphas[i])
        gold_rank = {index: rank for rank, index in enumerate(order, start=1)}
    rows, tones = [], []
    for rank, index in enumerate(output.ranking, start=1):
        candidate = output.candidates[index]
        tied = sum(s == scores[index] for s in scores) > 1
        shown_score = f"{float(scores[index]):.3f}" + (" (tie)" if tied else "")
        row = [str(rank), f"answer {index + 1}", candidate.id, _fraction(candidate), shown_score]
        if gold_rank is not None and gold is not None:
            row += [f"{gold.alphas[index]:g}", str(gold_rank[index])]
            tones.append("good" if gold_rank[index] == rank and not tied else "bad")
        rows.append(tuple(row))
    columns = ["rank", "answer", "shown as", "supported claims", "S"]
    if gold_rank is not None:
        columns += ["gold α", "gold rank"]
    return TableBlock(title="ranking", columns=tuple(columns), rows=tuple(rows), tones=tuple(tones))


def _claims(candidate: ScoredCandidate, reference: str) -> TableBlock:
    rows = []
    for claim in candidate.claims:
        evidence = "\n".join(
            e if e in reference else f"{e} (not verbatim in the reference)" for e in claim.grounding_evidence
        )
        rows.append((claim.claim, "yes" if claim.is_supported else "no", evidence or "none", claim.analysis))
    return TableBlock(
        title=f"claims of answer {candidate.index + 1} ({candidate.id}): S = {candidate.supported}/{candidate.total}",
        columns=("claim", "supported", "grounding evidence", "analysis"),
        rows=tuple(rows),
        tones=tuple("good" if c.is_supported else "bad" for c in candidate.claims),
    )


def _answers(candidates: Sequence[Any]) -> list[Block]:
    return [TextBlock(title=f"answer {i + 1}", text=str(text)) for i, text in enumerate(candidates)]


def report_view(line: Mapping[str, Any]) -> RecordView:
    """The view of one line of ``evigraph eval rag-zeval``'s ``predictions.jsonl``."""
    inputs = (line.get("trajectory") or {}).get("input") or {}
    output = RagZevalOutput.model_validate(line["output"]) if line.get("output") else None
    gold = RagZevalGold.model_validate(line["gold"]) if line.get("gold") else None
    reference = str(inputs.get("reference") or "")
    evidence = [e for c in output.candidates for claim in c.claims for e in claim.grounding_evidence] if output else []
    marks = occurrences(reference, dict.fromkeys(evidence), tone="good", note="cited as grounding evidence")
    shown: list[Block] = [
        TextBlock(title="question", text=str(inputs.get("question") or "")),
        TextBlock(title=f"reference ({inputs.get('kind', 'faithfulness')})", text=reference, highlights=tuple(marks)),
        *_answers(inputs.get("candidates") or []),
    ]
    blocks: list[Block] = []
    facets: dict[str, tuple[str, ...]] = {}
    verdict, correct = "no output (the run failed)", None
    if output is not None and output.candidates:
        blocks.append(_ranking(output, gold))
        blocks += [_claims(c, reference) for c in output.candidates]
        scores = [_score(c) for c in output.candidates]
        verdict = ""
        for position, i in enumerate(output.ranking):
            if position:
                verdict += " = " if scores[i] == scores[output.ranking[position - 1]] else " > "
            verdict += f"answer {i + 1} ({_fraction(output.candidates[i])})"
        if gold is not None and len(gold.alphas) == len(scores):
            correct = bool(ranking_accuracy(scores, gold.alphas))
            facets["top-1"] = ("right",) if top1_accuracy(scores, gold.alphas) else ("wrong",)
    elif output is not None:
        verdict = f"unreadable evaluation: {output.parse_error or 'no candidates'}"
    if output is not None:
        facts = [("parse", output.parse_mode), ("format gate", "passed" if output.format_ok else "failed")]
        if output.parse_error:
            facts.append(("parse error", output.parse_error))
        blocks.append(KeyValuesBlock(title="reply", items=tuple(facts)))
        facets["format"] = ("ok",) if output.format_ok else ("failed",)
    gold_text = None
    if gold is not None:
        order = sorted(range(len(gold.alphas)), key=lambda i: -gold.alphas[i])
        gold_text = " > ".join(f"answer {i + 1} (α {gold.alphas[i]:g})" for i in order)
    return record_view(
        line,
        verdict=verdict,
        gold=gold_text,
        correct=correct,
        facets=facets,
        input=tuple(shown),
        trajectory=tuple(blocks),
    )
