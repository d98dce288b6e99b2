"""Where a text names things: the sites and the name pools of SEVA's entity confusion and multi-hop graft probes
(specs/seva.md §2.4).

Two finders of one shape (:data:`EntityFinder`: texts read together → each text's entity spans):

- :func:`spacy_entity_finder`, spaCy NER (the English pipeline ``evigraph setup`` installs, loaded once by
  :func:`evigraph.tools.ner.load_spacy_ner`), keeping the kinds of entity a claim can swap for another of its
  kind (:data:`ENTITY_KINDS`; dates, numbers and quantities are the numerical strategy's). It knows that a
  sentence-initial "Nokia" is a name and that "the Minister" is not, and gives each name its kind, so a swap
  can keep the kind (a person for a person).
- :func:`capitalised_chunks`, the fallback when no pipeline is installed: runs of capitalised words (joined by
  of/the/de/and), less sentence openers, roles and month names; a lone sentence-initial word counts only when
  the texts read together show it capitalised elsewhere.

:func:`default_entity_finder` picks the first that is available and logs its choice once per process.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from evigraph.agents.seva.probe_lexicon import lexicon
from evigraph.agents.seva.probe_text import at_sentence_start
from evigraph.tools.ner import SpacyNER, load_spacy_ner

__all__ = (
    "CAPITALISED_CHUNKS",
    "ENTITY_KINDS",
    "EntityFinder",
    "EntitySpan",
    "FinderChoice",
    "capitalised_chunks",
    "default_entity_finder",
    "spacy_entity_finder",
)

logger = logging.getLogger(__name__)

ENTITY_KINDS = frozenset({"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "PRODUCT", "WORK_OF_ART", "EVENT"})
"""The spaCy (OntoNotes) entity labels that become sites and pool names."""
CAPITALISED_CHUNKS = "capitalised-chunks"
"""The fallback finder's name in logs and run records."""

_WORDS = lexicon()
_NOT_ENTITIES = _WORDS.not_entities | set(_WORDS.months) | set(_WORDS.weekdays)
# What NER spans carry around a name that a swap must leave in place: "the United States", "Presley's", "Dive:".
_LEADING_RE = re.compile(r"(?:the|The)\s+")
_TRAILING_RE = re.compile(r"(?:['’]s?|\s*[,:;\-–—]+)$")


@dataclass(frozen=True)
class EntitySpan:
    """A name in a text: its characters ``text[start:end]`` and, from NER, its kind (``None`` from the
    fallback)."""

    text: str
    start: int
    end: int
    kind: str | None = None

    @property
    def words(self) -> list[str]:
        return self.text.split()


EntityFinder = Callable[[Sequence[str]], list[list[EntitySpan]]]
"""Texts → the entity spans of each, in order of position. The texts are read together: the fallback learns from
one text which capitalised words are names in another."""


class FinderChoice(NamedTuple):
    """The entity finder in use and its name (``spacy:<pipeline>`` or :data:`CAPITALISED_CHUNKS`)."""

    find: EntityFinder
    name: str


# spaCy NER


def spacy_entity_finder(ner: SpacyNER) -> EntityFinder:
    """An :data:`EntityFinder` over spaCy NER: the entities of :data:`ENTITY_KINDS`, without a leading "the", a
    possessive or trailing punctuation ("the United States" is swapped as "United States")."""

    def find(texts: Sequence[str]) -> list[list[EntitySpan]]:
        found = []
        for entities in ner.batch(texts):
            spans = []
            for entity in entities:
                if entity.label not in ENTITY_KINDS:
                    continue
                name = _TRAILING_RE.sub("", entity.text)
                leading = _LEADING_RE.match(name)
                skip = leading.end() if leading else 0
                if name[skip:]:
                    start = entity.start + skip
                    spans.append(EntitySpan(name[skip:], start, entity.start + len(name), entity.label))
            found.append(spans)
        return found

    return find


# capitalised chunks (the fallback)

_CAP_WORD = r"[A-Z][\w&\-]*(?:['’](?!s\b)\w+)*"
_JOINER = "|".join(sorted(_WORDS.joiners))
_CHUNK_RE = re.compile(rf"(?<![\w'’\-°]){_CAP_WORD}(?:\s+(?:(?:{_JOINER})\s+)*{_CAP_WORD})*")
_CAP_WORD_RE = re.compile(rf"(?<![\w'’\-]){_CAP_WORD}")


def _proper_words(texts: Iterable[str]) -> set[str]:
    """Capitalised words seen somewhere other than a sentence start: those are names, not capitalised openers."""
    return {m.group() for t in texts for m in _CAP_WORD_RE.finditer(t) if not at_sentence_start(t, m.start())}


def _chunks(text: str, proper: set[str]) -> list[EntitySpan]:
    found = []
    for m in _CHUNK_RE.finditer(text):
        words = list(re.finditer(r"\S+", m.group()))
        while words and (words[0].group() in _WORDS.starters or words[0].group() in _WORDS.joiners):
            words.pop(0)
        if not words:
            continue
        start, end = m.start() + words[0].start(), m.start() + words[-1].end()
        names = [w.group() for w in words if w.group() not in _WORDS.joiners]
        # Single letters are units ("2°C"), initials or list markers, not names to swap.
        if all(n in _NOT_ENTITIES or n in _WORDS.starters or len(n) == 1 for n in names):
            continue
        if len(words) == 1 and at_sentence_start(text, start) and names[0] not in proper:
            continue
        found.append(EntitySpan(text[start:end], start, end))
    return found


def capitalised_chunks(texts: Sequence[str]) -> list[list[EntitySpan]]:
    """The fallback :data:`EntityFinder`: proper-noun chunks of each text (see the module docstring)."""
    proper = _proper_words(texts)
    return [_chunks(text, proper) for text in texts]


@functools.cache
def default_entity_finder() -> FinderChoice:
    """spaCy NER when an English pipeline is installed, else :func:`capitalised_chunks`; chosen (and logged)
    once per process."""
    ner = load_spacy_ner()
    if ner is not None:
        logger.info("SEVA probe entity sites: spaCy NER (%s)", ner.name)
        return FinderChoice(spacy_entity_finder(ner), ner.name)
    logger.warning("SEVA probe entity sites: capitalised chunks (no spaCy English pipeline; run `evigraph setup`)")
    return FinderChoice(capitalised_chunks, CAPITALISED_CHUNKS)
