"""Longest common substring (contiguous) by suffix automaton, over characters or word tokens.

Implements the LCS of ``specs/rlseek.md §3.2`` (quotation penalty, over characters) and of
``specs/rag-zeval.md §3.2`` (evidence reward, over :func:`word_tokens`). Build a :class:`SuffixAutomaton`
once per source (O(n) time, at most ``max(n + 1, 2n - 1)`` states), then answer every query in O(m): walk
the query through the automaton keeping ``(state, current length)``; on a missing transition follow suffix
links, resetting the length to the link's length, until a transition exists or the root is left.

The automaton works over any sequence of hashable symbols: a ``str`` (characters) or, for token-level LCS,
a list of token strings or ids. No normalisation happens here; callers normalise first (e.g. RLSeek
collapses whitespace runs in both the quote and the document).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

__all__ = ("WORD_TOKEN_PATTERN", "LcsMatch", "SuffixAutomaton", "WordToken", "lcs_length", "word_tokens")

T = TypeVar("T", bound=Hashable)

WORD_TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")
"""RAG-Zeval's default tokenizer (``specs/rag-zeval.md §3.2``): a run of word characters (Unicode ``\\w``:
letters, digits, underscore) or one character that is neither a word character nor whitespace
(punctuation, symbols). Whitespace separates tokens and is dropped. Case-sensitive."""


@dataclass(frozen=True, slots=True)
class LcsMatch:
    """A longest common substring of a source and a query.

    ``source[source_start:source_start + length] == query[query_start:query_start + length]``. Among all
    common substrings of maximal length, the one that *ends earliest in the query* is reported, at its
    *first occurrence in the source*. When nothing is shared, ``length`` is 0 and both starts are 0.
    """

    length: int
    source_start: int
    query_start: int


class WordToken(NamedTuple):
    """One token of :func:`word_tokens`: its text and half-open character offsets into the input."""

    text: str
    start: int
    end: int


class SuffixAutomaton(Generic[T]):
    """The suffix automaton of one source sequence, built once and queried many times.

    Args:
        source: the sequence to search in: a ``str`` or any sequence of hashable symbols (tokens, ids).

    Example:
        >>> sam = SuffixAutomaton("The Eiffel Tower was completed in 1889.")
        >>> sam.longest_common_substring("The tower was finished in 1889")
        LcsMatch(length=10, source_start=28, query_start=20)
        >>> SuffixAutomaton(["a", "b", "c"]).longest_common_substring(["x", "b", "c"]).length
        2
    """

    __slots__ = ("_first_end", "_length", "_link", "_next", "_source_len")

    def __init__(self, source: Sequence[T]) -> None:
        # Parallel lists indexed by state; state 0 is the root. ``first_end[s]`` is the end position
        # (inclusive) of the first occurrence of the strings of state ``s``; a clone inherits it.
        nxt: list[dict[T, int]] = [{}]
        link: list[int] = [-1]
        length: list[int] = [0]
        first_end: list[int] = [-1]
        last = 0
        for pos, symbol in enumerate(source):
            cur = len(length)
            nxt.append({})
            length.append(length[last] + 1)
            link.append(0)
            first_end.append(pos)
            p = last
            while p != -1 and symbol not in nxt[p]:
                nxt[p][symbol] = cur
                p = link[p]
            if p != -1:
                q = nxt[p][symbol]
                if length[p] + 1 == length[q]:
                    link[cur] = q
                else:
                    clone = len(length)
                    nxt.append(nxt[q].copy())
                    length.append(length[p] + 1)
                    link.append(link[q])
                    first_end.append(first_end[q])
                    while p != -1 and nxt[p].get(symbol) == q:
                        nxt[p][symbol] = clone
                        p = link[p]
                    link[q] = clone
                    link[cur] = clone
            last = cur
        self._next = nxt
        self._link = link
        self._length = length
        self._first_end = first_end
        self._source_len = len(source)

    def __len__(self) -> int:
        """Length of the source sequence."""
        return self._source_len

    @property
    def num_states(self) -> int:
        """Number of states, root included (at most ``max(n + 1, 2n - 1)`` for a source of length ``n``)."""
        return len(self._length)

    def longest_common_substring(self, query: Sequence[T]) -> LcsMatch:
        """The longest contiguous run shared by the source and ``query``, in O(len(query)).

        Args:
            query: a sequence of the same kind of symbols as the source.

        Returns:
            The match (see :class:`LcsMatch` for which one is reported among ties); length 0 if none.
        """
        nxt, link, length = self._next, self._link, self._length
        state = 0
        current = 0
        best = 0
        best_state = 0
        best_end = -1
        for i, symbol in enumerate(query):
            target = nxt[state].get(symbol)
            if target is None:
                state = link[state]
                while state != -1 and symbol not in nxt[state]:
                    state = link[state]
                if state == -1:
                    state = 0
                    current = 0
                    continue
                current = length[state] + 1
                state = nxt[state][symbol]
            else:
                state = target
                current += 1
            if current > best:
                best = current
                best_state = state
                best_end = i
        if best == 0:
            return LcsMatch(length=0, source_start=0, query_start=0)
        return LcsMatch(
            length=best,
            source_start=self._first_end[best_state] - best + 1,
            query_start=best_end - best + 1,
        )


def lcs_length(source: Sequence[T], query: Sequence[T]) -> int:
    """Length of the longest common substring of two sequences (builds a throwaway automaton over ``source``).

    Build a :class:`SuffixAutomaton` yourself when one source meets several queries.

    Example:
        >>> lcs_length("It is 330 metres tall.", "330 metres high")
        11
    """
    return SuffixAutomaton(source).longest_common_substring(query).length


def word_tokens(text: str) -> list[WordToken]:
    """Split ``text`` with :data:`WORD_TOKEN_PATTERN`, keeping each token's character offsets.

    Example:
        >>> [t.text for t in word_tokens("priced at US $499.")]
        ['priced', 'at', 'US', '$', '499', '.']
        >>> word_tokens("a b")[1]
        WordToken(text='b', start=2, end=3)
    """
    return [WordToken(m.group(), m.start(), m.end()) for m in WORD_TOKEN_PATTERN.finditer(text)]
