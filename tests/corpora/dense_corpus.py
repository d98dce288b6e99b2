"""One tiny corpus with a MiniLM dense index, built once per test session and shared by the dense-retrieval tests
of every folder (corpora, training, serving): ten short entries, most with a title, two without."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

__all__ = ("DOCS", "assert_searches_like", "record_open_search", "tiny_dense_corpus")

DOCS = [
    {
        "id": "hog",
        "title": "Hog Island Light",
        "text": "Hog Island Light was a lighthouse in Virginia, first lit in 1853.",
    },
    {
        "id": "cape",
        "title": "Cape Charles Light",
        "text": "Cape Charles Light stands on Smith Island. It was lit in 1828.",
    },
    {"id": "garden", "text": "A walled garden with roses, tulips and an old stone fountain."},
    {"id": "bread", "title": "Sourdough", "text": "Sourdough bread rises with wild yeast and lactic acid bacteria."},
    {"id": "violin", "title": "Stradivarius", "text": "Antonio Stradivari built violins in Cremona around 1700."},
    {"id": "python", "title": "Pythons", "text": "Pythons are non-venomous snakes that kill prey by constriction."},
    {"id": "moon", "title": "Apollo 11", "text": "Apollo 11 landed the first two people on the Moon in July 1969."},
    {"id": "tea", "title": "Green tea", "text": "Green tea is made from leaves that are not withered or oxidised."},
    {"id": "glacier", "text": "Glaciers carve U-shaped valleys as the ice slowly moves downhill."},
    {"id": "chess", "title": "Chess", "text": "In chess, castling moves the king two squares towards a rook."},
]

_BUILT: dict[str, Path] = {}


def tiny_dense_corpus(factory: pytest.TempPathFactory) -> Path:
    """The built corpus directory of :data:`DOCS` (Lucene index and a flat MiniLM index), built on first use."""
    if "tiny" not in _BUILT:
        from evigraph.corpora.build import build_corpus

        root = factory.mktemp("dense")
        source = root / "docs.jsonl"
        source.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
        build_corpus(source, root / "built", dense="minilm")
        _BUILT["tiny"] = root / "built"
    return _BUILT["tiny"]


def record_open_search(monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[dict[str, Any], Any]], Any]:
    """``(calls, the real open_search)``: every ``open_search`` call from now on, as ``(keyword arguments, the tool
    it opened)``; the real function still opens the tool."""
    from evigraph.tools import search as search_module

    real = search_module.open_search
    opened: list[tuple[dict[str, Any], Any]] = []

    def recorded(**kwargs: Any) -> Any:
        tool = real(**kwargs)
        opened.append((kwargs, tool))
        return tool

    monkeypatch.setattr(search_module, "open_search", recorded)
    return opened, real


def assert_searches_like(tool: Any, direct: Any) -> None:
    """``tool`` ranks two queries exactly as ``direct``, a search tool opened directly (ids and scores)."""
    queries = ["when was the lighthouse first lit", "snake that squeezes its prey"]
    expected = direct.batch_search(queries, 3)
    assert [[(h.id, h.score) for h in hits] for hits in tool.batch_search(queries, 3)] == [
        [(h.id, h.score) for h in hits] for hits in expected
    ]
