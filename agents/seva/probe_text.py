"""Text helpers the probe rules and the probe filter share (specs/seva.md §2.4): one tokenisation, the word diff
between a claim and its probe, and the predicates on words (a year, a month, a number, a negation).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from evigraph.agents.seva.probe_lexicon import lexicon

__all__ = (
    "NUMBER_PATTERN",
    "Change",
    "Token",
    "at_sentence_start",
    "changes",
    "contains_word",
    "is_month",
    "is_negation",
    "is_number",
    "is_word",
    "is_year",
    "match_case",
    "normalise",
    "number_value",
    "numbers_in",
    "tokens",
    "unique",
)

NUMBER_PATTERN = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?"
"""A number as claims write it: digits with optional thousands commas, decimals and a percent sign."""

_TOKEN_RE = re.compile(rf"{NUMBER_PATTERN}|[^\W\d_]+(?:['’][^\W\d_]+)*|\S")
_NUMBER_RE = re.compile(NUMBER_PATTERN)
_YEAR_RE = re.compile(r"\d{4}")

_WORDS = lexicon()
_T = TypeVar("_T")


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Change:
    """One differing region of the word diff: the original's tokens and text there, and the perturbed claim's."""

    removed: tuple[str, ...]
    added: tuple[str, ...]
    removed_text: str
    added_text: str


def tokens(text: str) -> list[Token]:
    """Numbers, words (with inner apostrophes) and single other characters, with their offsets."""
    return [Token(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _span_text(text: str, found: Sequence[Token]) -> str:
    return text[found[0].start : found[-1].end] if found else ""


def changes(original: str, claim: str) -> list[Change]:
    """The regions where ``claim``'s tokens differ from ``original``'s, in order."""
    old, new = tokens(original), tokens(claim)
    matcher = difflib.SequenceMatcher(a=[t.text for t in old], b=[t.text for t in new], autojunk=False)
    return [
        Change(
            tuple(t.text for t in old[i1:i2]),
            tuple(t.text for t in new[j1:j2]),
            _span_text(original, old[i1:i2]),
            _span_text(claim, new[j1:j2]),
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def is_word(token: str) -> bool:
    return token[:1].isalnum()


def is_year(token: str) -> bool:
    return bool(_YEAR_RE.fullmatch(token)) and 1000 <= int(token) <= 2099


def is_month(token: str) -> bool:
    return token in _WORDS.months


def is_number(token: str) -> bool:
    return bool(_NUMBER_RE.fullmatch(token)) or token.lower() in _WORDS.number_words


def number_value(token: str) -> float | None:
    if token.lower() in _WORDS.number_words:
        return float(_WORDS.number_words[token.lower()])
    if _NUMBER_RE.fullmatch(token):
        return float(token.rstrip("%").replace(",", ""))
    return None


def is_negation(token: str) -> bool:
    word = token.lower().replace("’", "'")
    return word in _WORDS.negations or word.endswith("n't")


def normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def numbers_in(text: str) -> set[float]:
    """The values of the numbers ``text`` writes, in digits or in words."""
    return {v for t in tokens(text) if (v := number_value(t.text)) is not None}


def contains_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w'’]){re.escape(word)}(?![\w'’])", text, re.IGNORECASE) is not None


def match_case(model: str, word: str) -> str:
    """``word`` in ``model``'s case: all capitals, capitalised, or as it is."""
    if model.isupper() and len(model) > 1:
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def at_sentence_start(text: str, position: int) -> bool:
    before = text[:position].rstrip().rstrip("\"'“”‘’([")
    return not before or before[-1] in ".!?:"


def unique(items: Iterable[_T]) -> list[_T]:
    """``items`` without repeats, first occurrences in order."""
    return list(dict.fromkeys(items))
