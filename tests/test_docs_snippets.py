"""No snippet in the README or docs/ can rot: every Python block compiles (top-level ``await`` allowed, as in a
notebook), every name it imports exists, and every relative link points at a file that exists. The blocks that
run end to end against scripted models are run by their own tests (``tests/embed/test_docs.py`` for the
embedding guide and the README's embedding block); the flags of every ``evigraph`` command line are checked
against the real CLI by ``tests/test_docs_flags.py``."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "examples" / "README.md", *(ROOT / "docs").rglob("*.md")])
PAGES = [page for page in PAGES if page.exists()]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def python_blocks() -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(ROOT)}:{page.read_text(encoding='utf-8')[: m.start()].count(chr(10)) + 1}", m.group(1))
        for page in PAGES
        for m in _BLOCK.finditer(page.read_text(encoding="utf-8"))
    ]


BLOCKS = python_blocks()


def test_the_docs_have_python_blocks_to_check() -> None:
    assert len(BLOCKS) >= 10  # the runner found them (a changed fence style would silently find none)


@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_every_python_block_compiles_and_its_imports_exist(where: str, code: str) -> None:
    tree = compile(code, where, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith(("evigraph", "langgraph", "langchain")):
                continue  # the reader's own package in a plug-in example
            module = importlib.import_module(node.module)
            missing = [a.name for a in node.names if a.name != "*" and not hasattr(module, a.name)]
            if missing:  # a submodule imported by name is fine
                missing = [n for n in missing if importlib.util.find_spec(f"{node.module}.{n}") is None]
            assert not missing, f"{where}: `from {node.module} import` names what does not exist: {missing}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("evigraph"):
                    importlib.import_module(alias.name)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_points_at_a_file(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    broken = [
        target
        for target in _LINK.findall(text)
        if "://" not in target and not target.startswith("mailto:") and not (page.parent / target).exists()
    ]
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


def test_a_wrong_import_is_caught() -> None:
    with pytest.raises(AssertionError, match="does not exist"):
        test_every_python_block_compiles_and_its_imports_exist("planted", "from evigraph.embed import no_such_thing")
