"""RLSeek metrics against specs/rlseek.md §4: the pooled span example, the binary example, the "average" as a
mean of P, R and F1 (checked on Table 1), Distinct-2 and Self-BLEU worked values, quote statistics, and the
leave-one-task-out split."""

from __future__ import annotations

import json

import pytest

from evigraph.agents.rlseek.metrics import (
    PRF,
    count_detection,
    count_sample,
    distinct_n,
    leave_one_task_out,
    quote_statistics,
    sample_metrics,
    self_bleu,
    sentence_bleu,
    span_metrics,
    word_subsequence_overlap,
    words,
)
from evigraph.agents.rlseek.verdict import detect

T = "The Eiffel Tower is 330 metres tall and was completed in 1899."
D = "The Eiffel Tower was completed in 1889. It is 330 metres tall."


def _detected(listed: list[str]) -> object:
    quoted = '## Step 1: x\n<quote>completed in 1889</quote>\n```json\n{"hallucination list": %s}\n```'
    return detect(quoted % json.dumps(listed), task="summary", source=D, response=T)


def _section_4_1() -> list:
    return [
        count_detection(_detected(["is 330 metres"]), [(20, 35)], "summary"),
        count_detection(_detected(["1899"]), [], "summary"),
        count_detection(_detected([]), [(57, 61)], "summary"),
    ]


def test_4_1_characters_are_pooled_over_a_tasks_samples() -> None:
    m = span_metrics(_section_4_1())["summary"]
    assert (m.precision, m.recall, m.f1) == pytest.approx((10 / 17, 10 / 19, 20 / 36))
    assert round(m.precision, 6) == 0.588235 and round(m.recall, 6) == 0.526316 and round(m.f1, 6) == 0.555556


def test_4_2_binary_metrics_pool_every_sample() -> None:
    samples = [*_section_4_1(), count_detection(_detected([]), [], "summary")]
    m = sample_metrics(samples)
    assert (m.tp, m.fp, m.fn, m.tn) == (1, 1, 1, 1)
    assert (m.precision, m.recall, m.f1, m.fnr, m.fpr) == (0.5, 0.5, 0.5, 0.5, 0.5)


def test_4_1_average_is_the_mean_of_each_metric_not_the_f1_of_the_means() -> None:
    # Table 1, RLSeek-7B: P/R/F1 per task; the reported average F1 is 57.5, not 2PR/(P+R) = 57.8.
    table = {"summary": (67.4, 44.3, 53.5), "qa": (58.0, 57.6, 57.8), "data-to-text": (69.6, 54.5, 61.2)}
    per_task = {t: PRF(precision=p, recall=r, f1=f) for t, (p, r, f) in table.items()}
    from evigraph.metrics import mean

    average = PRF(
        precision=mean(m.precision for m in per_task.values()),
        recall=mean(m.recall for m in per_task.values()),
        f1=mean(m.f1 for m in per_task.values()),
    )
    assert round(average.f1, 1) == 57.5 and round(average.precision, 1) == 65.0 and round(average.recall, 1) == 52.1
    samples = [
        count_sample([(0, 10)], [(0, 10)], "a", flagged=True),
        count_sample([(0, 10)], [(5, 30)], "b", flagged=True),
    ]
    report = span_metrics(samples)
    assert report["average"].f1 == pytest.approx((report["a"].f1 + report["b"].f1) / 2)


def test_unparsed_and_missing_predictions_count_as_empty() -> None:
    unparsed = detect('{"hallucination list": [1]}', task="summary", source=D, response=T)
    assert count_detection(unparsed, [(57, 61)], "summary") == count_detection(None, [(57, 61)], "summary")
    assert count_detection(None, [(57, 61)], "summary").predicted_chars == 0


def test_phantom_characters_lower_precision() -> None:
    counts = count_detection(_detected(["1899", "built by Gustave Eiffel"]), [(57, 61)], "summary")
    assert (counts.true_chars, counts.predicted_chars, counts.gold_chars) == (4, 4 + 23, 4)


def test_overlapping_predicted_and_gold_spans_count_each_character_once() -> None:
    counts = count_sample([(0, 10), (5, 15), (5, 15)], [(0, 4), (2, 6), (20, 22)], "x", flagged=True)
    assert (counts.true_chars, counts.predicted_chars, counts.gold_chars) == (6, 15, 8)


def test_4_4_distinct_2_and_self_bleu_worked_values() -> None:
    quotes = ["the tower was completed in 1889", "the tower is 330 metres tall"]
    assert distinct_n(quotes, 2) == pytest.approx(0.9)
    a, b = (q.split() for q in quotes)
    assert sentence_bleu(a, [b]) == pytest.approx(0.118563, abs=1e-6)
    assert self_bleu(quotes) == pytest.approx(0.118563, abs=1e-6)
    assert self_bleu(["same words here", "same words here"]) == pytest.approx(1.0)
    assert self_bleu(["only one"]) is None and distinct_n(["one"], 2) is None


def test_bleu_brevity_penalty_uses_the_closest_reference() -> None:
    short = ["the", "tower"]
    assert sentence_bleu(short, [["the", "tower", "is", "tall"], ["the", "tower"]]) == pytest.approx(
        sentence_bleu(short, [["the", "tower"]])
    )
    assert sentence_bleu(short, [["the", "tower", "is", "tall"]]) < sentence_bleu(short, [["the", "tower"]])


def test_word_level_subsequence_overlap() -> None:
    source = words(D)
    assert word_subsequence_overlap("completed in 1889.", source) == 1.0
    # The, was, in, 1889, "." of 7 tokens ("tower" is lower case here, "Tower" in the source)
    assert word_subsequence_overlap("The tower was finished in 1889.", source) == pytest.approx(5 / 7)
    assert word_subsequence_overlap("", source) == 0.0


def test_quote_statistics_over_detections() -> None:
    replies = [
        "## Step 1: a\n<quote>completed in 1889</quote>\n## Step 2: b\n<quote>330 metres high</quote>\n"
        '{"hallucination list": []}',
        '## Step 1: a\nno quote at all\n{"hallucination list": []}',
    ]
    outputs = [detect(r, task="summary", source=D, response=T) for r in replies]
    stats = quote_statistics(outputs, [D, D], replies)
    assert stats.n == 2 and stats.valid_rate == 0.5 and stats.no_quote_share == 0.5
    assert stats.quotes_per_sample == 1.0 and stats.found_rate == 0.5
    assert stats.char_overlap == pytest.approx((1 + 11 / 15) / 2)
    assert stats.word_overlap == pytest.approx((1 + 2 / 3) / 2)  # "330 metres high": 2 of 3 words
    assert stats.self_bleu is not None and stats.distinct_2 == 1.0


def test_leave_one_task_out() -> None:
    records = [{"id": i, "task": t} for i, t in enumerate(["summary", "qa", "data-to-text", "qa"])]
    train, test = leave_one_task_out(records, "qa", task_of=lambda r: r["task"])
    assert [r["id"] for r in train] == [0, 2] and [r["id"] for r in test] == [1, 3]
    with pytest.raises(ValueError, match="no record has task 'claim'"):
        leave_one_task_out(records, "claim", task_of=lambda r: r["task"])
