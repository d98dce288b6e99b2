"""Small helpers for messages written around text known only at run time: a word's article, and text shortened
for display."""

from __future__ import annotations

__all__ = ("cut_short", "shorten", "with_article")

_VOWELS = frozenset("aeiouAEIOU")
_QUOTES = "'\"`"
ELLIPSIS = "…"
# Dropped before the ellipsis: "as the source says,…" reads worse than "as the source says…".
_TRAILING = " \t\r\n,;:-–—"


def with_article(word: str) -> str:
    """``word`` after ``a`` or ``an``, chosen by its first letter (quotes skipped): ``an 'eval'``, ``a 'score'``.

    A vowel letter takes ``an``. The rule reads the letter, not the sound (it writes ``an user``, ``a NLI``);
    for the words it is used on (command, class and task names) the two rarely differ.
    """
    first = word.lstrip(_QUOTES)[:1]
    return f"{'an' if first in _VOWELS else 'a'} {word}"


def _whole_words(head: str, *, next_char: str) -> str:
    """``head`` without a word that goes on in ``next_char`` (a word cut in two), unless that word is all of it:
    a single word longer than the room is cut, since nothing shorter would show anything."""
    if next_char and not next_char.isspace() and not head[-1:].isspace():
        start = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
        if start > 0:
            head = head[:start]
    return head.rstrip(_TRAILING) or head


def shorten(text: str, limit: int) -> str:
    """``text`` as it is when it has at most ``limit`` characters; else its longest prefix of whole words that fits
    in ``limit`` with a final ``…`` (the one way evigraph shortens text for display, so no output ends mid-word).

    Example:
        >>> shorten("The tower was completed in 1895.", 20)
        'The tower was…'
        >>> shorten("short", 20)
        'short'
    """
    if len(text) <= limit:
        return text
    room = max(limit - len(ELLIPSIS), 0)
    return _whole_words(text[:room], next_char=text[room]) + ELLIPSIS


def cut_short(text: str) -> str:
    """``text`` that something else stopped at a length bound (a decoding grammar's ``maxLength``), shown as cut:
    a last word that may be a piece of a longer one is dropped unless the text ends at a space, and ``…`` ends it.

    Example:
        >>> cut_short("The claim is not supported by the sou")
        'The claim is not supported by the…'
    """
    if not text.strip():
        return text
    return _whole_words(text, next_char="x") + ELLIPSIS
