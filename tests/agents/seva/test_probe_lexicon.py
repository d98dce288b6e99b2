"""The probe rules' word lists: the shipped files load in order, and a broken file is named with its field."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest

from evigraph.agents.seva.probe_lexicon import WORDLISTS, lexicon, load_lexicon
from evigraph.errors import ConfigError


def test_the_shipped_lists_load_once_in_file_order() -> None:
    words = lexicon()
    assert lexicon() is words
    assert list(words.months)[:3] == ["January", "February", "March"] and words.months["February"] == 29
    assert words.number_words["twelve"] == 12 and words.contractions["won't"] == "will"
    assert words.antonyms["denied"] == ("announced", "confirmed", "admitted")
    assert ("lost", "won") in words.antonym_set and ("won", "lost") in words.antonym_set
    assert words.fabrication_templates[0] == ", significant at p<0.001"
    assert {"The", "However"} <= words.starters and "CEO" in words.not_entities


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the shipped word-list files to break."""
    shipped = resources.files("evigraph.agents.seva").joinpath(WORDLISTS)
    for entry in shipped.iterdir():
        if entry.name.endswith(".json"):
            (tmp_path / entry.name).write_text(entry.read_text(encoding="utf-8"), encoding="utf-8")
    assert load_lexicon(tmp_path) == lexicon()
    return tmp_path


def edit(path: Path, **fields: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, **fields}), encoding="utf-8")


def test_bad_json_names_the_file_and_line(folder: Path) -> None:
    (folder / "numbers.json").write_text('{\n  "number_words": {"one": 1,}\n}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"wordlists/numbers\.json:2: not valid JSON"):
        load_lexicon(folder)


def test_a_malformed_or_unknown_field_names_its_file(folder: Path) -> None:
    edit(folder / "names.json", joiners=[["of"]])
    with pytest.raises(ConfigError, match=r"wordlists/names\.json: joiners\.0: "):
        load_lexicon(folder)
    edit(folder / "names.json", joiners=["of"], hedges=["perhaps"])
    with pytest.raises(ConfigError, match=r"wordlists/names\.json: hedges: Extra inputs"):
        load_lexicon(folder)


def test_a_field_set_twice_or_missing_is_an_error(folder: Path) -> None:
    shutil.copy(folder / "calendar.json", folder / "dates.json")
    with pytest.raises(ConfigError, match=r"wordlists/dates\.json: field 'months' is already set in .*calendar\.json"):
        load_lexicon(folder)
    (folder / "dates.json").unlink()
    (folder / "antonyms.json").unlink()
    with pytest.raises(ConfigError, match=r"antonym_pairs: Field required"):
        load_lexicon(folder)


def test_a_subset_that_is_not_a_subset_is_an_error(folder: Path) -> None:
    edit(folder / "negation.json", perfect_auxiliaries=["has", "got"])
    with pytest.raises(ConfigError, match="perfect_auxiliaries holds words that are not auxiliaries: got"):
        load_lexicon(folder)
