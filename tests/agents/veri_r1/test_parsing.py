"""Answer grammar (spec §2.5), label aliases and the reference-compatible reader (research notes §1.2, §1.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from evigraph.agents.veri_r1.labels import (
    label_matches,
    normalize_gold_label,
    normalize_id,
    relaxes_evidence,
)
from evigraph.agents.veri_r1.parsing import answer_bodies, parse_answer, parse_answer_compat
from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL
from tests.agents.veri_r1.fragments import PROTOCOL_TEXT


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("SUPPORTS", "SUPPORT"),
        ("supported", "SUPPORT"),
        ("REFUTES", "REFUTE"),
        ("CONTRADICT", "REFUTE"),
        ("NOT_ENOUGH_INFO", "NOT ENOUGH INFO"),
        ("not  enough\tinfo", "NOT ENOUGH INFO"),
        ("NEI", "NOT ENOUGH INFO"),
        ("NOT_SUPPORTED", "NOT SUPPORTED"),
        ("Not Support", "NOT SUPPORTED"),
    ],
)
def test_gold_label_aliases(raw: str, expected: str) -> None:
    assert normalize_gold_label(raw) == expected


def test_unknown_gold_label_names_value_and_accepted_ones() -> None:
    with pytest.raises(ValueError, match=r"'TRUE'.*SUPPORTS"):
        normalize_gold_label("TRUE")


def test_label_rules_for_hover_and_relaxation() -> None:
    assert label_matches("REFUTE", "NOT SUPPORTED") and label_matches("NOT ENOUGH INFO", "NOT SUPPORTED")
    assert not label_matches("SUPPORT", "NOT SUPPORTED") and not label_matches(None, "NOT SUPPORTED")
    assert not label_matches(None, "SUPPORT")
    assert relaxes_evidence("NOT ENOUGH INFO") and relaxes_evidence("NOT SUPPORTED")
    assert not relaxes_evidence("SUPPORT") and not relaxes_evidence("REFUTE")
    assert normalize_id("  Janelle_Mona\u0301e ") == "Janelle_Mon\u00e1e"


def test_well_formed_answer() -> None:
    answer = parse_answer("<think>t</think><answer>\nLabel: REFUTE\nEvidence: [[B]], [[ A ]], [[B]]\n</answer>")
    assert answer.n_blocks == 1 and answer.label == "REFUTE"
    assert answer.evidence == ("B", "A")  # first appearance, de-duplicated, stripped
    assert answer.label_ok and answer.evidence_ok and answer.body_ok


def test_label_is_case_and_whitespace_insensitive_but_exact() -> None:
    assert parse_answer("<answer>label:  not   enough info\nEvidence: </answer>").label == "NOT ENOUGH INFO"
    assert parse_answer("<answer>Label: SUPPORTS\nEvidence: [[A]]</answer>").label is None
    assert parse_answer("<answer>Label: TRUE\nEvidence: [[A]]</answer>").label is None


def test_empty_evidence_is_legal_but_unbracketed_ids_are_not() -> None:
    empty = parse_answer("<answer>Label: NOT ENOUGH INFO\nEvidence: </answer>")
    assert empty.evidence == () and empty.evidence_ok and empty.body_ok
    bare = parse_answer("<answer>Label: SUPPORT\nEvidence: e_1, e_3</answer>")
    assert bare.evidence == () and not bare.evidence_ok and not bare.body_ok
    missing = parse_answer("<answer>Label: SUPPORT</answer>")
    assert missing.label == "SUPPORT" and not missing.evidence_ok


def test_extra_text_in_body_fails_body_ok_only() -> None:
    answer = parse_answer("<answer>Label: SUPPORT\nEvidence: [[A]]\nI am sure.</answer>")
    assert answer.label == "SUPPORT" and answer.evidence == ("A",) and not answer.body_ok
    # Note: "I am sure." sits after Evidence:, so it is part of the evidence text and breaks evidence_ok too.
    assert not answer.evidence_ok


def test_two_answer_blocks_use_the_last() -> None:
    answer = parse_answer(
        "<answer>Label: SUPPORT\nEvidence: [[A]]</answer><answer>Label: REFUTE\nEvidence: [[B]]</answer>"
    )
    assert answer.n_blocks == 2 and answer.label == "REFUTE" and answer.evidence == ("B",)


def test_no_answer() -> None:
    answer = parse_answer("<plan>p</plan><think>x</think>")
    assert answer.n_blocks == 0 and answer.body is None and answer.label is None


def test_compat_reader_is_lenient_and_skips_the_prompt() -> None:
    text = (
        "<|im_start|>user\n<answer>Label: REFUTE\nEvidence: [[P]]</answer><|im_end|>\n<|im_start|>assistant\n"
        "<answer>Label: SUPPORTS\nEvidence: [[ Mona\u0301e ]], [[X]]</answer><|im_end|>"
    )
    answer = parse_answer_compat(text)
    assert answer.n_blocks == 1 and answer.label == "SUPPORT"
    assert answer.evidence == ("Mon\u00e1e", "X")
    # Without a preamble the whole string is scored and the last block wins.
    assert parse_answer_compat("<answer>NOT ENOUGH INFO</answer> <answer>x REFUTE</answer>").label == "REFUTE"
    assert parse_answer_compat("<answer>Label: TRUE</answer>").label is None


@settings(max_examples=200, deadline=None)
@given(PROTOCOL_TEXT)
def test_parsers_never_raise(text: str) -> None:
    strict, compat = parse_answer(text), parse_answer_compat(text)
    assert strict.body_ok <= (strict.label_ok and strict.evidence_ok)
    assert compat.body_ok == (compat.label is not None)
    assert strict.n_blocks >= 0 and compat.n_blocks >= 0


@pytest.mark.parametrize(
    "text",
    [
        "<plan>p</plan><think>t</think><answer>Label: SUPPORT\nEvidence: [[A]]</answer>",
        "<answer>a</answer>\n<answer>\nb\n</answer>",
        "<think>x</think><answer></answer>",
    ],
)
def test_regex_and_protocol_parser_agree_on_well_formed_text(text: str) -> None:
    blocks = VERI_R1_PROTOCOL.parse(text).blocks_of("answer")
    assert [b.content for b in blocks] == answer_bodies(text)
