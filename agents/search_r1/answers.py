"""Answer matching as Search-R1 scores it (specs/stepgap.md §3.2 tokenF1, §9 #11 and #14).

SQuAD normalisation: lower-case, drop punctuation, drop the articles a/an/the, collapse whitespace. Exact match
compares normalised strings against every gold alias; token F1 compares the normalised token multisets.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Iterable

__all__ = ("exact_match", "normalize_answer", "token_f1")

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Iterable[str]) -> int:
    """1 when the normalised prediction equals any normalised gold alias, else 0.

    >>> exact_match("the Beatles", ["Beatles", "The Fab Four"])
    1
    """
    predicted = normalize_answer(prediction)
    return int(any(predicted == normalize_answer(gold) for gold in golds))


def token_f1(a: str, b: str) -> float:
    """SQuAD token F1 of two strings, in [0, 1]; 0.0 when they share no normalised token.

    >>> round(token_f1("Whiplash director", "director of Whiplash"), 4)
    0.8
    """
    a_tokens, b_tokens = normalize_answer(a).split(), normalize_answer(b).split()
    common = sum((collections.Counter(a_tokens) & collections.Counter(b_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(a_tokens), common / len(b_tokens)
    return 2 * precision * recall / (precision + recall)
