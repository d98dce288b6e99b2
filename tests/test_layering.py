"""The architecture's floors, checked on the import graph (``docs/architecture.md`` draws them).

import-linter cannot see this layout (setup.py installs five top-level folders as ``evigraph.*`` subpackages, and
grimp walks one package directory), so the contracts are read from the source with :mod:`ast`
(:mod:`tests.layering`). Lazy imports inside functions count for the floors; module-level imports make cycles.
"""

from __future__ import annotations

import re

import pytest

from tests.layering import Module, owner, project_modules

MODULES = project_modules()
AGENTS = sorted(
    {name.split(".")[2] for name in MODULES if name.startswith("evigraph.agents.") and name.count(".") >= 2}
)
KIT = ("evigraph.graphs.kit", "evigraph.evaluation", "evigraph.registry", "evigraph.diagnostics")
"""The kit floor, by folder (``graphs/kit/``, ``evigraph/evaluation/``) or module: what every agent builds on."""
BUILDS_ON = {
    ("stepgap", "search_r1"): "StepGap checks and repairs Search-R1 rollouts (its answer, step and search reading)",
    ("veri_r1", "stepgap"): "Veri-R1's runs read as StepGap traces, for StepGap's process reward in mixed training",
    ("seva", "veri_r1"): "SEVA trains and evaluates on Veri-R1's released claim files (their reader)",
}
"""(agent, the agent it builds on) → why; the only cross-agent imports (``docs/architecture.md`` names them)."""
MAX_LINES = 500
LONG_REASON = re.compile(r"^Length:", re.MULTILINE)


def agent_of(name: str) -> str | None:
    """The agent a module belongs to: its folder under ``agents/``, or its graph module's name."""
    parts = name.split(".")
    if parts[:2] == ["evigraph", "agents"] and len(parts) > 2:
        return parts[2]
    if parts[:2] == ["evigraph", "graphs"] and len(parts) > 2 and parts[2] != "kit":
        return next((a for a in AGENTS if parts[2] == a or parts[2].startswith(f"{a}_")), parts[2])
    return None


def floor(name: str) -> str:
    """``core``, ``tools``, ``kit``, ``agent``, ``graph``, ``job``, ``generic`` (CLI, trainer, embedding, serving),
    ``face`` (the package root: ``evigraph.agent`` reaches the embedding floor lazily, like any generic code)."""
    parts = name.split(".")
    if agent_of(name) and parts[1] == "agents":
        last = parts[-1]
        return "job" if last == "hooks" or last.endswith("_job") else "agent"
    if agent_of(name):
        return "graph"
    if name == "evigraph.graphs" or any(name == kit or name.startswith(f"{kit}.") for kit in KIT):
        return "kit"
    if parts[1:2] in (["tools"], ["corpora"]):
        return "tools"
    if parts[1:2] in (["cli"], ["training"], ["embed"], ["serving"], ["__main__"]):
        return "generic"
    if name == "evigraph":
        return "face"
    return "core"


ALLOWED = {
    "core": {"core"},
    "tools": {"core", "tools"},
    "kit": {"core", "tools", "kit"},
    "agent": {"core", "tools", "kit", "agent"},
    "graph": {"core", "tools", "kit", "agent", "graph"},
    "generic": {"core", "tools", "kit", "generic"},
    "job": {"core", "tools", "kit", "agent", "graph", "generic", "job"},
    "face": {"core", "tools", "kit", "generic"},
}
"""What each floor may import (lazy imports included). Generic code reaches agents only through the registry."""


def _edges(module: Module, *, top_level: bool = False) -> set[str]:
    targets = module.top_level if top_level else module.anywhere
    return {found for t in targets if (found := owner(t, MODULES)) is not None and found != module.name}


def test_every_module_sits_on_a_floor_and_imports_only_from_its_own_or_lower_floors() -> None:
    wrong = [
        f"{name} ({floor(name)}) imports {target} ({floor(target)})"
        for name, module in MODULES.items()
        for target in sorted(_edges(module))
        if floor(target) not in ALLOWED[floor(name)]
    ]
    assert not wrong, "\n".join(wrong)


def test_agents_import_other_agents_only_where_one_method_builds_on_another() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, module in MODULES.items()
        for target in sorted(_edges(module))
        if (a := agent_of(name)) and (b := agent_of(target)) and a != b and (a, b) not in BUILDS_ON
    ]
    assert not wrong, "\n".join(wrong)


def _cycles(modules: dict[str, Module], *, top_level: bool) -> list[list[str]]:
    """The import circles among ``modules`` (``top_level``: only imports that run on import)."""
    graph = {name: _edges(module, top_level=top_level) for name, module in modules.items()}
    # A package's __init__ that imports its own submodules is not a cycle Python trips on.
    graph = {name: {t for t in targets if not name.startswith(f"{t}.")} for name, targets in graph.items()}
    return [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]


def test_there_is_no_import_cycle_between_modules() -> None:
    assert not _cycles(MODULES, top_level=True)


def test_no_import_circle_hides_behind_an_import_inside_a_function() -> None:
    """A function-level import that closes a circle only hides it: the two modules still need each other."""
    cycles = _cycles(MODULES, top_level=False)
    assert not cycles, cycles


def test_the_circle_check_sees_a_planted_lazy_circle() -> None:
    labels = MODULES["evigraph.agents.seva.labels"]
    schemas = MODULES["evigraph.agents.seva.schemas"]
    assert "evigraph.agents.seva.labels" in schemas.top_level
    planted = Module(labels.name, labels.path, 1, "", anywhere={"evigraph.agents.seva.schemas"})
    modules = {labels.name: planted, schemas.name: schemas}
    assert not _cycles(modules, top_level=True)  # lazy: Python never trips on it ...
    assert _cycles(modules, top_level=False) == [sorted(modules)]  # ... but it is a circle all the same


def test_modules_over_500_lines_say_why_at_their_top() -> None:
    long = [
        f"{m.name}: {m.lines} lines"
        for m in MODULES.values()
        if m.lines > MAX_LINES and not LONG_REASON.search(m.docstring)
    ]
    assert not long, "add a 'Length: <reason>' paragraph to the module docstring, or split:\n" + "\n".join(long)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("evigraph.trajectory", "core"),
        ("evigraph.registry", "kit"),
        ("evigraph.tools.search", "tools"),
        ("evigraph.graphs.kit.assembly", "kit"),
        ("evigraph.evaluation.runner", "kit"),
        ("evigraph.agents.seva.rewards", "agent"),
        ("evigraph.graphs.stepgap_checker", "graph"),
        ("evigraph.agents.stepgap.hooks", "job"),
        ("evigraph.agents.seva.evolution_job", "job"),
        ("evigraph.training.executor", "generic"),
        ("evigraph.cli.app", "generic"),
    ],
)
def test_the_floors_are_read_as_the_architecture_doc_draws_them(name: str, expected: str) -> None:
    assert name in MODULES and floor(name) == expected


def test_the_checker_sees_lazy_imports_and_a_planted_violation() -> None:
    train = MODULES["evigraph.cli.train"]
    assert "evigraph.registry" in train.anywhere and "evigraph.registry" not in train.top_level  # lazy, seen
    planted = Module("evigraph.training.fake", train.path, 1, "", anywhere={"evigraph.agents.stepgap.schemas"})
    assert any(floor(t) not in ALLOWED["generic"] for t in _edges(planted))


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph has ~200 nodes; recursion would do, but this never overflows)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components
