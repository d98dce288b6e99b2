"""Every docstring example in the package (and in the example plug-in) runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from tests.plugins import PLUGIN_ROOT

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_FOLDERS = {
    "evigraph": "evigraph",
    **{name: f"evigraph.{name}" for name in ("agents", "graphs", "tools", "corpora", "training")},
}


def _modules_with_examples() -> list[str]:
    names = []
    for folder, package in PACKAGE_FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if ">>>" in path.read_text(encoding="utf-8"):
                parts = path.relative_to(ROOT / folder).with_suffix("").parts
                names.append(".".join([package, *(p for p in parts if p != "__init__")]))
    for path in sorted((PLUGIN_ROOT / "passage_check").glob("*.py")):
        if ">>>" in path.read_text(encoding="utf-8"):
            names.append(f"passage_check.{path.stem}")
    return names


MODULES = _modules_with_examples()


def test_the_examples_are_found() -> None:
    assert {"evigraph.tokens", "evigraph.files", "evigraph.agents.veri_r1.scoring", "passage_check.verdict"} <= set(
        MODULES
    )


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN_ROOT))
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
