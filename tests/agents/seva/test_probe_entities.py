"""Entity sites of SEVA's probes: spaCy NER where capitalised chunks go wrong, the span trimming on a blank
pipeline, and the fallback choice when no pipeline is installed."""

from __future__ import annotations

import logging
import random

import pytest

from evigraph.agents.seva import probe_entities
from evigraph.agents.seva.perturb import perturb
from evigraph.agents.seva.probe_entities import (
    CAPITALISED_CHUNKS,
    EntitySpan,
    capitalised_chunks,
    default_entity_finder,
    spacy_entity_finder,
)
from evigraph.tools.ner import SpacyNER

DONORS = [
    "The Galaxy phone was launched by Samsung in Seoul.",
    "Shares of Microsoft rose after the Nintendo deal closed.",
    "Researchers at Harvard University and at Stanford led the study.",
]


def swaps(claim, source, strategy, entities, donors=DONORS, seeds=20):
    """The (before, after) of the probe each seed gives (``None``: no probe)."""
    outcomes = set()
    for seed in range(seeds):
        p = perturb(claim, source, strategy, rng=random.Random(seed), donors=donors, entities=entities)
        outcomes.add(None if p is None else (p.before, p.after))
    return outcomes


# --- spaCy NER against capitalised chunks (the installed pipeline) ----------------------------------------------


def test_a_name_opening_the_sentence_is_a_site(spacy_entities):
    # A lone sentence-initial capitalised word is an opener to the fallback unless the texts show it mid-sentence.
    claim, source = "Nokia released a phone.", "Nokia released a phone in 2003."
    assert swaps(claim, source, "entity_confusion", capitalised_chunks) == {None}
    found = swaps(claim, source, "entity_confusion", spacy_entities)
    assert found and all(s is not None and s[0] == "Nokia" for s in found)
    graft = "Tesla opened a factory."
    graft_source = "Tesla opened a factory near Berlin, not far from where Siemens builds trains."
    assert swaps(graft, graft_source, "multi_hop_graft", capitalised_chunks) == {None}
    # Siemens, an organisation like Tesla, is preferred to Berlin, a place.
    assert swaps(graft, graft_source, "multi_hop_graft", spacy_entities) == {("Tesla", "Siemens")}


def test_a_capitalised_common_noun_is_no_site(spacy_entities):
    claim, source = "The Minister praised the report from Siemens.", "The Minister praised a report on Monday."
    assert any(
        s is not None and s[0] == "Minister" for s in swaps(claim, source, "entity_confusion", capitalised_chunks)
    )
    assert {s[0] for s in swaps(claim, source, "entity_confusion", spacy_entities)} == {"Siemens"}
    graft, graft_source = "The Minister met officials in Berlin.", "The Minister met officials in Berlin, then Paris."
    assert ("Minister", "Paris") in swaps(graft, graft_source, "multi_hop_graft", capitalised_chunks)
    assert swaps(graft, graft_source, "multi_hop_graft", spacy_entities) == {("Berlin", "Paris")}


def test_a_person_is_swapped_for_a_person(spacy_entities):
    claim, source = "Angela Merkel met the press.", "Angela Merkel met the press in the morning."
    donors = ["Goldman Sachs hired analysts.", "Emmanuel Macron spoke."]
    assert swaps(claim, source, "entity_confusion", capitalised_chunks, donors) == {
        ("Angela Merkel", "Goldman Sachs"),
        ("Angela Merkel", "Emmanuel Macron"),
    }
    assert swaps(claim, source, "entity_confusion", spacy_entities, donors) == {("Angela Merkel", "Emmanuel Macron")}


def test_the_default_finder_is_spacy_when_a_pipeline_is_installed(spacy_entities):
    assert default_entity_finder().name.startswith("spacy:en_core_web_sm")


# --- the NER finder's spans (a blank pipeline whose entity ruler knows the names) --------------------------------


@pytest.fixture(scope="module")
def ruler_entities():
    import spacy

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(  # type: ignore[attr-defined]
        [
            {"label": "GPE", "pattern": "the United States"},
            {"label": "PERSON", "pattern": [{"LOWER": "elvis"}, {"LOWER": "presley"}, {"ORTH": "'s"}]},
            {"label": "ORG", "pattern": [{"ORTH": "Data"}, {"ORTH": "Dive"}, {"ORTH": ":"}]},
            {"label": "PERSON", "pattern": "Johnny Cash"},
            {"label": "DATE", "pattern": "1956"},
            {"label": "CARDINAL", "pattern": "two"},
        ]
    )
    return spacy_entity_finder(SpacyNER(nlp, "ruler"))


def test_spans_keep_the_swappable_kinds_and_drop_articles_possessives_and_punctuation(ruler_entities):
    text = "In 1956 Elvis Presley's two hits reached the United States, said Data Dive: a blog."
    (spans,) = ruler_entities([text])
    assert spans == [
        EntitySpan("Elvis Presley", 8, 21, "PERSON"),
        EntitySpan("United States", 45, 58, "GPE"),
        EntitySpan("Data Dive", 65, 74, "ORG"),
    ]
    assert all(text[s.start : s.end] == s.text for s in spans)
    assert ruler_entities(["no names here", ""]) == [[], []]


def test_a_swap_leaves_the_possessive_in_place(ruler_entities):
    claim = "Elvis Presley's first single sold well."
    donors = ["Johnny Cash sang."]
    p = perturb(claim, claim, "entity_confusion", rng=random.Random(0), donors=donors, entities=ruler_entities)
    assert p is not None and p.claim == "Johnny Cash's first single sold well."


# --- the fallback ---------------------------------------------------------------------------------------------------


def test_without_a_pipeline_the_fallback_is_chosen_and_logged_once(monkeypatch, caplog):
    monkeypatch.setattr(probe_entities, "load_spacy_ner", lambda: None)
    default_entity_finder.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger=probe_entities.__name__):
            first, second = default_entity_finder(), default_entity_finder()
    finally:
        default_entity_finder.cache_clear()
    assert first is second and first.find is capitalised_chunks and first.name == CAPITALISED_CHUNKS
    assert [r.getMessage() for r in caplog.records if r.name == probe_entities.__name__] == [
        "SEVA probe entity sites: capitalised chunks (no spaCy English pipeline; run `evigraph setup`)"
    ]
