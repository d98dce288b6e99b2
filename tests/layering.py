"""The project's import graph, read from the source files (no import runs): every module under its
``evigraph.*`` name -- setup.py maps ``agents/ tools/ graphs/ training/ corpora/`` into the namespace -- and, per
module, what it imports, at module level or anywhere."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED_FOLDERS = ("agents", "tools", "graphs", "training", "corpora")


@dataclass
class Module:
    name: str
    path: Path
    lines: int
    docstring: str
    top_level: set[str] = field(default_factory=set)
    """Imports that run when the module is imported (module level, outside ``if TYPE_CHECKING``)."""
    anywhere: set[str] = field(default_factory=set)
    """Every import, lazy ones inside functions included (``TYPE_CHECKING`` ones left out)."""


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[0] in MAPPED_FOLDERS:
        parts = ["evigraph", *parts]
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: Module, tree: ast.Module, known: set[str]) -> None:
    package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        # `from pkg import sub` imports the submodule when one exists.
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for orelse in child.orelse:
                    visit_one(orelse, top)
                continue
            visit_one(child, top)

    def visit_one(node: ast.AST, top: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in targets(node):
                if target.startswith("evigraph"):
                    module.anywhere.add(target)
                    if top:
                        module.top_level.add(target)
            return
        nested = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        visit(node, top and not nested)

    visit(tree, True)


def project_modules() -> dict[str, Module]:
    """Every module of the installed namespace, by name."""
    files = sorted((ROOT / "evigraph").rglob("*.py"))
    for folder in MAPPED_FOLDERS:
        files += sorted((ROOT / folder).rglob("*.py"))
    modules: dict[str, Module] = {}
    trees = {}
    for path in files:
        if "__pycache__" in path.parts:
            continue
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        name = _module_name(path)
        modules[name] = Module(name, path, source.count("\n") + 1, ast.get_docstring(tree) or "")
        trees[name] = tree
    for name, module in modules.items():
        _imports(module, trees[name], set(modules))
    return modules


def owner(target: str, modules: dict[str, Module]) -> str | None:
    """The project module an import target names (the longest module-name prefix)."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None
