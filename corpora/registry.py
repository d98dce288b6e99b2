"""Corpora by name: bundled ones, ones the user built with ``--name``, or any path.

- **Bundled** (``demo``): shipped as JSONL inside the package and built on first use into the user cache.
- **User-built**: ``evigraph corpus build INPUT --name wiki`` builds into ``<cache>/corpora/wiki``; a
  corpus built elsewhere with ``--out DIR --name wiki`` is remembered in ``<cache>/corpora/registry.json``.
- **Paths**: a corpus directory (holding ``manifest.json`` and ``index/``) or a bare Lucene index.
- **Pyserini prebuilt indexes** (``pyserini:NAME``, e.g. ``pyserini:msmarco-v1-passage``; ``prebuilt:NAME``
  is the older spelling) resolve to the folder Pyserini caches them in (:mod:`corpora.prebuilt`); one that is
  not cached is downloaded by Pyserini only when the user allows it, never by our tests.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from pydantic import BaseModel

from evigraph.corpora.prebuilt import prebuilt_index_dir, prebuilt_name
from evigraph.errors import ConfigError
from evigraph.files import atomic_write
from evigraph.machine import cache_root

__all__ = (
    "BUNDLED",
    "CorpusInfo",
    "bundled_source",
    "corpora_dir",
    "list_corpora",
    "register_corpus",
    "resolve_corpus",
)

BUNDLED = {"demo": "demo.jsonl"}
"""Bundled corpus name → file in ``evigraph/corpora/data``."""


class CorpusInfo(BaseModel):
    name: str
    kind: str
    """``bundled``, ``user`` or ``path``."""
    path: str
    built: bool
    entries: int | None = None


def corpora_dir() -> Path:
    return cache_root() / "corpora"


def _registry_file() -> Path:
    return corpora_dir() / "registry.json"


def _registered() -> dict[str, str]:
    path = _registry_file()
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    return {str(k): str(v) for k, v in data.items()}


def register_corpus(name: str, path: Path) -> None:
    """Remember ``name`` → ``path`` (the corpus directory)."""
    if name in BUNDLED:
        raise ConfigError(f"{name!r} is a bundled corpus name; choose another", source="--name")
    entries = _registered()
    entries[name] = str(Path(path).resolve())
    atomic_write(_registry_file(), json.dumps(entries, indent=2, sort_keys=True))


def bundled_source(name: str) -> Path:
    return Path(str(files("evigraph.corpora") / "data" / BUNDLED[name]))


def _entries(path: Path) -> int | None:
    manifest = path / "manifest.json"
    if not manifest.is_file():
        return None
    return int(json.loads(manifest.read_text(encoding="utf-8")).get("entries", 0))


def resolve_corpus(name_or_path: str, *, build_bundled: bool = True, allow_download: bool | None = None) -> Path:
    """The directory to search for ``name_or_path``; bundled corpora are built on first use.

    ``pyserini:NAME`` is Pyserini's cached copy of its prebuilt index ``NAME``, downloaded first only when
    ``allow_download`` (default: ``EVIGRAPH_ALLOW_DOWNLOAD=1``) says so (:func:`corpora.prebuilt.prebuilt_index_dir`).

    Raises:
        ConfigError: neither a known name nor an existing path (the message lists the known names); an unknown
            prebuilt name, or one not downloaded (the message says what would be fetched).
    """
    prebuilt = prebuilt_name(name_or_path)
    if prebuilt is not None:
        return prebuilt_index_dir(prebuilt, allow_download=allow_download)
    if name_or_path in BUNDLED:
        target = corpora_dir() / name_or_path
        if build_bundled:
            from evigraph.corpora.build import build_corpus

            build_corpus(bundled_source(name_or_path), target, group_sentences=3)
        return target
    registered = _registered()
    if name_or_path in registered:
        return Path(registered[name_or_path])
    user_dir = corpora_dir() / name_or_path
    if (user_dir / "manifest.json").is_file():
        return user_dir
    path = Path(name_or_path)
    if path.is_dir():
        return path
    known = ", ".join(sorted({*BUNDLED, *registered})) or "none"
    raise ConfigError(
        f"unknown corpus {name_or_path!r}: not a name ({known}), pyserini:NAME, nor an existing directory"
    )


def list_corpora() -> list[CorpusInfo]:
    """Bundled and user-built corpora with whether they are built and how many entries they hold."""
    rows = []
    for name in BUNDLED:
        path = corpora_dir() / name
        rows.append(
            CorpusInfo(
                name=name, kind="bundled", path=str(path), built=(path / "index").is_dir(), entries=_entries(path)
            )
        )
    seen = set(BUNDLED)
    for name, location in sorted(_registered().items()):
        path = Path(location)
        rows.append(
            CorpusInfo(name=name, kind="user", path=location, built=(path / "index").is_dir(), entries=_entries(path))
        )
        seen.add(name)
    if corpora_dir().is_dir():
        for path in sorted(corpora_dir().iterdir()):
            if path.name not in seen and (path / "manifest.json").is_file():
                rows.append(
                    CorpusInfo(
                        name=path.name,
                        kind="user",
                        path=str(path),
                        built=(path / "index").is_dir(),
                        entries=_entries(path),
                    )
                )
    return rows
