"""Pyserini's prebuilt BM25 indexes by name: ``pyserini:NAME`` (``prebuilt:NAME`` is the older spelling).

Pyserini publishes Lucene indexes of common corpora (``msmarco-v1-passage``, ``wikipedia-kilt-doc``,
``beir-v1.0.0-fever.flat``...) and keeps a table of them (``pyserini.prebuilt_index_info``: URL, md5, compressed
size, document count). Its ``download_prebuilt_index`` unpacks one into ``<cache>/indexes/<file stem>.<md5>``,
where ``<cache>`` is ``$PYSERINI_CACHE`` or ``~/.cache/pyserini``. This module finds that folder by Pyserini's own
rule, so an index Pyserini (or anyone) already fetched is used as it is, and opens nothing itself: the folder is a
plain Lucene index that :class:`evigraph.tools.search.BM25Search` and ``corpus show`` read like any other.

Downloads are never implicit (they run to gigabytes, and tests and CI must stay offline): when the index is not
in the cache, :func:`prebuilt_index_dir` raises a :class:`ConfigError` naming the URL, the size and the target
folder, unless downloading is allowed (``allow_download=True`` or ``EVIGRAPH_ALLOW_DOWNLOAD=1``), in which case
Pyserini's own ``download_prebuilt_index`` fetches it (md5-checked). Only BM25 (Lucene inverted) indexes are
accepted: Pyserini's impact and dense indexes need other searchers.

Importing Pyserini's table calls Java, so it runs on the JVM thread (:mod:`evigraph.corpora.jvm`).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from evigraph.errors import ConfigError, ToolError

__all__ = (
    "ALLOW_DOWNLOAD_ENV",
    "PREFIXES",
    "PrebuiltIndex",
    "format_size",
    "prebuilt_index_dir",
    "prebuilt_info",
    "prebuilt_name",
)

PREFIXES = ("pyserini:", "prebuilt:")
"""How a corpus argument names a Pyserini prebuilt index."""
ALLOW_DOWNLOAD_ENV = "EVIGRAPH_ALLOW_DOWNLOAD"
LIST_URL = "https://github.com/castorini/pyserini/blob/master/docs/prebuilt-indexes.md"

Kind = Literal["bm25", "impact", "hnsw", "flat", "faiss"]
_KIND_WORDS = {
    "impact": "a learned sparse (impact) index",
    "hnsw": "a dense HNSW index",
    "flat": "a dense flat index",
    "faiss": "a dense FAISS index",
}


class PrebuiltIndex(BaseModel):
    """One row of Pyserini's prebuilt-index table, with where Pyserini caches it."""

    name: str
    kind: Kind
    description: str = ""
    urls: list[str]
    md5: str
    size_bytes: int | None = None
    """Compressed (download) size."""
    documents: int | None = None
    texts: str | None = None
    """For impact and dense indexes: the BM25 index of the same corpus, when Pyserini names one."""
    cache_dir: str
    """Where Pyserini unpacks it: ``<cache>/indexes/<file stem>.<md5>``."""


def prebuilt_name(corpus: str) -> str | None:
    """The index name in ``pyserini:NAME`` / ``prebuilt:NAME``, else ``None``."""
    for prefix in PREFIXES:
        if corpus.startswith(prefix):
            return corpus[len(prefix) :]
    return None


def format_size(size: int | None) -> str:
    """Bytes in decimal MB/GB, as download pages state them."""
    if size is None:
        return "size unknown"
    if size >= 10**9:
        return f"{size / 10**9:.1f} GB"
    return f"{size / 10**6:.1f} MB"


def _tables() -> tuple[dict[Kind, dict[str, Any]], str]:
    """Pyserini's tables by kind and its cache home (on the JVM thread: the table module calls Java)."""
    import pyserini.prebuilt_index_info as info
    from pyserini.util import get_cache_home

    tables: dict[Kind, dict[str, Any]] = {
        "bm25": dict(info.TF_INDEX_INFO),
        "impact": dict(info.IMPACT_INDEX_INFO),
        "hnsw": dict(info.LUCENE_HNSW_INDEX_INFO),
        "flat": dict(info.LUCENE_FLAT_INDEX_INFO),
        "faiss": dict(info.FAISS_INDEX_INFO),
    }
    return tables, str(get_cache_home())


def _load_tables() -> tuple[dict[Kind, dict[str, Any]], str]:
    from evigraph.corpora.jvm import jvm_call, start_jvm

    start_jvm()
    return jvm_call(_tables)


def _row(name: str, kind: Kind, row: dict[str, Any], cache_home: str) -> PrebuiltIndex:
    urls = [str(url) for url in row.get("urls", [])]
    # The same folder name download_prebuilt_index unpacks into: the tarball's stem (its "filename" when the
    # table gives one, else the URL's last part) plus the md5.
    tarball = str(row.get("filename") or (urls[0].split("/")[-1] if urls else name))
    stem = re.sub(r"\.tar\.gz.*$", "", tarball)
    size = row.get("size compressed (bytes)")
    documents = row.get("documents")
    return PrebuiltIndex(
        name=name,
        kind=kind,
        description=str(row.get("description", "")),
        urls=urls,
        md5=str(row["md5"]),
        size_bytes=int(size) if size is not None else None,
        documents=int(documents) if documents is not None else None,
        texts=str(row["texts"]) if row.get("texts") else None,
        cache_dir=str(Path(cache_home) / "indexes" / f"{stem}.{row['md5']}"),
    )


def prebuilt_info(name: str) -> PrebuiltIndex:
    """Pyserini's entry for the BM25 index ``name``.

    Raises:
        ConfigError: an unknown name (listing close matches), or an index that is not BM25 (naming the BM25
            index of the same corpus when Pyserini gives one).
        MissingDependencyError: Pyserini or its JVM bridge is not installed.
    """
    tables, cache_home = _load_tables()
    source = f"pyserini:{name}"
    bm25 = tables["bm25"]
    if name in bm25:
        return _row(name, "bm25", bm25[name], cache_home)
    for kind, table in tables.items():
        if name in table:
            row = _row(name, kind, table[name], cache_home)
            instead = f"; its corpus as a BM25 index is pyserini:{row.texts}" if row.texts in bm25 else ""
            raise ConfigError(
                f"Pyserini's {name!r} is {_KIND_WORDS[kind]}; evigraph searches BM25 (Lucene inverted) indexes"
                f"{instead}",
                source=source,
            )
    close = difflib.get_close_matches(name, list(bm25), n=5, cutoff=0.6)
    hint = f"close matches: {', '.join(close)}" if close else f"Pyserini's BM25 indexes are listed at {LIST_URL}"
    raise ConfigError(f"Pyserini has no prebuilt BM25 index named {name!r} ({hint})", source=source)


def _download_allowed(allow_download: bool | None) -> bool:
    if allow_download is not None:
        return allow_download
    return os.environ.get(ALLOW_DOWNLOAD_ENV, "").strip().lower() in ("1", "true", "yes")


def prebuilt_index_dir(name: str, *, allow_download: bool | None = None) -> Path:
    """The local folder of Pyserini's prebuilt BM25 index ``name``, from Pyserini's cache.

    Args:
        allow_download: fetch it with Pyserini when it is not cached (``None``: only when
            ``EVIGRAPH_ALLOW_DOWNLOAD=1``).

    Raises:
        ConfigError: an unknown or non-BM25 name; the index is not cached and downloading is not allowed (the
            message names the URL, the size, the folder and how to allow it).
        ToolError: the allowed download failed.
    """
    info = prebuilt_info(name)
    target = Path(info.cache_dir)
    if target.is_dir():
        return target
    size = format_size(info.size_bytes)
    if not _download_allowed(allow_download):
        url = info.urls[0] if info.urls else "(no URL in Pyserini's table)"
        documents = f", {info.documents:,} documents" if info.documents else ""
        raise ConfigError(
            f"Pyserini's prebuilt index {name!r} is not downloaded: it would fetch {url} ({size} compressed"
            f"{documents}) and unpack it into {target} (set PYSERINI_CACHE to put it elsewhere). Allow the "
            f"download with {ALLOW_DOWNLOAD_ENV}=1 (e.g. `{ALLOW_DOWNLOAD_ENV}=1 evigraph corpus show "
            f"pyserini:{name} --limit 1`), or unpack the tarball there yourself.",
            source=f"pyserini:{name}",
        )
    from pyserini.util import download_prebuilt_index  # imported already, on the JVM thread, by prebuilt_info

    try:
        location = download_prebuilt_index(name, verbose=True)
    except (ValueError, AssertionError, OSError) as error:  # Pyserini's ways of saying a URL or md5 failed
        raise ToolError(f"Pyserini could not download the prebuilt index {name!r} ({size}): {error}") from None
    return Path(location)
