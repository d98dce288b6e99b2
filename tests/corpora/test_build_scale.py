"""Grouped builds at scale: source-given sentences (FEVER's ``lines``), the splitter choice, splitting on
several processes with the single-process output, and streaming (bounded documents in flight)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evigraph.corpora import documents as documents_module
from evigraph.corpora.documents import SourceDocument, given_sentences, read_documents
from evigraph.corpora.entries import default_splitter_name, entries_for, load_sentence_splitter
from evigraph.corpora.pipeline import SplitPlan, entry_lines
from evigraph.errors import ConfigError, InputDataError, MissingDependencyError
from tests.markers import requires_pyserini

# FEVER's wiki-pages shape: "<n>\t<sentence>\t<link text>\t<page>..." lines; line 2 is blank, 4 is missing.
FEVER_LINES = (
    "0\tHog Island Light was a lighthouse .\tlighthouse\tLighthouse\n"
    "1\tIt was first lit in 1853 .\n"
    "2\t\n"
    "3\tIt was destroyed in 1948 ."
)


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_fever_lines_string_and_list_forms() -> None:
    assert given_sentences(FEVER_LINES) == (
        "Hog Island Light was a lighthouse .",
        "It was first lit in 1853 .",
        "",
        "It was destroyed in 1948 .",
    )
    assert given_sentences("0\tA .\n2\tC .\n") == ("A .", "", "C .")  # a missing number keeps its place
    assert given_sentences("") == ()
    assert given_sentences(["A.", "B."]) == ("A.", "B.")
    assert given_sentences("not numbered\tA .") is None
    assert given_sentences(["A.", 3]) is None
    assert given_sentences({"0": "A."}) is None


def test_records_with_sentences_are_read_with_them(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "wiki.jsonl",
        [
            {"id": "Hog_Island_Light", "text": "ignored for grouping", "lines": FEVER_LINES},
            {"id": "Listed", "sentences": ["One.", "Two."]},  # no text: the sentences joined
            {"id": "Plain", "text": "Split me. Please."},
        ],
    )
    auto = list(read_documents(source))
    assert [len(d.sentences) if d.sentences is not None else None for d in auto] == [4, 2, None]
    assert auto[1].text == "One. Two."
    # "none" ignores given sentences, so a record that has no text besides them is now incomplete
    with pytest.raises(InputDataError, match=r"wiki\.jsonl:2: field text \(or contents\)"):
        list(read_documents(source, sentences_field="none"))
    fever = _write(tmp_path / "fever.jsonl", [{"id": "F", "text": "A . B .", "lines": "0\tA .\n1\tB ."}])
    assert [(d.text, d.sentences) for d in read_documents(fever, sentences_field="none")] == [("A . B .", None)]
    assert [d.sentences for d in read_documents(fever, sentences_field="lines")] == [("A .", "B .")]
    with pytest.raises(InputDataError, match=r"wiki\.jsonl:1: field sentences: missing"):
        list(read_documents(source, sentences_field="sentences"))
    # "auto" leaves alone a field of that name that holds something else; naming the field makes it strict
    other = _write(tmp_path / "other.jsonl", [{"id": "x", "text": "t", "lines": 7}])
    assert [(d.text, d.sentences) for d in read_documents(other)] == [("t", None)]
    with pytest.raises(InputDataError, match=r"other\.jsonl:1: field lines: expected a list"):
        list(read_documents(other, sentences_field="lines"))


def test_given_sentences_are_grouped_by_position_without_a_splitter() -> None:
    doc = SourceDocument(
        id="Hog_Island_Light", text="x", origin="t", sentences=given_sentences(FEVER_LINES + "\n4\t\n5\t\n")
    )
    entries = entries_for(doc, group_sentences=3, splitter=None)
    # positions 0-2 → one entry (the blank line 2 adds nothing); 3-5 → line 3 only; ids keep FEVER's numbers
    assert [(e.id, e.contents) for e in entries] == [
        ("Hog_Island_Light_sentence_0", "Hog Island Light was a lighthouse . It was first lit in 1853 ."),
        ("Hog_Island_Light_sentence_3", "It was destroyed in 1948 ."),
    ]
    blank = doc.model_copy(update={"sentences": ("", " ", "A .", "", "", "")})
    assert [e.id for e in entries_for(blank, group_sentences=3, splitter=None)] == ["Hog_Island_Light_sentence_0"]
    assert [e.id for e in entries_for(blank, group_sentences=2, splitter=None)] == ["Hog_Island_Light_sentence_2"]


def test_a_json_array_is_decoded_element_by_element(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 7-character reads force elements to straddle reads (the refill path); starts are still the right lines.
    monkeypatch.setattr(documents_module, "_CHUNK", 7)
    rows = [{"id": f"d{i}", "contents": "word " * i} for i in range(20)]
    path = tmp_path / "array.json"
    path.write_text("[\n" + ",\n".join(json.dumps(row) for row in rows) + "\n]\n", encoding="utf-8")
    documents = list(read_documents(path))
    assert [(d.id, d.text) for d in documents] == [(r["id"], r["contents"]) for r in rows]
    assert [int(d.origin.rsplit(":", 1)[1]) for d in documents] == list(range(2, 22))
    path.write_text('[{"id": "a", "contents": "x"},\n {"id": "b", "contents": "y"}', encoding="utf-8")
    with pytest.raises(InputDataError, match=r"array\.json:2: not valid JSON \(the array is not closed\)"):
        list(read_documents(path))


def test_duplicate_check_confirms_digest_collisions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every id gets the same digest: the second pass must still tell real duplicates from collisions.
    monkeypatch.setattr(documents_module, "_digest", lambda doc_id: 0)
    unique = _write(tmp_path / "u.jsonl", [{"id": name, "text": "t"} for name in ("a", "b", "c")])
    assert [d.id for d in read_documents(unique)] == ["a", "b", "c"]
    dup = _write(tmp_path / "d.jsonl", [{"id": name, "text": "t"} for name in ("a", "b", "c", "b", "a")])
    with pytest.raises(InputDataError, match=r"d\.jsonl:4: duplicate id 'b' \(first seen at .*d\.jsonl:2\)"):
        list(read_documents(dup))


def test_splitter_choice() -> None:
    assert default_splitter_name("rules") == "spacy:sentencizer"
    split, name = load_sentence_splitter("rules")
    text = "The lamp was lit in 1853.  It was rebuilt later."
    assert name == "spacy:sentencizer"
    assert [text[a:b] for a, b in split(text)] == ["The lamp was lit in 1853.", "It was rebuilt later."]
    with pytest.raises(ConfigError, match="--splitter: unknown splitter 'fast'"):
        default_splitter_name("fast")


@pytest.mark.skipif(importlib.util.find_spec("sentencex") is not None, reason="sentencex is installed")
def test_a_missing_sentencex_is_named() -> None:
    with pytest.raises(MissingDependencyError, match="pip install sentencex"):
        default_splitter_name("sentencex")


@pytest.mark.skipif(importlib.util.find_spec("sentencex") is None, reason="sentencex is not installed")
def test_sentencex_splits_into_exact_slices() -> None:
    split, _ = load_sentence_splitter("sentencex")
    text = "Émile Zola was born in 1840.  He wrote novels. "
    assert [text[a:b] for a, b in split(text)] == ["Émile Zola was born in 1840.", "He wrote novels."]


def _documents(count: int) -> list[SourceDocument]:
    """Varied documents: some give sentences, some are blank, the rest are split (abbreviations included)."""
    out = []
    for i in range(count):
        if i % 7 == 0:
            out.append(SourceDocument(id=f"g{i}", text="x", origin="t", sentences=(f"A{i} .", "", f"B{i} .")))
        elif i % 11 == 0:
            out.append(SourceDocument(id=f"e{i}", text="  ", origin="t"))
        else:
            sentences = " ".join(f"Mr. Smith saw item {j} of {i} in the U.S. today!" for j in range(i % 5 + 1))
            out.append(SourceDocument(id=f"d{i}", text=sentences + " Done?", origin="t"))
    return out


def test_several_processes_write_what_one_writes() -> None:
    plan = SplitPlan(group_sentences=2, splitter_kind="rules")
    documents = _documents(300)
    one = [(d.id, d.lines) for d in entry_lines(iter(documents), plan, threads=1, chunk_documents=16)]
    two = [(d.id, d.lines) for d in entry_lines(iter(documents), plan, threads=2, chunk_documents=16)]
    assert two == one
    assert [doc_id for doc_id, _ in one] == [d.id for d in documents]  # every document, in input order
    assert dict(one)["e11"] == []  # a blank document has no entries
    # given ("A0 .", "", "B0 ."), pairs: positions 0-1 hold "A0 .", position 2 holds "B0 ."
    assert [json.loads(line)["id"] for line in dict(one)["g0"]] == ["g0_sentence_0", "g0_sentence_2"]
    assert all(json.loads(line)["doc_id"] == doc_id for doc_id, lines in one for line in lines)


class _Counted:
    """A document source that records how far the reader ran ahead of what the consumer received."""

    def __init__(self, count: int) -> None:
        self.count, self.pulled = count, 0

    def __iter__(self) -> Iterator[SourceDocument]:
        for i in range(self.count):
            self.pulled += 1
            yield SourceDocument(id=f"d{i}", text="x", origin="t", sentences=("One.", "Two.", "Three."))


@pytest.mark.parametrize("threads", [1, 2])
def test_documents_in_flight_stay_bounded(threads: int) -> None:
    source, chunk = _Counted(3000), 10
    received = peak = 0
    for _ in entry_lines(source, SplitPlan(group_sentences=2), threads=threads, chunk_documents=chunk):
        received += 1
        peak = max(peak, source.pulled - received)
    assert received == 3000
    # one chunk being filled, plus at most 2 × threads chunks handed to workers (one chunk inline)
    assert peak <= chunk * (1 if threads == 1 else 2 * threads + 1)


@requires_pyserini
@pytest.mark.java
def test_a_fever_style_build_on_two_threads(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from evigraph.cli.app import build_app

    rows: list[dict[str, object]] = [
        {
            "id": "Hog_Island_Light",
            "text": "Hog Island Light was a lighthouse . It was first lit in 1853 . It was destroyed in 1948 .",
            "lines": FEVER_LINES,
        },
        {"id": "Beta", "text": "Beta is a garden. It has roses. Bees visit it. Nobody mows it."},
    ]
    source = _write(tmp_path / "wiki-pages.jsonl", rows)
    out = tmp_path / "corpus"
    args = ["corpus", "build", str(source), "--out", str(out), "--group-sentences", "3"]
    built = CliRunner().invoke(build_app(), [*args, "--splitter", "rules", "--threads", "2"])
    assert built.exit_code == 0, built.output
    lines = [json.loads(x) for x in (out / "collection" / "docs.jsonl").read_text().splitlines()]
    assert [(x["id"], x["contents"]) for x in lines] == [
        ("Hog_Island_Light_sentence_0", "Hog Island Light was a lighthouse . It was first lit in 1853 ."),
        ("Hog_Island_Light_sentence_3", "It was destroyed in 1948 ."),
        ("Beta_sentence_0", "Beta is a garden. It has roses. Bees visit it."),
        ("Beta_sentence_3", "Nobody mows it."),
    ]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["params"]["splitter"] == "spacy:sentencizer" and manifest["entries"] == 4
    from pyserini.search.lucene import LuceneSearcher

    assert LuceneSearcher(str(out / "index")).search("destroyed 1948", k=1)[0].docid == "Hog_Island_Light_sentence_3"
    # ignoring the given sentences is a different build (its Hog Island entries come from splitting "text")
    again = CliRunner().invoke(build_app(), [*args, "--sentences-field", "none", "--splitter", "rules"])
    assert again.exit_code == 0 and "skipped" not in again.output, again.output
