"""Building blocks of turn grammars for weak models (inference only): sentence and word patterns that keep a
small model's blocks closed and its queries on the subject.

A guide changes the sampling distribution, so agents use these only in weak-model mode, never for RL rollouts
or scoring. Bodies are printable ASCII without ``<``/``>`` (no tags inside), because lm-format-enforcer cannot
track partial multi-byte characters. Queries are built from the subject's own words (a claim, a question): a
small model otherwise copies the prompt's instructions into its queries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib.resources import files
from typing import Any

__all__ = (
    "JSON_UNQUOTABLE",
    "TEXT",
    "block",
    "body_regex",
    "choice_regex",
    "choice_schema",
    "clause_choices",
    "phrase_choices",
    "sentence_choices",
    "sentence_regex",
    "subject_words",
    "verbatim_choices",
    "words_regex",
)

_WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*")
_FUNCTION_WORDS = frozenset(
    line
    for line in (files("evigraph.protocol") / "function_words.txt").read_text().split("\n")
    if line and line[0] != "#"
)
"""Words that never make a query on their own (the grammar starts every query with another word)."""

TEXT = "[ -;=?-~]"
"""Printable ASCII but ``<`` and ``>``: no tags inside a block, and no partial multi-byte characters, which
lm-format-enforcer cannot track (a random or weak model then escapes the guide)."""

_SENTENCE = r"[A-Za-z0-9][ -\-/-;=?-~]{more}\."

JSON_UNQUOTABLE = '"\\<>'
"""Characters a choice inside a JSON string may not hold: the string's delimiter and escape, and tag brackets."""


_CLAUSE_BREAK = re.compile(
    r"(?<=[.!?;:,])\s+|\n+|\s+(?=(?:and|but|or|while|which|who|whose|with|after|before|because|although)\b)"
)
_PHRASE_BREAK = re.compile(r"\s+(?=(?:in|on|at|from|by|for|to|of|than|since|during|between)\b)")
"""Before a preposition: where a clause's facts part (``enrolled 500 people`` | ``from 12 countries``)."""
_SENTENCE_PIECE = re.compile(r"[^.!?\n]+[.!?]?")
_PRINTABLE = re.compile(r"^[ -~]+$")
MAX_CHOICES = 40


def verbatim_choices(
    raw_pieces: Sequence[str], *, max_chars: int, banned: str = "", min_words: int = 1, max_words: int | None = None
) -> list[str]:
    """Pieces of a given text a weak model may copy verbatim (a guide's alternatives): printable ASCII, none of
    ``banned``, at most ``max_words`` words and ``max_chars`` characters (cut at a word boundary), at least
    ``min_words`` words and 3 characters, first-seen order, at most :data:`MAX_CHOICES`. A small model offered
    free text copies the prompt's example instead of the texts it was given; offering the texts' own pieces
    keeps it on them.

    Example:
        >>> verbatim_choices(["The Nile flows north.", "It ends in the Mediterranean Sea."], max_chars=80, max_words=4)
        ['The Nile flows north.', 'It ends in the']
    """
    pieces: list[str] = []
    for raw in raw_pieces:
        piece = raw.strip()
        if max_words is not None and piece:  # the first words, verbatim (their own spacing)
            piece = re.match(rf"\S+(?:\s+\S+){{0,{max_words - 1}}}", piece).group()  # type: ignore[union-attr]
        if len(piece) > max_chars:
            piece = piece[:max_chars].rsplit(" ", 1)[0].strip()
        if (
            len(piece) >= 3
            and len(piece.split()) >= min_words
            and _PRINTABLE.match(piece)
            and not any(c in piece for c in banned)
        ):
            pieces.append(piece)
    return list(dict.fromkeys(pieces))[:MAX_CHOICES]


def sentence_choices(
    text: str, *, max_chars: int, banned: str = "", min_words: int = 1, max_words: int | None = None
) -> list[str]:
    """:func:`verbatim_choices` over ``text``'s sentences (runs ending at ``.``, ``!``, ``?`` or a newline)."""
    return verbatim_choices(
        [m.group() for m in _SENTENCE_PIECE.finditer(text)],
        max_chars=max_chars,
        banned=banned,
        min_words=min_words,
        max_words=max_words,
    )


def clause_choices(text: str, *, max_chars: int, banned: str = "") -> list[str]:
    """:func:`verbatim_choices` over ``text``'s clauses: split after punctuation, at line breaks and before
    conjunctions and relative pronouns."""
    return verbatim_choices(_CLAUSE_BREAK.split(text), max_chars=max_chars, banned=banned)


def phrase_choices(text: str, *, max_chars: int, banned: str = "") -> list[str]:
    """:func:`clause_choices`, then each clause's phrases (split again before prepositions) that leave out part of
    it: the pieces a claim can be aligned by, one fact at a time.

    Example:
        >>> phrase_choices("The trial enrolled 500 people from 12 countries.", max_chars=60)
        ['The trial enrolled 500 people from 12 countries.', 'The trial enrolled 500 people', 'from 12 countries.']
    """
    clauses = clause_choices(text, max_chars=max_chars, banned=banned)
    phrases = [p for clause in clauses for p in _PHRASE_BREAK.split(clause) if p.strip() != clause]
    return verbatim_choices([*clauses, *phrases], max_chars=max_chars, banned=banned)


def choice_regex(choices: Sequence[str], fallback: str) -> str:
    """One of ``choices`` verbatim, as a regex group; ``fallback`` (a regex) when there are none.

    Example:
        >>> choice_regex(["north", "south"], "[a-z]+"), choice_regex([], "[a-z]+")
        ('(?:north|south)', '[a-z]+')
    """
    return f"(?:{'|'.join(re.escape(c) for c in choices)})" if choices else fallback


def choice_schema(choices: Sequence[str], *, max_chars: int, empty: bool = False) -> dict[str, Any]:
    """A JSON-schema string that is one of ``choices`` verbatim (with ``empty``, or ``""``); a free string of at
    most ``max_chars`` characters when there are none (an input with no printable-ASCII piece)."""
    if not choices:
        return {"type": "string", "maxLength": max_chars}
    return {"type": "string", "enum": [*([""] if empty else []), *choices]}


def block(tag: str, body: str) -> str:
    """``<tag>body</tag>`` as a regex (``body`` is already a regex)."""
    return f"<{tag}>{body}</{tag}>"


def body_regex(max_chars: int | None) -> str:
    """A free block body; ``None`` (unbounded) keeps lm-format-enforcer's per-state cache warm (~5x faster per
    token) but leaves closing the block to the model."""
    return f"{TEXT}+" if max_chars is None else f"{TEXT}{{1,{max_chars}}}"


def sentence_regex(max_chars: int | None) -> str:
    """One sentence: printable ASCII without ``<``, ``>`` or a period inside, ending with a period."""
    return _SENTENCE.format(more="*" if max_chars is None else f"{{0,{max(0, max_chars - 2)}}}")


def subject_words(subject: str) -> tuple[list[str], list[str]]:
    """The subject's ASCII words in first-seen order: ``(content words, all words)``.

    Example:
        >>> content, words = subject_words("Hog Island Light was first lit in 1853.")
        >>> content, [w for w in words if w not in content]
        (['Hog', 'Island', 'Light', 'first', 'lit', '1853'], ['was', 'in'])
    """
    words = list(dict.fromkeys(w.rstrip(".") for w in _WORD.findall(subject) if w.isascii()))
    return [w for w in words if w.lower() not in _FUNCTION_WORDS], words


def words_regex(content: Sequence[str], others: Sequence[str], most: int) -> str:
    """A content word, then up to ``most - 1`` more words, single-spaced."""
    first = "(?:" + "|".join(re.escape(w) for w in content) + ")"
    any_word = "(?:" + "|".join(re.escape(w) for w in dict.fromkeys([*content, *others])) + ")"
    return f"{first}(?: {any_word}){{0,{most - 1}}}"
