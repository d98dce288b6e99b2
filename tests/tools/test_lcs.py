"""Tests of :mod:`evigraph.tools.lcs`: spec worked examples, and the suffix automaton against a brute-force DP."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evigraph.tools.lcs import LcsMatch, SuffixAutomaton, WordToken, lcs_length, word_tokens

EIFFEL = "The Eiffel Tower was completed in 1889. It is 330 metres tall."
PS3 = (
    "PlayStation 3 had two hardware configurations announced: a 20 GB model and a 60 GB model, priced at "
    "US $499 and US $599. It was released in North America on November 17, 2006."
)


def brute_lcs(source: Sequence[object], query: Sequence[object]) -> int:
    """O(nm) dynamic programme: the longest common suffix of every pair of prefixes."""
    best = 0
    previous = [0] * (len(query) + 1)
    for a in source:
        row = [0] * (len(query) + 1)
        for j, b in enumerate(query, start=1):
            if a == b:
                row[j] = previous[j - 1] + 1
                best = max(best, row[j])
        previous = row
    return best


def occurs_at(needle: Sequence[object], haystack: Sequence[object]) -> list[int]:
    n = len(needle)
    return [i for i in range(len(haystack) - n + 1) if list(haystack[i : i + n]) == list(needle)]


def check_match(source: Sequence[object], query: Sequence[object], match: LcsMatch) -> None:
    assert match.length == brute_lcs(source, query)
    if match.length == 0:
        assert (match.source_start, match.query_start) == (0, 0)
        return
    shared = query[match.query_start : match.query_start + match.length]
    assert list(source[match.source_start : match.source_start + match.length]) == list(shared)
    # Documented tie-break: the match ending earliest in the query, at its first occurrence in the source.
    earliest_query = min(
        i
        for i in range(len(query))
        if occurs_at(query[i : i + match.length], source) and len(query[i : i + match.length]) == match.length
    )
    assert match.query_start == earliest_query
    assert match.source_start == occurs_at(shared, source)[0]


# specs/rlseek.md §3.2: quote, LCS with D (characters).
RLSEEK_CASES = [
    ("completed in 1889", 17),  # verbatim
    ("It is 330 metres tall.", 22),  # verbatim, with the final period
    ("The tower was finished in 1889", 10),  # "ed in 1889"
    ("330 metres high", 11),  # "330 metres "
    ("Eiffel Tower, completed 1889", 12),  # "Eiffel Tower"
    ("zzz", 0),  # fabricated
]


@pytest.mark.parametrize(("quote", "expected"), RLSEEK_CASES)
def test_rlseek_3_2_lcs_examples(quote: str, expected: int) -> None:
    sam = SuffixAutomaton(EIFFEL)
    match = sam.longest_common_substring(quote)
    assert match.length == expected == lcs_length(EIFFEL, quote)
    check_match(EIFFEL, quote, match)


SENTENCE_1 = PS3[: PS3.index(" It was")]
# specs/rag-zeval.md §3.2: evidence, its token count and its token LCS with c.
RAG_ZEVAL_CASES = [
    (SENTENCE_1, 28, 28),  # EV1: first sentence verbatim
    ("a 20 GB model and a 60 GB model", 9, 9),  # EV2 (scored 0 by the reward for < 10 tokens)
    (PS3[len(SENTENCE_1) + 1 :], 12, 12),  # EV3: second sentence verbatim
    ("The PS3 had two hardware configurations: a 20 GB model and a 60 GB model, priced at $499 and $599.", 25, 13),
    ("playstation 3 had two hardware configurations announced: a 20 GB model", 12, 11),  # EV5: case-sensitive
    ("The console was launched in Europe in March 2007 at a price of 599 euros.", 16, 1),  # EV6
    ("a 20 GB model and a 60 GB model, priced", 11, 11),  # EV7
]


@pytest.mark.parametrize(("evidence", "n_tokens", "expected"), RAG_ZEVAL_CASES)
def test_rag_zeval_3_2_token_lcs_examples(evidence: str, n_tokens: int, expected: int) -> None:
    context = [t.text for t in word_tokens(PS3)]
    assert len(context) == 40
    tokens = [t.text for t in word_tokens(evidence)]
    assert len(tokens) == n_tokens
    match = SuffixAutomaton(context).longest_common_substring(tokens)
    assert match.length == expected
    check_match(context, tokens, match)


def test_word_tokens_offsets_and_pattern() -> None:
    text = "  US $499,\tnaïve_x  é!"
    tokens = word_tokens(text)
    assert [t.text for t in tokens] == ["US", "$", "499", ",", "naïve_x", "é", "!"]
    assert all(text[t.start : t.end] == t.text for t in tokens)
    assert tokens[0] == WordToken("US", 2, 4)
    assert word_tokens("") == [] and word_tokens(" \n ") == []


@pytest.mark.parametrize(
    ("source", "query", "expected"),
    [
        ("", "abc", LcsMatch(0, 0, 0)),  # empty source
        ("abc", "", LcsMatch(0, 0, 0)),  # empty query
        ("abc", "xyz", LcsMatch(0, 0, 0)),  # nothing shared
        ("abcabc", "zbc", LcsMatch(2, 1, 1)),  # first occurrence in the source
        ("xyab", "abzxy", LcsMatch(2, 2, 0)),  # tie in length: the one ending earliest in the query
        ("aaaa", "aa", LcsMatch(2, 0, 0)),
        ("abxabcd", "abcd", LcsMatch(4, 3, 0)),  # needs a clone state
    ],
)
def test_table(source: str, query: str, expected: LcsMatch) -> None:
    assert SuffixAutomaton(source).longest_common_substring(query) == expected


def test_automaton_is_reusable_and_bounded() -> None:
    sam = SuffixAutomaton("abracadabra")
    assert len(sam) == 11
    assert sam.num_states <= 2 * 11 - 1
    assert [sam.longest_common_substring(q).length for q in ("cad", "abra", "zz", "racad")] == [3, 4, 0, 5]
    assert SuffixAutomaton("").num_states == 1


def test_match_pickles() -> None:
    match = LcsMatch(3, 1, 2)
    assert pickle.loads(pickle.dumps(match)) == match


SMALL_TEXT = st.text(alphabet="abcd", max_size=40)
TOKENS = st.lists(st.sampled_from(["the", "a", "cat", "sat", 7]), max_size=30)


@settings(max_examples=400, deadline=None)
@given(source=SMALL_TEXT, query=SMALL_TEXT)
def test_characters_match_brute_force(source: str, query: str) -> None:
    check_match(source, query, SuffixAutomaton(source).longest_common_substring(query))


@settings(max_examples=300, deadline=None)
@given(source=TOKENS, query=TOKENS)
def test_tokens_match_brute_force(source: list[object], query: list[object]) -> None:
    sam = SuffixAutomaton(source)
    check_match(source, query, sam.longest_common_substring(query))
    assert sam.num_states <= max(len(source) + 1, 2 * len(source) - 1)


@settings(max_examples=200, deadline=None)
@given(source=SMALL_TEXT, start=st.integers(0, 40), size=st.integers(0, 40))
def test_substring_of_source_is_found_whole(source: str, start: int, size: int) -> None:
    piece = source[start : start + size]
    match = SuffixAutomaton(source).longest_common_substring(piece)
    assert match.length == len(piece)
    assert source[match.source_start : match.source_start + match.length] == piece
