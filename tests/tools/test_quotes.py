"""Tests of :mod:`evigraph.tools.quotes`: the policy table, and properties against a brute-force search."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evigraph.protocol.escaping import escape_untrusted
from evigraph.tools.quotes import QuoteMatch, find_quote, original_quote, verify_quote

EIFFEL = "The Eiffel Tower was completed in 1889. It is 330 metres tall."


def normalized(text: str) -> str:
    """The policy's normalisation, written independently: collapse whitespace runs, casefold."""
    return re.sub(r"\s+", " ", text.casefold())


def brute_normalized_start(quote: str, source: str) -> int | None:
    """Smallest ``i`` with some ``j`` such that ``source[i:j]`` starts and ends on non-whitespace and
    normalises to the stripped quote."""
    needle = normalized(quote.strip())
    for i in range(len(source)):
        for j in range(i + 1, len(source) + 1):
            piece = source[i:j]
            if not piece[0].isspace() and not piece[-1].isspace() and normalized(piece) == needle:
                return i
    return None


CASES = [
    ("completed in 1889", EIFFEL, QuoteMatch(start=21, end=38, rule="exact")),  # verbatim
    ("It is 330 metres tall.", EIFFEL, QuoteMatch(start=40, end=62, rule="exact")),  # verbatim, final period
    ("the eiffel tower", EIFFEL, QuoteMatch(start=0, end=16, rule="normalized")),  # case differs
    ("  Eiffel \n\t Tower  ", EIFFEL, QuoteMatch(start=4, end=16, rule="normalized")),  # whitespace differs
    ("Eiffel Tower", "The Eiffel\n\n  Tower", QuoteMatch(start=4, end=19, rule="normalized")),  # source run
    ("the the", "The the", QuoteMatch(start=0, end=7, rule="normalized")),  # earliest normalized match
    ("STRASSE", "Die Straße.", QuoteMatch(start=4, end=10, rule="normalized")),  # ß folds to two characters
    ("straße", "DIE STRASSE", QuoteMatch(start=4, end=11, rule="normalized")),  # and the other way round
    ("ss", "xßy", QuoteMatch(start=1, end=2, rule="normalized")),  # the whole ß
    ("finished in 1889", EIFFEL, None),  # paraphrase: not found
    ("s", "ß", None),  # half of a folded character is not a match
    ("", EIFFEL, None),  # empty quote
    ("   ", EIFFEL, None),  # whitespace-only quote
    ("Eiffel-Tower", EIFFEL, None),  # punctuation is not whitespace
]


@pytest.mark.parametrize(("quote", "source", "expected"), CASES)
def test_policy_table(quote: str, source: str, expected: QuoteMatch | None) -> None:
    assert find_quote(quote, source) == expected
    assert verify_quote(quote, source) is (expected is not None)


def test_exact_policy_skips_normalization() -> None:
    assert find_quote("the eiffel tower", EIFFEL, policy="exact") is None
    assert find_quote("Eiffel Tower", EIFFEL, policy="exact") == QuoteMatch(start=4, end=16, rule="exact")


def test_escaped_source_offsets_map_back() -> None:
    original = "see <b>bold</b> and [[x]]: y"
    escaped = escape_untrusted(original)
    match = find_quote("‹b>bold‹/b>", escaped)
    assert match == QuoteMatch(start=4, end=15, rule="exact")
    assert original_quote(match, escaped) == original[4:15] == "<b>bold</b>"
    match = find_quote("［[X]]: Y", escaped)  # case-insensitive on the rendered text
    assert match is not None and original_quote(match, escaped) == "[[x]]: y"


def test_invalid_match_rejected() -> None:
    with pytest.raises(ValueError):
        QuoteMatch(start=3, end=2, rule="exact")


ALPHABET = "aAbBsSßİi \t\n"
SOURCES = st.text(alphabet=ALPHABET, max_size=25)
QUOTES = st.text(alphabet=ALPHABET, max_size=8)


@settings(max_examples=400, deadline=None)
@given(quote=QUOTES, source=SOURCES)
def test_matches_brute_force(quote: str, source: str) -> None:
    match = find_quote(quote, source)
    if not quote.strip():
        assert match is None
    elif quote in source:
        assert match == QuoteMatch(start=source.index(quote), end=source.index(quote) + len(quote), rule="exact")
    else:
        start = brute_normalized_start(quote, source)
        if start is None:
            assert match is None
        else:
            assert match is not None and match.rule == "normalized" and match.start == start
            assert normalized(source[match.start : match.end]) == normalized(quote.strip())


@settings(max_examples=200, deadline=None)
@given(source=SOURCES, start=st.integers(0, 25), size=st.integers(1, 10), data=st.data())
def test_restyled_slice_is_found(source: str, start: int, size: int, data: st.DataObject) -> None:
    piece = source[start : start + size]
    if not piece.strip():
        return
    # Change case and whitespace of a slice of the source: it must still be found.
    restyled = "".join(
        data.draw(st.sampled_from([" ", "\t ", "\n"])) if c.isspace() else data.draw(st.sampled_from([c, c.upper()]))
        for c in piece
    )
    match = find_quote(restyled, source)
    assert match is not None
    if match.rule == "exact":
        assert source[match.start : match.end] == restyled
    else:
        assert normalized(source[match.start : match.end]) == normalized(restyled.strip())


@settings(max_examples=200, deadline=None)
@given(original=st.text(alphabet="ab<[] Ab", max_size=30), start=st.integers(0, 30), size=st.integers(1, 10))
def test_rendered_quote_maps_to_original(original: str, start: int, size: int) -> None:
    escaped = escape_untrusted(original)
    quote = escaped.text[start : start + size]
    if not quote.strip():
        return
    match = find_quote(quote, escaped)
    assert match is not None and match.rule == "exact"
    assert escaped.text[match.start : match.end] == quote
    assert original_quote(match, escaped) == original[match.start : match.end]


@given(text=st.text(max_size=30))
def test_casefold_is_per_character(text: str) -> None:
    # The offset map folds one character at a time; that must equal folding the whole string.
    assert "".join(c.casefold() for c in text) == text.casefold()
