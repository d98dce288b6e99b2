"""RLSeek's metrics (specs/rlseek.md §4), as pure functions.

- Span level (§4.1): characters pooled over one task's samples, ``P = ΣTP / Σ|P|*`` (phantom characters of
  unmatched strings included), ``R = ΣTP / Σ|G|``; the "average" is the mean over tasks of P, of R and of F1
  separately (not the F1 of the mean P and R).
- Sample level (§4.2): flagged ⇔ the parsed list holds a non-blank string; P/R/F1 on the hallucinated class,
  FNR and FPR, pooled over every sample of every task.
- Quotation behaviour (§4.3) and diversity (§4.4: Distinct-n, Self-BLEU).
- :func:`leave_one_task_out` for the OOD protocol (§5).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from evigraph.agents.rlseek.schemas import RLSeekOutput, Span
from evigraph.agents.rlseek.spans import covered, intersection
from evigraph.metrics import (
    binary_counts,
    false_negative_rate,
    false_positive_rate,
    harmonic_f1,
    mean,
    precision,
    ratio,
    recall,
)
from evigraph.tools.lcs import word_tokens

__all__ = (
    "PRF",
    "QuoteStatistics",
    "SampleCounts",
    "SampleMetrics",
    "count_detection",
    "count_sample",
    "distinct_n",
    "leave_one_task_out",
    "quote_statistics",
    "sample_metrics",
    "self_bleu",
    "sentence_bleu",
    "span_metrics",
    "word_subsequence_overlap",
    "words",
)

_FROZEN = ConfigDict(frozen=True)
T = TypeVar("T")


class PRF(BaseModel):
    model_config = _FROZEN
    precision: float
    recall: float
    f1: float


class SampleCounts(BaseModel):
    """What one sample adds to the pooled metrics."""

    model_config = _FROZEN
    task: str
    true_chars: int
    """``|P ∩ G|``."""
    predicted_chars: int
    """``|P|*``: matched characters (overlaps once) plus phantom characters."""
    gold_chars: int
    flagged: bool
    """Predicted positive: the parsed list holds a non-blank string."""
    hallucinated: bool
    """Gold positive: ``G ≠ ∅``."""


class SampleMetrics(BaseModel):
    model_config = _FROZEN
    precision: float
    recall: float
    f1: float
    fnr: float
    fpr: float
    tp: int
    fp: int
    fn: int
    tn: int


class QuoteStatistics(BaseModel):
    """Quotation behaviour over a set of detections (§4.3) and the mean within-set diversity (§4.4)."""

    model_config = _FROZEN
    n: int
    valid_rate: float
    """Share of detections whose quotation set is valid."""
    char_overlap: float
    """Mean over all quotes of ``LCS(Q, D) / |Q|`` (characters, whitespace collapsed)."""
    word_overlap: float
    """Mean over all quotes of the word-level longest common subsequence with the source / words of the quote."""
    found_rate: float
    """Share of quotes the shared quote matcher finds in the source (exact or up to whitespace and case)."""
    quotes_per_sample: float
    no_quote_share: float
    """Share of detections whose reasoning holds no quote at all."""
    reasoning_chars: float
    """Mean length of the reasoning region (before the final answer), in characters."""
    distinct_2: float | None
    """Mean Distinct-2 over detections with at least one bigram."""
    self_bleu: float | None
    """Mean Self-BLEU over detections with at least two quotes."""


def count_sample(
    predicted: Sequence[Span], gold: Sequence[Span], task: str, *, phantom_chars: int = 0, flagged: bool
) -> SampleCounts:
    """One sample's character counts (a missing or unparsed prediction is ``predicted=()``, ``flagged=False``:
    P2, O4)."""
    gold_chars = covered(gold)
    return SampleCounts(
        task=task,
        true_chars=intersection(predicted, gold),
        predicted_chars=covered(predicted) + phantom_chars,
        gold_chars=gold_chars,
        flagged=flagged,
        hallucinated=gold_chars > 0,
    )


def count_detection(output: RLSeekOutput | None, gold: Sequence[Span], task: str) -> SampleCounts:
    """:func:`count_sample` of one of our detections (``None``: a failed run, an empty prediction)."""
    if output is None or not output.parse_ok:
        return count_sample((), gold, task, flagged=False)
    predicted = [(s.start, s.end) for s in output.spans]
    return count_sample(predicted, gold, task, phantom_chars=output.phantom_chars, flagged=output.predicted_positive)


def pooled_prf(samples: Iterable[SampleCounts]) -> PRF:
    """Span P/R/F1 with characters pooled over ``samples`` (§4.1); 0 where a denominator is 0. F1 is the spec's
    ``2PR/(P+R)`` of the pooled rates."""
    samples = list(samples)
    tp = sum(s.true_chars for s in samples)
    p = ratio(tp, sum(s.predicted_chars for s in samples))
    r = ratio(tp, sum(s.gold_chars for s in samples))
    return PRF(precision=p, recall=r, f1=harmonic_f1(p, r))


def span_metrics(samples: Sequence[SampleCounts]) -> dict[str, PRF]:
    """Per task (pooled over its samples) and ``average`` (the mean over tasks of P, of R and of F1).

    Example (§4.1):
        >>> s = [SampleCounts(task="summary", true_chars=10, predicted_chars=13, gold_chars=15, flagged=True,
        ...                   hallucinated=True),
        ...      SampleCounts(task="summary", true_chars=0, predicted_chars=4, gold_chars=0, flagged=True,
        ...                   hallucinated=False),
        ...      SampleCounts(task="summary", true_chars=0, predicted_chars=0, gold_chars=4, flagged=False,
        ...                   hallucinated=True)]
        >>> m = span_metrics(s)["summary"]
        >>> round(m.precision, 6), round(m.recall, 6), round(m.f1, 6)
        (0.588235, 0.526316, 0.555556)
    """
    tasks = sorted({s.task for s in samples})
    per_task = {t: pooled_prf(s for s in samples if s.task == t) for t in tasks}
    if per_task:
        per_task["average"] = PRF(
            precision=mean(m.precision for m in per_task.values()),
            recall=mean(m.recall for m in per_task.values()),
            f1=mean(m.f1 for m in per_task.values()),
        )
    return per_task


def sample_metrics(samples: Sequence[SampleCounts]) -> SampleMetrics:
    """Binary detection pooled over all samples (§4.2); 0 where a denominator is 0, F1 = 2PR/(P+R) as in §4.1."""
    counts = binary_counts([s.hallucinated for s in samples], [s.flagged for s in samples])
    p, r = precision(counts), recall(counts)
    return SampleMetrics(
        precision=p,
        recall=r,
        f1=harmonic_f1(p, r),
        fnr=false_negative_rate(counts),
        fpr=false_positive_rate(counts),
        **counts.model_dump(),
    )


def word_subsequence_overlap(quote: str, source_words: Sequence[str]) -> float:
    """Longest common *subsequence* of the quote's words and the source's words, over the quote's word count;
    0.0 for a quote without words. Words are :func:`~evigraph.tools.lcs.word_tokens` (runs of word characters,
    each punctuation mark apart; case-sensitive), so ``1889.`` still matches ``1889``.

    Example:
        >>> source = words("The Eiffel tower was completed in 1889.")
        >>> word_subsequence_overlap("the tower finished in 1889", source)
        0.6
    """
    words = _word_texts(quote)
    if not words:
        return 0.0
    # One DP row over the quote, advanced once per source word: O(|quote| * |source|) time, O(|quote|) memory.
    row = [0] * (len(words) + 1)
    for token in source_words:
        diagonal = 0
        for j, word in enumerate(words, start=1):
            above = row[j]
            row[j] = diagonal + 1 if token == word else max(row[j], row[j - 1])
            diagonal = above
    return row[-1] / len(words)


def quote_statistics(
    outputs: Sequence[RLSeekOutput], sources: Sequence[str], completions: Sequence[str]
) -> QuoteStatistics:
    """§4.3-4.4 over parallel lists of detections, the rendered sources they quoted and their completions."""
    quotes = [q for o in outputs for q in o.quotes]
    source_words = {id(s): _word_texts(s) for s in sources}
    word_overlaps = [
        word_subsequence_overlap(q.text, source_words[id(source)])
        for o, source in zip(outputs, sources, strict=True)
        for q in o.quotes
    ]
    reasoning = [_reasoning_chars(o, c) for o, c in zip(outputs, completions, strict=True)]
    texts = [[q.text for q in o.quotes] for o in outputs]
    distinct = [d for d in (distinct_n(t, 2) for t in texts) if d is not None]
    bleu = [b for b in (self_bleu(t) for t in texts) if b is not None]
    return QuoteStatistics(
        n=len(outputs),
        valid_rate=mean(o.quotes_valid for o in outputs),
        char_overlap=mean(q.overlap for q in quotes),
        word_overlap=mean(word_overlaps),
        found_rate=mean(q.found for q in quotes),
        quotes_per_sample=ratio(len(quotes), len(outputs)),
        no_quote_share=mean(not o.quotes for o in outputs),
        reasoning_chars=mean(reasoning),
        distinct_2=mean(distinct) if distinct else None,
        self_bleu=mean(bleu) if bleu else None,
    )


def words(text: str) -> list[str]:
    """The word tokens :func:`word_subsequence_overlap` compares."""
    return _word_texts(text)


def _word_texts(text: str) -> list[str]:
    return [token.text for token in word_tokens(text)]


def _ngrams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def _words(text: str) -> list[str]:
    """§4.4's default tokenisation: lowercase, whitespace split."""
    return text.lower().split()


def distinct_n(quotes: Sequence[str], n: int = 2) -> float | None:
    """Unique n-grams over all n-grams of one quotation set (n-grams never cross quotes); ``None`` without any.

    Example (§4.4):
        >>> distinct_n(["the tower was completed in 1889", "the tower is 330 metres tall"], 2)
        0.9
    """
    grams = [g for q in quotes for g in _ngrams(_words(q), n)]
    return len(set(grams)) / len(grams) if grams else None


def sentence_bleu(hypothesis: Sequence[str], references: Sequence[Sequence[str]], *, max_order: int = 3) -> float:
    """Sentence BLEU (§4.4 defaults): clipped n-gram precisions up to ``max_order`` with uniform weights, a zero
    count replaced by ``0.1 / #hypothesis n-grams`` (smoothing "method 1"), and the brevity penalty against the
    closest reference length. Hand-written (a few lines, exactly the spec's definition) rather than a
    dependency; checked against the spec's worked value.

    Example:
        >>> a, b = "the tower was completed in 1889".split(), "the tower is 330 metres tall".split()
        >>> round(sentence_bleu(a, [b]), 6)
        0.118563
    """
    if not hypothesis or not references:
        return 0.0
    log_sum = 0.0
    for n in range(1, max_order + 1):
        counts = Counter(_ngrams(hypothesis, n))
        ceiling: Counter[tuple[str, ...]] = Counter()
        for reference in references:
            ceiling |= Counter(_ngrams(reference, n))
        total = max(1, sum(counts.values()))
        clipped = sum(min(c, ceiling[g]) for g, c in counts.items())
        log_sum += math.log((clipped if clipped else 0.1) / total) / max_order
    length = len(hypothesis)
    closest = min((len(r) for r in references), key=lambda r: (abs(r - length), r))
    brevity = 1.0 if length > closest else math.exp(1 - closest / length)
    return brevity * math.exp(log_sum)


def self_bleu(quotes: Sequence[str], *, max_order: int = 3) -> float | None:
    """Mean over quotes of :func:`sentence_bleu` against the set's other quotes; ``None`` below two quotes.

    Example:
        >>> self_bleu(["completed in 1889", "completed in 1889"])
        1.0
    """
    if len(quotes) < 2:
        return None
    tokens = [_words(q) for q in quotes]
    scores = [sentence_bleu(tokens[i], tokens[:i] + tokens[i + 1 :], max_order=max_order) for i in range(len(tokens))]
    return mean(scores)


def leave_one_task_out(
    records: Sequence[T],
    held_out: str,
    *,
    task_of: Callable[[T], str] = lambda r: r.task,  # type: ignore[attr-defined]
) -> tuple[list[T], list[T]]:
    """The OOD split (§5): train on every other task, test on ``held_out``.

    Raises:
        ValueError: no record has the held-out task, or no record is left to train on.
    """
    train = [r for r in records if task_of(r) != held_out]
    test = [r for r in records if task_of(r) == held_out]
    if not test:
        raise ValueError(f"no record has task {held_out!r}")
    if not train:
        raise ValueError(f"every record has task {held_out!r}: nothing is left to train on")
    return train, test


def metrics_table(per_task: Mapping[str, PRF]) -> dict[str, dict[str, float]]:
    """``{task: {precision, recall, f1}}`` for JSON reports."""
    return {task: m.model_dump() for task, m in per_task.items()}


def _reasoning_chars(output: RLSeekOutput, completion: str) -> float:
    answer = next((s for s in output.steps[::-1]), None)
    return float(answer.end if answer is not None else len(completion))
