"""Corpus building: input formats, sentence grouping and ids, manifest skip, bad-input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evigraph.corpora.documents import SourceDocument, read_documents
from evigraph.corpora.entries import entries_for, load_sentence_splitter
from evigraph.errors import ConfigError, InputDataError
from tests.markers import requires_pyserini


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_three_input_formats(tmp_path: Path) -> None:
    jsonl = _write(tmp_path / "a.jsonl", '{"id": "A", "title": "Alpha", "text": "x"}\n\n{"id": 7, "contents": "y"}\n')
    assert [(d.id, d.title, d.text) for d in read_documents(jsonl)] == [("A", "Alpha", "x"), ("7", None, "y")]
    tsv = _write(tmp_path / "b.tsv", "id\ttitle\ttext\nB\tBeta\tbody\n")
    assert [(d.id, d.title, d.text) for d in read_documents(tsv)] == [("B", "Beta", "body")]
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    _write(folder / "sub" / "c.txt", "cee")
    assert [d.id for d in read_documents(folder)] == ["sub/c"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("x.jsonl", '{"id": "a", "text": "t"}\n{"id": "b"}\n', r"x\.jsonl:2: field text \(or contents\)"),
        ("x.jsonl", '{"id": "a", "text": "t"}\n{bad\n', r"x\.jsonl:2: not valid JSON"),
        ("x.jsonl", '{"text": "t"}\n', r"x\.jsonl:1: field id"),
        (
            "x.jsonl",
            '{"id": "a", "text": "t"}\n{"id": "a", "text": "u"}\n',
            r"x\.jsonl:2: duplicate id 'a' \(first seen at .*x\.jsonl:1\)",
        ),
        ("x.tsv", "a\tb\tc\td\n", r"x\.tsv:1: expected 2 or 3 tab-separated columns, got 4"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path: Path, name: str, content: str, message: str) -> None:
    with pytest.raises(InputDataError, match=message):
        list(read_documents(_write(tmp_path / name, content)))


def test_unsupported_input(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unsupported format"):
        list(read_documents(_write(tmp_path / "x.csv", "a,b\n")))


def _period_spans(text: str) -> list[tuple[int, int]]:
    """Sentences end at '.'; spans skip the whitespace between them."""
    import re

    return [m.span() for m in re.finditer(r"[^.\s][^.]*\.", text)]


def test_grouping_uses_the_first_sentence_index_as_id() -> None:
    doc = SourceDocument(id="Hog Island Light", text="S0. S1. S2. S3. S4.", origin="t")
    entries = entries_for(doc, group_sentences=3, splitter=_period_spans)
    assert [(e.id, e.contents) for e in entries] == [
        ("Hog Island Light_sentence_0", "S0. S1. S2."),
        ("Hog Island Light_sentence_3", "S3. S4."),
    ]
    assert entries_for(doc.model_copy(update={"text": "  "}), group_sentences=3, splitter=None) == []
    assert entries_for(doc, group_sentences=None, splitter=None)[0].id == "Hog Island Light"


def test_default_splitter_splits_sentences() -> None:
    split, name = load_sentence_splitter()
    assert name.startswith("spacy:")
    text = "The lamp was lit in 1853. It was rebuilt later."
    assert [text[a:b] for a, b in split(text)] == ["The lamp was lit in 1853.", "It was rebuilt later."]


@pytest.mark.parametrize(
    "text",
    [
        "See [[Hog Island Light]] for details.  It was lit in 1852.\nThe tower fell in 1948.",
        "Tabs\tand  double  spaces stay.  So do\n\nblank lines. And a [[ bracket.",
        "  Leading and trailing whitespace.  ",
    ],
)
def test_entries_are_exact_slices_of_the_source(text: str) -> None:
    split, _ = load_sentence_splitter()
    doc = SourceDocument(id="d", text=text, origin="t")
    for group in (1, 2, 3):
        entries = entries_for(doc, group_sentences=group, splitter=split)
        assert entries and all(e.contents in text for e in entries)
        assert all(e.contents == e.contents.strip() for e in entries)
    # Every sentence lands in exactly one group of one sentence.
    singles = entries_for(doc, group_sentences=1, splitter=split)
    assert "".join("".join(e.contents.split()) for e in singles) == "".join(text.split())


@requires_pyserini
@pytest.mark.java
def test_build_then_skip_then_rebuild(tmp_path: Path) -> None:
    from evigraph.corpora.build import build_corpus

    source = _write(
        tmp_path / "wiki.jsonl",
        json.dumps({"id": "Hog Island Light", "text": "A lighthouse. First lit in 1853. Rebuilt in 1896. Gone now."})
        + "\n"
        + json.dumps({"id": "Empty", "text": "   "})
        + "\n",
    )
    out = tmp_path / "corpus"
    manifest = build_corpus(source, out, group_sentences=3)
    assert (manifest.documents, manifest.entries, manifest.empty_documents) == (2, 2, ["Empty"])
    assert not manifest.skipped and (out / "index").is_dir()
    lines = [json.loads(x) for x in (out / "collection" / "docs.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == ["Hog Island Light_sentence_0", "Hog Island Light_sentence_3"]
    again = build_corpus(source, out, group_sentences=3)
    assert again.skipped and again.source_sha256 == manifest.source_sha256
    assert not build_corpus(source, out, group_sentences=2).skipped  # parameters changed
    from pyserini.search.lucene import LuceneSearcher

    hit = LuceneSearcher(str(out / "index")).search("first lit 1853", k=1)[0]
    assert hit.docid == "Hog Island Light_sentence_0"


def _json_collection(tmp_path: Path) -> Path:
    """A Pyserini ``JsonCollection`` folder: JSON lines, and a pretty-printed JSON array in a subfolder."""
    folder = tmp_path / "collection"
    (folder / "sub").mkdir(parents=True)
    _write(folder / "a.jsonl", '{"id": "d1", "contents": "one", "title": "One"}\n\n{"id": 2, "contents": "two"}\n')
    rows = [{"id": "d3", "contents": "three"}, {"id": "d4", "contents": "four"}]
    _write(folder / "sub" / "b.json", json.dumps(rows, indent=2))
    return folder


def test_a_pyserini_json_collection_folder_is_read_as_is(tmp_path: Path) -> None:
    documents = list(read_documents(_json_collection(tmp_path)))
    assert [(d.id, d.title, d.text) for d in documents] == [
        ("d1", "One", "one"),
        ("2", None, "two"),
        ("d3", None, "three"),
        ("d4", None, "four"),
    ]
    # the origin of an array element is the line where the element starts
    assert [d.origin.rsplit(":", 1)[1] for d in documents] == ["1", "3", "2", "6"]


def test_a_bad_array_element_names_its_line(tmp_path: Path) -> None:
    folder = _json_collection(tmp_path)
    _write(folder / "sub" / "b.json", '[\n  {"id": "d3", "contents": "three"},\n  {"id": "d4"}\n]')
    with pytest.raises(InputDataError, match=r"b\.json:3: field text \(or contents\)"):
        list(read_documents(folder))
    _write(folder / "sub" / "b.json", '[\n  {"id": "d3", "contents": "three"},\n  {"id": \n]')
    with pytest.raises(InputDataError, match=r"b\.json:4: not valid JSON"):
        list(read_documents(folder))


def test_a_duplicate_id_across_collection_files(tmp_path: Path) -> None:
    folder = _json_collection(tmp_path)
    _write(folder / "c.jsonl", '{"id": "d1", "contents": "again"}\n')
    with pytest.raises(InputDataError, match=r"duplicate id 'd1' \(first seen at .*a\.jsonl:1\)"):
        list(read_documents(folder))


@pytest.mark.parametrize(
    ("extra", "message"), [("notes.txt", r"both \.txt files .* and JSON files"), ("c.jsonl.gz", "decompress them")]
)
def test_a_folder_that_would_be_half_read_is_refused(tmp_path: Path, extra: str, message: str) -> None:
    folder = _json_collection(tmp_path)
    _write(folder / extra, "x")
    with pytest.raises(ConfigError, match=message):
        list(read_documents(folder))


def test_the_source_hash_covers_collection_files(tmp_path: Path) -> None:
    from evigraph.corpora.build import source_hash

    folder = _json_collection(tmp_path)
    before = source_hash(folder)
    _write(folder / "sub" / "b.json", json.dumps([{"id": "d3", "contents": "changed"}]))
    assert source_hash(folder) != before
    # a folder of text files hashes as it always did (relative path, NUL, bytes, per file), so no rebuild
    texts = tmp_path / "texts"
    (texts / "s").mkdir(parents=True)
    _write(texts / "s" / "a.txt", "alpha")
    _write(texts / "b.txt", "beta")
    import hashlib

    assert source_hash(texts) == hashlib.sha256(b"b.txt\0beta" + b"s/a.txt\0alpha").hexdigest()


def test_progress_total_of_a_collection_folder(tmp_path: Path) -> None:
    from evigraph.cli.corpus import _count_documents

    folder = _json_collection(tmp_path)
    assert _count_documents(folder) is None  # a JSON array is not counted without parsing it
    (folder / "sub" / "b.json").unlink()
    assert _count_documents(folder) == 2
