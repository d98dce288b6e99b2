"""Small helpers for messages written around a word known only at run time."""

from __future__ import annotations

__all__ = ("with_article",)

_VOWELS = frozenset("aeiouAEIOU")
_QUOTES = "'\"`"


def with_article(word: str) -> str:
    """``word`` after ``a`` or ``an``, chosen by its first letter (quotes skipped): ``an 'eval'``, ``a 'score'``.

    A vowel letter takes ``an``. The rule reads the letter, not the sound (it writes ``an user``, ``a NLI``);
    for the words it is used on (command, class and task names) the two rarely differ.
    """
    first = word.lstrip(_QUOTES)[:1]
    return f"{'an' if first in _VOWELS else 'a'} {word}"
