"""``pyserini:NAME``: Pyserini's prebuilt BM25 indexes, found in Pyserini's cache, never downloaded by a test.

The cache here is a temporary ``PYSERINI_CACHE`` holding a tiny index built by Pyserini's own indexer (Anserini's
``IndexCollection`` with ``-storeRaw``, as Pyserini's prebuilt indexes are built) under the folder name Pyserini
1.6.0 gives ``beir-v1.0.0-fever.flat``: its tarball's stem and md5, copied from Pyserini's table
(``pyserini/prebuilt_index_info.py``) by hand. The URL and size in the missing-index message are that table's too.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evigraph.cli.app import build_app
from evigraph.errors import ConfigError
from evigraph.tools.search import _stored_entry
from tests.corpora.test_show_index import _pyserini_cli_index
from tests.embed.hosts import FACT, WRONG, scripted
from tests.markers import requires_pyserini

runner = CliRunner()

NAME = "beir-v1.0.0-fever.flat"
FOLDER = "lucene-inverted.beir-v1.0.0-fever.flat.20221116.505594.30b5a338f9f16669ed3dae3bae4e7b32"
URL = (
    "https://huggingface.co/datasets/castorini/prebuilt-indexes-beir/resolve/main/lucene-inverted/flat/"
    "lucene-inverted.beir-v1.0.0-fever.flat.20221116.505594.tar.gz"
)
SIZE = "3.9 GB"  # 3,880,157,241 bytes compressed
LINES = [
    {"id": "Hog_Island_Light", "title": "Hog Island Light", "contents": FACT},
    {"id": "Cape_Charles_Light", "title": "Cape Charles Light", "contents": "Cape Charles Light stands on an island."},
    {"id": "Rose_garden", "contents": "A rose garden with a stone wall."},
]


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Lucene index of :data:`LINES`, as Pyserini's CLI builds it."""
    root = tmp_path_factory.mktemp("prebuilt")
    source = root / "collection"
    source.mkdir()
    (source / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LINES), encoding="utf-8")
    return _pyserini_cli_index(source, root / "index", "-storePositions", "-storeDocvectors", "-storeRaw")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVIGRAPH_CACHE_DIR", str(tmp_path / "evigraph-cache"))
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    monkeypatch.delenv("EVIGRAPH_ALLOW_DOWNLOAD", raising=False)
    return tmp_path / "pyserini"


@pytest.fixture
def cached(cache: Path, built_index: Path) -> Path:
    """The tiny index placed where Pyserini keeps ``beir-v1.0.0-fever.flat``."""
    shutil.copytree(built_index, cache / "indexes" / FOLDER)
    return cache / "indexes" / FOLDER


def _cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(build_app(), list(args))
    return result.exit_code, result.output + (str(result.exception) if result.exception else "")


@pytest.mark.parametrize("prefix", ["pyserini:", "prebuilt:"])
@pytest.mark.usefixtures("cached")
@pytest.mark.java
@requires_pyserini
def test_corpus_search_and_show_open_the_cached_index_with_its_stored_ids(prefix: str) -> None:
    code, output = _cli("corpus", "search", f"{prefix}{NAME}", "Hog Island Light first lit", "-k", "1")
    assert code == 0, output
    assert f"[[Hog_Island_Light]]: {FACT}" in output
    code, output = _cli("corpus", "show", f"{prefix}{NAME}", "--json", "--limit", "0")
    assert code == 0, output
    listing = json.loads(output)
    assert (listing["kind"], listing["documents"]) == ("index", 3)
    titles = {document["id"]: document["title"] for document in listing["shown"]}
    assert titles == {"Hog_Island_Light": "Hog Island Light", "Cape_Charles_Light": "Cape Charles Light",
                      "Rose_garden": None}  # fmt: skip


@pytest.mark.java
@requires_pyserini
def test_the_folder_is_the_one_pyserini_itself_checks(cached: Path) -> None:
    from evigraph.corpora.jvm import jvm_call
    from evigraph.corpora.prebuilt import prebuilt_index_dir

    assert prebuilt_index_dir(NAME) == cached

    def downloaded() -> bool:
        from pyserini.util import check_downloaded

        return check_downloaded(NAME)

    assert jvm_call(downloaded)


@pytest.mark.usefixtures("cached")
@pytest.mark.java
@requires_pyserini
def test_an_agent_searches_it_and_cites_pyserini_ids_and_titles() -> None:
    import evigraph
    from evigraph.embed.agent import resolve_search

    tool = resolve_search(f"pyserini:{NAME}")
    hits = tool.search("Hog Island Light", k=2)
    assert [(hit.id, hit.title, hit.text) for hit in hits[:1]] == [("Hog_Island_Light", "Hog Island Light", FACT)]
    assert hits[0].source == f"pyserini:{NAME}"
    graph = evigraph.agent("veri-r1", model=scripted("veri-r1"), search=f"pyserini:{NAME}")
    result = asyncio.run(graph.ainvoke({"claim": WRONG}))
    assert result["trajectory"].error is None
    # The scripted model cites every entry it was shown and refutes 1853 against the 1854 fact.
    assert result["output"].label == "REFUTE"
    assert "Hog_Island_Light" in result["output"].evidence


@pytest.mark.java
@requires_pyserini
def test_a_missing_index_says_what_would_be_downloaded_and_downloads_nothing(cache: Path) -> None:
    code, output = _cli("corpus", "search", f"pyserini:{NAME}", "anything")
    assert code != 0
    flat = " ".join(output.split())
    for part in (URL, SIZE, "EVIGRAPH_ALLOW_DOWNLOAD=1", FOLDER):
        assert part in flat, part
    assert not (cache / "indexes" / FOLDER).exists()


@pytest.mark.java
@requires_pyserini
def test_an_allowed_download_goes_through_pyserini(cache: Path, built_index: Path, monkeypatch) -> None:
    import sys

    from evigraph.corpora.prebuilt import prebuilt_index_dir, prebuilt_info

    prebuilt_info(NAME)  # imports Pyserini's tables on the JVM thread
    asked: list[str] = []

    def download(name: str, **_: object) -> str:  # stands in for the network: unpack the tiny index
        asked.append(name)
        shutil.copytree(built_index, cache / "indexes" / FOLDER)
        return str(cache / "indexes" / FOLDER)

    monkeypatch.setattr(sys.modules["pyserini.util"], "download_prebuilt_index", download)
    with pytest.raises(ConfigError, match="not downloaded"):
        prebuilt_index_dir(NAME)
    monkeypatch.setenv("EVIGRAPH_ALLOW_DOWNLOAD", "1")
    assert prebuilt_index_dir(NAME) == cache / "indexes" / FOLDER
    assert prebuilt_index_dir(NAME) == cache / "indexes" / FOLDER  # cached now: no second download
    assert asked == [NAME]


@pytest.mark.java
@requires_pyserini
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("beir-v1.0.0-fever.flatt", "close matches: beir-v1.0.0-fever.flat"),
        ("no-such-index-zzz", "docs/prebuilt-indexes.md"),
        # A dense index of MS MARCO: the error points at the BM25 index of the same corpus.
        ("msmarco-v1-passage.cosdpr-distil", "pyserini:msmarco-v1-passage"),
    ],
)
def test_unknown_and_non_bm25_names_fail_with_a_hint(cache: Path, name: str, expected: str) -> None:
    from evigraph.corpora.registry import resolve_corpus

    with pytest.raises(ConfigError, match=f"pyserini:{name}") as error:
        resolve_corpus(f"pyserini:{name}")
    assert expected in str(error.value)
    assert not (cache / "indexes").exists() or not any((cache / "indexes").iterdir())


@pytest.mark.parametrize(
    ("raw", "contents", "expected"),
    [
        ('{"id": "d1", "contents": "Alpha.", "title": "A"}', None, ("Alpha.", "A")),
        # BEIR's corpus lines: the text is under "text", the id under "_id".
        (
            '{"_id": "d2", "title": "Beta", "text": "Beta is a hill.", "metadata": {}}',
            None,
            ("Beta is a hill.", "Beta"),
        ),
        ('{"id": "d3", "contents": "Gamma.", "title": ""}', None, ("Gamma.", None)),
        ("<TEXT>\nA TREC document, not JSON.\n</TEXT>", None, ("<TEXT>\nA TREC document, not JSON.\n</TEXT>", None)),
        ('["a JSON array"]', "indexed text", ("indexed text", None)),
        (None, "indexed text", ("indexed text", None)),
        (None, None, None),
    ],
)
def test_stored_documents_of_every_shape_give_text_and_title(
    raw: str | None, contents: str | None, expected: tuple[str, str | None] | None
) -> None:
    assert _stored_entry(raw, contents) == expected
