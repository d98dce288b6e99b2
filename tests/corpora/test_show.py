"""`evigraph corpus show`: a corpus's documents, ids, titles and counts, by name or directory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evigraph.cli.app import run
from evigraph.corpora.build import BuildParams, Manifest
from evigraph.corpora.documents import read_documents
from evigraph.corpora.entries import entries_for
from evigraph.corpora.registry import BUNDLED, bundled_source, register_corpus
from tests.markers import requires_pyserini


def _sentences(text: str) -> list[tuple[int, int]]:
    """A splitter for the tests: a sentence ends at a full stop."""
    spans = []
    for match in re.finditer(r"[^.]+\.", text):
        spans.append((match.start() + len(match.group()) - len(match.group().lstrip()), match.end()))
    return spans


def _corpus_dir(tmp_path: Path, rows: list[dict[str, str]], *, group: int | None, empty: tuple[str, ...] = ()) -> Path:
    """A corpus directory laid out as `evigraph corpus build` writes it (the collection and the manifest; the
    Lucene index, which `show` does not read, is left out so the test needs no JVM)."""
    source = tmp_path / "source.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "corpus"
    (out / "collection").mkdir(parents=True)
    with (out / "collection" / "docs.jsonl").open("w", encoding="utf-8") as handle:
        for document in read_documents(source):
            for entry in entries_for(document, group_sentences=group, splitter=_sentences):
                handle.write(entry.model_dump_json() + "\n")
    manifest = Manifest(
        source=str(source),
        source_sha256="0" * 64,
        params=BuildParams(group_sentences=group, splitter="test" if group else None, layout=2),
        documents=len(rows),
        entries=0,
        empty_documents=list(empty),
        versions={},
        build_seconds=0.0,
    )
    (out / "manifest.json").write_text(manifest.model_dump_json(), encoding="utf-8")
    return out


ROWS = [
    {"id": "Alpha", "title": "The Alpha boat", "text": "Alpha is a red boat. It sails at night. Its crew is small."},
    {"id": "Beta", "text": "Beta is a garden."},
    {"id": "[b]Gamma[/b]", "text": "Gamma is a hill. It is green."},
]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_CACHE_DIR", str(tmp_path / "cache"))


def test_json_lists_ids_titles_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _corpus_dir(tmp_path, ROWS, group=2)
    assert run(["corpus", "show", str(corpus), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert (listing["documents"], listing["entries"], listing["group_sentences"]) == (3, 4, 2)
    assert (listing["kind"], listing["text_field"], listing["note"]) == ("corpus", "collection", None)
    shown = {d["id"]: d for d in listing["shown"]}
    assert list(shown) == ["Alpha", "Beta", "[b]Gamma[/b]"]
    # three sentences in groups of two: entries at sentence 0 and 2
    assert (shown["Alpha"]["entries"], shown["Alpha"]["first_entry"]) == (2, "Alpha_sentence_0")
    assert shown["Alpha"]["title"] == "The Alpha boat" and shown["Beta"]["title"] is None
    assert shown["Beta"]["characters"] == len("Beta is a garden.")
    assert listing["characters"] == sum(d["characters"] for d in listing["shown"])


def test_limit_keeps_the_totals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _corpus_dir(tmp_path, ROWS, group=None, empty=("Delta",))
    assert run(["corpus", "show", str(corpus), "--json", "--limit", "1"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [d["id"] for d in listing["shown"]] == ["Alpha"]
    assert (listing["documents"], listing["entries"], listing["empty_documents"]) == (3, 3, ["Delta"])


def test_table_shows_documents_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _corpus_dir(tmp_path, ROWS, group=2, empty=("Delta",))
    assert run(["corpus", "show", str(corpus), "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"3 documents, 4 entries \(2 sentences per entry\)", out)
    assert "The Alpha boat" in out and "Beta" in out
    assert "Gamma" not in out and "2 of 3 documents shown" in out
    assert "1 empty document(s)" in out
    assert run(["corpus", "show", str(corpus)]) == 0
    assert "[b]Gamma[/b]" in capsys.readouterr().out  # an id is text, not rich markup


def test_a_registered_name_works_like_its_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    register_corpus("mine", _corpus_dir(tmp_path, ROWS, group=None))
    assert run(["corpus", "show", "mine", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 3


def test_unknown_name_exits_2_naming_the_known_corpora(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    register_corpus("mine", _corpus_dir(tmp_path, ROWS, group=None))
    assert run(["corpus", "show", "no-such-corpus"]) == 2
    err = capsys.readouterr().err
    assert "unknown corpus 'no-such-corpus'" in err and "demo" in err and "mine" in err


def test_a_directory_neither_corpus_nor_index_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No collection and no Lucene index: refused before any JVM starts, naming the path and what is missing."""
    import evigraph.corpora.jvm

    def no_jvm(**_: object) -> None:
        raise AssertionError("the JVM must not start for a directory that holds no index")

    monkeypatch.setattr(evigraph.corpora.jvm, "start_jvm", no_jvm)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello", encoding="utf-8")
    assert run(["corpus", "show", str(tmp_path / "notes")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "notes") in "".join(err.split())  # the path, however the terminal wraps it
    message = " ".join(err.split())
    assert "has no collection/docs.jsonl" in message and "nor a Lucene index" in message and "segments_N" in message


def test_a_broken_collection_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _corpus_dir(tmp_path, ROWS, group=None)
    with (corpus / "collection" / "docs.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"id": "x"}\n')
    assert run(["corpus", "show", str(corpus)]) == 2
    assert "docs.jsonl:4" in capsys.readouterr().err


@pytest.mark.java
@requires_pyserini
def test_the_bundled_demo_corpus_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo corpus is built on first use, then listed: every source document, in order."""
    assert run(["corpus", "show", "demo", "--json", "--limit", "0"]) == 0
    listing = json.loads(capsys.readouterr().out)
    source = list(read_documents(bundled_source("demo")))
    assert [d["id"] for d in listing["shown"]] == [d.id for d in source]
    assert [d["title"] for d in listing["shown"]] == [d.title for d in source]
    manifest = json.loads((Path(listing["path"]) / "manifest.json").read_text(encoding="utf-8"))
    assert (listing["documents"], listing["entries"]) == (manifest["documents"], manifest["entries"])
    assert all(d["entries"] >= 1 for d in listing["shown"]) and "demo" in BUNDLED
