"""The shared guide pieces (weak-model mode): what a guide offers a small model is taken from the given text, cut
to the given bounds, and free text only where the text has no usable piece."""

from __future__ import annotations

import re

from evigraph.protocol.guides import (
    JSON_UNQUOTABLE,
    choice_regex,
    choice_schema,
    clause_choices,
    phrase_choices,
    sentence_choices,
)
from tests.doubles import fits_json_guide

TEXT = "The ferry to Skye left at dawn, and it carried 40 cars. Nobody said “thanks”. It docked at Uig."


def test_sentences_keep_their_words_and_drop_what_no_guide_can_hold() -> None:
    assert sentence_choices(TEXT, max_chars=200) == [
        "The ferry to Skye left at dawn, and it carried 40 cars.",
        "It docked at Uig.",
    ]  # the sentence with curly quotes is not printable ASCII: the enforcer cannot track it
    assert sentence_choices(TEXT, max_chars=200, min_words=5, max_words=4) == []  # no 5-word piece under 4 words
    assert sentence_choices(TEXT, max_chars=200, min_words=5, max_words=5) == ["The ferry to Skye left"]
    assert sentence_choices('He said "go". Then he left.', max_chars=99, banned=JSON_UNQUOTABLE) == ["Then he left."]


def test_phrases_split_a_clause_before_its_prepositions() -> None:
    assert clause_choices(TEXT, max_chars=80) == [
        "The ferry to Skye left at dawn,",
        "and it carried 40 cars.",
        "It docked at Uig.",
    ]
    assert phrase_choices("The study enrolled 500 people from 12 countries.", max_chars=60) == [
        "The study enrolled 500 people from 12 countries.",
        "The study enrolled 500 people",
        "from 12 countries.",
    ]


def test_a_choice_regex_admits_the_pieces_only_and_falls_back_without_any() -> None:
    regex = choice_regex(["It docked at Uig.", "40 cars (approx.)"], "[a-z]+")
    assert re.fullmatch(regex, "It docked at Uig.") and re.fullmatch(regex, "40 cars (approx.)")
    assert not re.fullmatch(regex, "It docked at Uigs") and not re.fullmatch(regex, "It docked at Uig")
    assert choice_regex([], "[a-z]+") == "[a-z]+"


def test_a_choice_schema_admits_the_pieces_only_and_falls_back_without_any() -> None:
    def holds(schema: dict[str, object], value: str) -> bool:
        return fits_json_guide(
            {"type": "object", "properties": {"v": schema}, "required": ["v"]}, f'{{"v": "{value}"}}'
        )

    pieces = choice_schema(["It docked at Uig."], max_chars=20)
    assert holds(pieces, "It docked at Uig.") and not holds(pieces, "It docked") and not holds(pieces, "")
    assert holds(choice_schema(["It docked at Uig."], max_chars=20, empty=True), "")
    free = choice_schema([], max_chars=5)
    assert holds(free, "abcde") and not holds(free, "abcdef")
