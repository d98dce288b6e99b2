"""Find and verify a quote in a source text, with exact character offsets into the source.

Shared by StepGap Stage C, RLSeek (``specs/rlseek.md §3.2``) and RAG-Zeval. One policy, applied in order:

1. **exact** -- ``quote`` occurs verbatim in ``source``; the first occurrence is returned.
2. **normalized** -- both sides are normalised and compared: every run of whitespace (``str.isspace``)
   becomes one space, every other character is replaced by its ``str.casefold()`` (full Unicode case
   folding, which may change the length: ``"ß"`` folds to ``"ss"``, ``"ﬁ"`` to ``"fi"``), and the quote's
   leading and trailing whitespace is dropped. No other normalisation (no NFC/NFKC, no punctuation
   folding). A match must start and end on whole source characters: ``"s"`` does not match half of
   ``"ß"``, but ``"ss"`` matches all of it. The first such occurrence is returned.

Otherwise the quote is *not found* (``None``). A quote that is empty or only whitespace is never found.
With ``policy="exact"`` only rule 1 applies.

Offsets are half-open character offsets into ``source`` (``source[start:end]`` is the matched text, which
under rule 2 may differ from the quote in whitespace and case). For an :class:`EscapedText` source the
quote is searched in the *rendered* text, which is what a model saw and quoted from; escaping preserves
length, so the same offsets index the original and :func:`original_quote` returns its characters.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from evigraph.protocol.escaping import EscapedText

__all__ = ("MatchRule", "QuoteMatch", "QuotePolicy", "find_quote", "original_quote", "verify_quote")

QuotePolicy = Literal["exact", "normalized"]
"""``"normalized"`` (default): exact first, then whitespace- and case-insensitive. ``"exact"``: verbatim only."""

MatchRule = Literal["exact", "normalized"]
"""Which rule of the policy produced a :class:`QuoteMatch`."""


class QuoteMatch(BaseModel):
    """Where a quote was found: ``source[start:end]``, and which rule matched."""

    model_config = ConfigDict(frozen=True)

    start: int
    end: int
    rule: MatchRule

    @model_validator(mode="after")
    def _check(self) -> QuoteMatch:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"need 0 <= start <= end, got {self.start}, {self.end}")
        return self


def find_quote(quote: str, source: str | EscapedText, *, policy: QuotePolicy = "normalized") -> QuoteMatch | None:
    """Locate ``quote`` in ``source`` under the module's policy.

    Args:
        quote: the quoted text (e.g. a model's ``<quote>`` body).
        source: the text quoted from; for an :class:`EscapedText`, its rendered text is searched.
        policy: ``"normalized"`` (exact, then whitespace/case-insensitive) or ``"exact"``.

    Returns:
        The first match of the first rule that matches, or ``None`` if the quote is not found.

    Example:
        >>> find_quote("completed in 1889", "The Eiffel Tower was completed in 1889.")
        QuoteMatch(start=21, end=38, rule='exact')
        >>> find_quote("EIFFEL   tower", "The Eiffel\\nTower was completed in 1889.")
        QuoteMatch(start=4, end=16, rule='normalized')
        >>> find_quote("zzz", "The Eiffel Tower") is None
        True
    """
    text = source.text if isinstance(source, EscapedText) else source
    if not quote.strip():
        return None
    start = text.find(quote)
    if start >= 0:
        return QuoteMatch(start=start, end=start + len(quote), rule="exact")
    if policy == "exact":
        return None
    needle, _, _ = _normalize(quote.strip())
    haystack, origin, aligned = _normalize(text)
    position = haystack.find(needle)
    while position >= 0:
        stop = position + len(needle)
        if aligned[position] and aligned[stop]:
            return QuoteMatch(start=origin[position], end=origin[stop], rule="normalized")
        position = haystack.find(needle, position + 1)
    return None


def verify_quote(quote: str, source: str | EscapedText, *, policy: QuotePolicy = "normalized") -> bool:
    """Whether :func:`find_quote` finds ``quote`` in ``source``."""
    return find_quote(quote, source, policy=policy) is not None


def original_quote(match: QuoteMatch, source: EscapedText) -> str:
    """The *original* (unescaped) characters at ``match`` in an escaped source.

    Example:
        >>> from evigraph.protocol.escaping import escape_untrusted
        >>> escaped = escape_untrusted("use <b> here")
        >>> match = find_quote("‹b>", escaped)
        >>> match, original_quote(match, escaped)
        (QuoteMatch(start=4, end=7, rule='exact'), '<b>')
    """
    return source.original_span(match.start, match.end)


def _normalize(text: str) -> tuple[str, list[int], list[bool]]:
    """Collapse whitespace runs to one space and casefold each character, keeping an offset map.

    Returns ``(normalized, origin, aligned)``, each list of length ``len(normalized) + 1``: ``origin[k]`` is
    the source offset of the character that produced normalized position ``k`` (a whitespace run maps to
    its first character; the sentinel maps to ``len(text)``), and ``aligned[k]`` says whether position
    ``k`` is the first output of a source character (or of a whitespace run), i.e. a legal match boundary.
    The entry at ``k`` used as an *end* boundary is ``origin[k]``: the next source character's offset, or
    the start of the next whitespace run; a match never ends on whitespace, as the needle is stripped.
    """
    pieces: list[str] = []
    origin: list[int] = []
    aligned: list[bool] = []
    in_space = False
    for offset, char in enumerate(text):
        if char.isspace():
            if in_space:
                continue
            in_space = True
            folded = " "
        else:
            in_space = False
            folded = char.casefold()
        pieces.append(folded)
        origin.extend([offset] * len(folded))
        aligned.append(True)
        aligned.extend([False] * (len(folded) - 1))
    origin.append(len(text))
    aligned.append(True)
    return "".join(pieces), origin, aligned
