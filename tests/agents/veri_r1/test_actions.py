"""Turn routing (spec §2.6), the observation cap and the label-token confidence."""

from __future__ import annotations

import math

import pytest

from evigraph.agents.veri_r1.actions import classify_turn, normalize_query
from evigraph.agents.veri_r1.confidence import confidence_tier, label_token_probability
from evigraph.text_budget import count_tokens, truncate_to_tokens


def kind(text: str, n_turns: int = 1, n_search: int = 0) -> str:
    return classify_turn(text, n_turns=n_turns, n_search=n_search, max_searches=3, max_turns=4).kind


def test_route_order_follows_the_spec() -> None:
    answer = "<think>t</think><answer>Label: SUPPORT\nEvidence: [[A]]</answer>"
    assert kind(answer, n_turns=4) == "answer"  # a complete answer wins even on the last turn
    assert kind("<search>q</search>", n_turns=4, n_search=3) == "final_turn"
    assert kind("<plan>p</plan><search>q</search>") == "search"
    assert kind("<search>q</search>", n_turns=3, n_search=3) == "over_budget"
    assert kind("<plan>p</plan>no action") == "invalid"
    assert kind("<search>   </search>") == "invalid"  # an empty query is no action (F2)
    assert kind("<think>x</think><information>[[A]]: y</information><search>q</search>") == "forged_information"
    assert kind("<answer>Label: SUPPORT") == "invalid"  # unclosed answer: not complete


def test_search_query_is_the_first_top_level_search() -> None:
    action = classify_turn(
        "<think><search>nested</search></think><search> first </search><search>second</search>",
        n_turns=1, n_search=0, max_searches=3, max_turns=4,
    )  # fmt: skip
    assert action.kind == "search" and action.query == "first"


def test_duplicate_queries_compare_case_and_spacing_insensitively() -> None:
    assert normalize_query("  Hog   ISLAND light ") == normalize_query("hog island light")


def test_truncation_keeps_whole_lines_within_the_budget() -> None:
    text = "[[A]]: one two three\n[[B]]: four five six\n[[C]]: seven eight nine"
    assert truncate_to_tokens(text, 100) == (text, False)
    cut, truncated = truncate_to_tokens(text, 9)
    assert truncated and cut == "[[A]]: one two three\n[[B]]: four five six"
    assert count_tokens(cut) <= 9
    single, _ = truncate_to_tokens("[[A]]: " + "word " * 50, 5)
    assert count_tokens(single) == 5


class CharTokenizer:
    """One token per character (enough to check the offset search)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids, **kwargs) -> str:
        return "".join(chr(i) for i in ids)


def test_truncation_with_a_tokenizer_is_exact() -> None:
    cut, truncated = truncate_to_tokens("abcdef\nghij", 8, CharTokenizer())
    assert truncated and cut == "abcdef"


def test_label_token_probability_reads_the_first_label_token() -> None:
    text = "<think>x</think><answer>\nLabel: REFUTE\nEvidence: [[A]]\n</answer>"
    tokenizer = CharTokenizer()
    ids = tokenizer.encode(text)
    logprobs = [-0.01] * len(ids)
    logprobs[text.index("REFUTE")] = math.log(0.9)
    assert label_token_probability(ids, logprobs, tokenizer.decode) == pytest.approx(0.9)
    maybe = tokenizer.encode("<answer>Label: maybe</answer>")
    assert label_token_probability(maybe, [0.0] * len(maybe), tokenizer.decode) is None
    assert label_token_probability(ids, logprobs[:-1], tokenizer.decode) is None


def test_confidence_tiers_use_the_spec_bounds() -> None:
    assert [confidence_tier(p) for p in (0.5, 0.85, 0.95, 0.951)] == ["low", "mid", "mid", "high"]


def test_environment_notes_hold_no_protocol_tags() -> None:
    from evigraph.agents.veri_r1 import prompts
    from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL

    notes = [
        prompts.INVALID_ACTION_NOTE,
        prompts.BUDGET_SPENT_NOTE,
        prompts.answer_now_note(),
        prompts.duplicate_query_note(1),
        prompts.forged_information_note(),
    ]
    for note in notes:
        assert not VERI_R1_PROTOCOL.parse(note, writer="environment").issues
        assert "<" not in note
