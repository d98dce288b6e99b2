"""RLSeek rewards against specs/rlseek.md §3: every worked example (S1-S11, the LCS table, Q1-Q7, F1-F7), run
through the real parsing rules (P1-P5) where the example is about a model's output."""

from __future__ import annotations

import json
import random

import pytest

from evigraph.agents.rlseek.rewards import final_reward, quotation_penalty, span_reward, step_penalties
from evigraph.agents.rlseek.verdict import QuoteScorer, detect

T = "The Eiffel Tower is 330 metres tall and was completed in 1899."
D = "The Eiffel Tower was completed in 1889. It is 330 metres tall."


def _reply(listed: object, steps: list[list[str]] | None = None) -> str:
    """A completion with the given steps' quotes and final list (``listed`` may be a raw string)."""
    blocks = "".join(
        f"## Step {n}: check\n- Evidence: {''.join(f'<quote>{q}</quote>' for q in quotes)}\n- Evaluation: ok\n"
        for n, quotes in enumerate(steps or [["completed in 1889"]], start=1)
    )
    body = listed if isinstance(listed, str) else json.dumps({"hallucination list": listed})
    return f"{blocks}## Final Output\n```json\n{body}\n```"


def _span_reward(gold: list[tuple[int, int]], reply: str) -> float:
    out = detect(reply, task="summary", source=D, response=T)
    predicted = [(s.start, s.end) for s in out.spans]
    return span_reward(
        predicted, gold, phantom_chars=out.phantom_chars, listed=bool(out.raw_list), parse_ok=out.parse_ok
    )


@pytest.mark.parametrize(
    ("case", "gold", "listed", "expected"),
    [
        ("S1", [], [], 1.0),
        ("S2", [], ["330 metres tall"], 0.0),
        ("S3", [(57, 61)], [], 0.0),
        ("S4", [(57, 61)], ["1899"], 1.0),
        ("S5", [(44, 61)], ["in 1899"], 0.583333),
        ("S6", [(20, 35)], ["is 330 metres"], 0.714286),
        ("S7", [(20, 35), (57, 61)], ["330 metres tall", "built by Gustave Eiffel"], 0.526316),
        ("S8", [(20, 35), (57, 61)], ["Tower is 330 metres tall and was completed in 1899"], 0.550725),
        ("S9", [(57, 61)], ["1899", "1899"], 1.0),
        ("S10", [(0, 16)], ["the eiffel tower"], 1.0),
        ("S11", [(57, 61)], '{"hallucination list": ["1899",]}', 0.0),
    ],
)
def test_span_reward_worked_examples(case: str, gold: list[tuple[int, int]], listed: object, expected: float) -> None:
    assert _span_reward(gold, _reply(listed)) == pytest.approx(expected, abs=1e-6), case


def test_the_examples_offsets_are_the_spans_own() -> None:
    for text, span in [
        ("330 metres tall", (20, 35)),
        ("is 330 metres", (17, 30)),
        ("completed in 1899", (44, 61)),
        ("in 1899", (54, 61)),
        ("1899", (57, 61)),
        ("The Eiffel Tower", (0, 16)),
    ]:
        assert T[span[0] : span[1]] == text
    assert len(T) == 62


@pytest.mark.parametrize(
    ("quote", "length", "lcs", "miss"),
    [
        ("completed in 1889", 17, 17, 0.0),
        ("It is 330 metres tall.", 22, 22, 0.0),
        ("The tower was finished in 1889", 30, 10, 0.666667),
        ("330 metres high", 15, 11, 0.266667),
        ("Eiffel Tower, completed 1889", 28, 12, 0.571429),
        ("zzz", 3, 0, 1.0),
    ],
)
def test_lcs_table(quote: str, length: int, lcs: int, miss: float) -> None:
    check = QuoteScorer(D).check(quote, step=0)
    assert (check.length, check.lcs) == (length, lcs)
    assert 1 - check.overlap == pytest.approx(miss, abs=1e-6)


@pytest.mark.parametrize(
    ("case", "steps", "expected"),
    [
        ("Q1", [["completed in 1889"], ["It is 330 metres tall."]], 0.0),
        ("Q2", [["completed in 1889"], []], 0.5),
        ("Q3", [["completed in 1889"], ["   "]], 0.5),
        ("Q5", [["The tower was finished in 1889"], ["330 metres high"]], 0.466667),
        ("Q6", [["zzz"]], 1.0),
        ("Q7", [["completed in 1889", "Eiffel Tower, completed 1889"], ["It is 330 metres tall."]], 0.190476),
    ],
)
def test_penalty_worked_examples(case: str, steps: list[list[str]], expected: float) -> None:
    out = detect(_reply([], steps), task="summary", source=D, response=T)
    penalty = quotation_penalty([(q.lcs, q.length) for q in out.quotes], valid=out.quotes_valid)
    assert penalty == pytest.approx(expected, abs=1e-6), case


def test_q4_no_step_and_no_quote_is_invalid() -> None:
    out = detect('```json\n{"hallucination list": []}\n```', task="summary", source=D, response=T)
    assert len(out.steps) == 1 and out.steps[0].implicit and out.steps[0].problems == ("no_quote",)
    assert quotation_penalty([], valid=out.quotes_valid) == 0.5


@pytest.mark.parametrize(
    ("case", "span", "penalty", "expected"),
    [
        ("F1", 1.0, 0.0, 1.0),
        ("F2", 14 / 24, 7 / 15, 0.116667),
        ("F3", 1.0, 0.5, 0.5),
        ("F4", 0.0, 0.5, -0.5),
        ("F5", 20 / 28, 4 / 21, 0.523810),
        ("F6", 0.0, 1.0, -1.0),
        ("F7", 0.0, 0.0, 0.0),
    ],
)
def test_final_reward_table(case: str, span: float, penalty: float, expected: float) -> None:
    assert final_reward(span, penalty) == pytest.approx(expected, abs=1e-6), case


def test_f7_a_parse_failure_keeps_the_penalty_of_its_valid_quotes() -> None:
    reply = _reply('{"hallucination list": ["1899",]}', [["completed in 1889"], ["It is 330 metres tall."]])
    out = detect(reply, task="summary", source=D, response=T)
    assert not out.parse_ok and out.quotes_valid
    span = span_reward([], [(57, 61)], listed=False, parse_ok=out.parse_ok)
    penalty = quotation_penalty([(q.lcs, q.length) for q in out.quotes], valid=True)
    assert final_reward(span, penalty) == 0.0


def test_step_shares_always_sum_to_the_penalty() -> None:
    rng = random.Random(7)
    for _ in range(300):
        steps = [[(rng.randint(0, 9), 9) for _ in range(rng.randint(0, 3))] for _ in range(rng.randint(1, 4))]
        broken = [not quotes or rng.random() < 0.1 for quotes in steps]
        valid = not any(broken)
        overlaps = [o for quotes in steps for o in quotes]
        assert sum(step_penalties(steps, broken=broken)) == pytest.approx(quotation_penalty(overlaps, valid=valid))
