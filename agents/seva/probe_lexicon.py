"""The word lists of SEVA's probe rules (specs/seva.md §2.4), read once from the JSON files in ``wordlists/``.

Each file holds some of :class:`ProbeLexicon`'s fields, grouped by the rule that reads them (``calendar``,
``numbers``, ``names``, ``negation``, ``antonyms``, ``insertions``). Order matters where a field is a list: the
rules draw among its entries with a seeded generator, so reordering a list changes which probe a seed gives.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from evigraph.errors import ConfigError

__all__ = ("WORDLISTS", "ProbeLexicon", "lexicon", "load_lexicon")

WORDLISTS = "wordlists"
"""The folder, next to this module, that holds the word-list files."""


class ProbeLexicon(BaseModel):
    """Every word list the probe rules use."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    months: dict[str, int]
    """Month names in calendar order, each with its most days (February 29): a moved month keeps the day valid."""
    weekdays: tuple[str, ...]
    number_words: dict[str, int]
    """Spelt-out numbers and their values."""
    starters: frozenset[str]
    """Words capitalised only because they open a sentence or a phrase: never an entity on their own."""
    not_entities: frozenset[str]
    """Capitalised words that name roles or quantities rather than entities (month and weekday names are added)."""
    joiners: frozenset[str]
    """Lower-case words inside a name ("Bank of England")."""
    negations: frozenset[str]
    contractions: dict[str, str]
    """Negative contraction → its positive auxiliary."""
    negative_swaps: dict[str, str]
    """Negative pronoun or determiner → its positive form."""
    no_blockers: frozenset[str]
    """Words after which "no" is left alone: the positive form would not read as a sentence."""
    auxiliaries: tuple[str, ...]
    perfect_auxiliaries: frozenset[str]
    do_auxiliaries: frozenset[str]
    determiners: frozenset[str]
    """Words before which an auxiliary is a noun ("the will"), so "not" cannot follow it."""
    irregular_participles: frozenset[str]
    do_objects: frozenset[str]
    """Words after "do/does/did" that mark the main verb "do" (its object or an adverb), where "not" cannot go."""
    antonym_pairs: tuple[tuple[str, str], ...]
    """Verbs and adjectives with their opposites; each pair works both ways."""
    gradable_verbs: frozenset[str]
    """Verbs of change an intensifying adverb can sit in front of without sounding odd."""
    intensifiers: tuple[str, ...]
    scope_templates: tuple[str, ...]
    """Appended qualifiers that over-generalise (presupposition injection); each starts with its separator."""
    fabrication_templates: tuple[str, ...]
    """Appended details no source can back (unanswerable wrapping); each starts with its separator."""

    @model_validator(mode="after")
    def _subsets(self) -> ProbeLexicon:
        for name in ("perfect_auxiliaries", "do_auxiliaries"):
            stray = getattr(self, name) - set(self.auxiliaries)
            if stray:
                raise ValueError(f"{name} holds words that are not auxiliaries: {', '.join(sorted(stray))}")
        return self

    @property
    def antonyms(self) -> dict[str, tuple[str, ...]]:
        """Each word of :attr:`antonym_pairs` → its opposites, in file order."""
        opposites: dict[str, tuple[str, ...]] = {}
        for left, right in self.antonym_pairs:
            opposites[left] = (*opposites.get(left, ()), right)
            opposites[right] = (*opposites.get(right, ()), left)
        return opposites

    @property
    def antonym_set(self) -> frozenset[tuple[str, str]]:
        """:attr:`antonym_pairs` in both directions."""
        return frozenset(self.antonym_pairs) | frozenset((b, a) for a, b in self.antonym_pairs)


@functools.cache
def lexicon() -> ProbeLexicon:
    """The word lists shipped in ``wordlists/``, read and checked on the first call."""
    return load_lexicon(resources.files("evigraph.agents.seva").joinpath(WORDLISTS))


def load_lexicon(folder: Traversable) -> ProbeLexicon:
    """The word lists of every ``*.json`` file in ``folder``, merged and checked.

    Raises:
        ConfigError: a file is not valid JSON, two files set the same field, or a field is missing, unknown or
            malformed (the message names the file and the field).
    """
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        where = f"{WORDLISTS}/{entry.name}"
        try:
            fields = json.loads(entry.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ConfigError(f"{where}:{error.lineno}: not valid JSON ({error.msg})", source=where) from error
        if not isinstance(fields, dict):
            raise ConfigError(f"{where}: expected a JSON object of word lists", source=where)
        for name in fields:
            if name in origin:
                raise ConfigError(f"{where}: field {name!r} is already set in {origin[name]}", source=where)
            origin[name] = where
        merged.update(fields)
    try:
        return ProbeLexicon.model_validate(merged)
    except ValidationError as error:
        first = error.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        where = origin.get(field, f"{WORDLISTS}/")
        location = ".".join(str(part) for part in first["loc"]) or "(whole lexicon)"
        raise ConfigError(f"{where}: {location}: {first['msg']}", source=where) from error
