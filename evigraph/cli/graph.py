"""``evigraph graph AGENT``: draw a registered agent's state machine, offline.

The graph is compiled the way a command compiles it -- the agent's ``graph_builder`` (``--verifier``: its
``verifier_builder``, the graph a host embeds) with the agent's default config, no model, and a placeholder for
each tool it takes -- and never run, so drawing loads no weights and opens no index. What is drawn:

- **Mermaid** text, from LangGraph's ``draw_mermaid`` (pure text, always available; the default);
- **PNG** through Graphviz: LangGraph's ``draw_png`` when ``pygraphviz`` imports, else the graph written as DOT
  (:func:`to_dot`) and laid out by the ``dot`` binary. LangGraph's ``draw_mermaid_png`` posts the text to a
  web service (mermaid.ink), so it is never used.

Subgraphs are drawn inside their node (LangGraph's ``xray``), including a compiled graph that a node runs
through the object its method is bound to (StepGap's ``rollout`` and ``check``): LangGraph's own xray looks
for subgraphs only in a node function's closure.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core
from rich.console import Console

from evigraph.errors import ConfigError

if TYPE_CHECKING:
    from langchain_core.runnables.graph import Graph

    from evigraph.registry import LoadedAgent
    from evigraph.trajectory import Evidence

__all__ = ("GraphCommand", "compile_for_drawing", "drawable", "graph_command", "png_backend", "png_path", "to_dot")

err_console = Console(stderr=True)

GRAPHVIZ_HINT = "install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz)"
_FILL = "#f2f0ff"  # LangGraph's mermaid node colour, so both drawings look alike


class DrawingSearch:
    """The search tool a graph is compiled with only to be drawn; a run that reaches it is a bug."""

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        raise RuntimeError("this graph was compiled only to be drawn; it has no search tool")

    def batch_search(self, queries: Any, k: int = 3) -> list[list[Evidence]]:
        raise RuntimeError("this graph was compiled only to be drawn; it has no search tool")


def _config(agent: LoadedAgent, settings: list[str]) -> Any:
    """The agent's default config with ``KEY=VALUE`` overrides (``offline=true``), checked by its model."""
    if agent.config is None:
        if settings:
            raise ConfigError(f"agent {agent.name!r} has no config to set", source="--set")
        return None
    values: dict[str, str] = {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or key.strip() not in agent.config.model_fields:
            fields = ", ".join(agent.config.model_fields)
            raise ConfigError(f"{setting!r}: expected KEY=VALUE with KEY one of: {fields}", source="--set")
        values[key.strip()] = value
    from pydantic import ValidationError

    try:
        return agent.config.model_validate(values)
    except ValidationError as error:
        raise ConfigError(f"{agent.name} config: {error}", source="--set") from None


def compile_for_drawing(agent: LoadedAgent, *, verifier: bool = False, settings: Sequence[str] = ()) -> Any:
    """``agent``'s compiled graph (``verifier``: the one a host embeds), built with no model and placeholder
    tools. Resources go only to builders that take them, as :mod:`evigraph.embed` passes them.

    Raises:
        ConfigError: the agent declares no graph, or its builder refused the placeholders.
    """
    builder = (agent.verifier_builder if verifier else None) or agent.require("graph_builder")
    placeholders = {"search": DrawingSearch(), "nli": None}  # no NLI: the builders fall back to the judge
    accepted = inspect.signature(builder).parameters
    resources = {name: placeholders[name] for name in agent.spec.resources if name in accepted}
    config = _config(agent, list(settings))
    try:
        return builder(None, config=config, **resources)
    except ConfigError as error:
        raise ConfigError(f"agent {agent.name!r}: its graph could not be compiled to draw it: {error}") from None


def _held_graph(runnable: Any) -> Any | None:
    """The one compiled graph a node's bound method runs through its object (``self.checker_graph.ainvoke``)."""
    from langgraph.pregel import Pregel

    function = getattr(runnable, "afunc", None) or getattr(runnable, "func", None)
    owner = getattr(function, "__self__", None)
    if owner is None:
        return None
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):  # no source (a compiled or generated method): draw the node as it is
        return None
    names = dict.fromkeys(re.findall(r"self\.(\w+)", source))  # in order, once each
    graphs = [graph for name in names if isinstance(graph := getattr(owner, name, None), Pregel)]
    return graphs[0] if len(graphs) == 1 else None


def drawable(compiled: Any) -> Graph:
    """``compiled``'s drawable graph with every subgraph inside its node (ids ``node:inner``)."""
    graph = compiled.get_graph(xray=True)
    for name, node in list(compiled.nodes.items()):
        inner = _held_graph(node.bound)
        if inner is None or name not in graph.nodes:
            continue
        sub = drawable(inner)
        if len(sub.nodes) <= 1 or sub.first_node() is None or sub.last_node() is None:
            continue
        # What LangGraph's draw_graph does for the subgraphs it finds: drop the inner start and end, splice in.
        sub.trim_first_node()
        sub.trim_last_node()
        graph.nodes.pop(name)
        first, last = graph.extend(sub, prefix=name)
        if first is None or last is None:  # pragma: no cover - first_node/last_node were checked above
            continue
        for index, edge in enumerate(graph.edges):
            if edge.source == name:
                edge = edge.copy(source=last.id)
            if edge.target == name:
                edge = edge.copy(target=first.id)
            graph.edges[index] = edge
    return graph


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph, *, title: str) -> str:
    """``graph`` in Graphviz DOT: a box per node, dashed edges for conditional ones, a cluster per subgraph."""
    lines = [
        f"digraph {_quote(title)} {{",
        f"  label={_quote(title)}; labelloc=t; fontname=Helvetica; rankdir=TB; dpi=72;",
        f'  node [shape=box, style="rounded,filled", fillcolor="{_FILL}", fontname=Helvetica, fontsize=11];',
        "  edge [fontname=Helvetica, fontsize=9];",
    ]
    clusters: dict[tuple[str, ...], list[str]] = {}
    for node_id in graph.nodes:
        *prefix, name = node_id.split(":")
        if name in ("__start__", "__end__"):
            look = f"label={_quote(name.strip('_').upper())}, shape=oval, fillcolor=white"
        else:
            look = f"label={_quote(name)}"
        clusters.setdefault(tuple(prefix), []).append(f"{_quote(node_id)} [{look}];")
    _clusters(lines, clusters, (), depth=1)
    for edge in graph.edges:
        attributes = ["style=dashed"] if edge.conditional else []
        if edge.data is not None:
            attributes.append(f"label={_quote(str(edge.data))}")
        suffix = f" [{', '.join(attributes)}]" if attributes else ""
        lines.append(f"  {_quote(edge.source)} -> {_quote(edge.target)}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _clusters(
    lines: list[str], clusters: dict[tuple[str, ...], list[str]], prefix: tuple[str, ...], depth: int
) -> None:
    """Write the nodes under ``prefix``, then one nested cluster per child prefix."""
    indent = "  " * depth
    lines.extend(indent + line for line in clusters.get(prefix, []))
    children = sorted(
        {key[: len(prefix) + 1] for key in clusters if len(key) > len(prefix) and key[: len(prefix)] == prefix}
    )
    for child in children:
        lines.append(f"{indent}subgraph {_quote('cluster_' + ':'.join(child))} {{")
        lines.append(f'{indent}  label={_quote(child[-1])}; style="rounded"; color=gray;')
        _clusters(lines, clusters, child, depth + 1)
        lines.append(f"{indent}}}")


def png_backend() -> str | None:
    """``"pygraphviz"`` when it imports, else ``"dot"`` when the Graphviz binary is on PATH, else ``None``."""
    if importlib.util.find_spec("pygraphviz") is not None:
        return "pygraphviz"
    return "dot" if shutil.which("dot") else None


def write_png(graph: Graph, out: Path, *, title: str) -> str:
    """Draw ``graph`` into ``out`` through Graphviz and say how (one line).

    Raises:
        ConfigError: neither pygraphviz nor ``dot`` is installed, or ``dot`` failed.
    """
    backend = png_backend()
    if backend is None:
        raise ConfigError(f"--png needs Graphviz: neither pygraphviz nor the dot binary is installed; {GRAPHVIZ_HINT}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if backend == "pygraphviz":
        graph.draw_png(output_file_path=str(out))
        return "PNG drawn by pygraphviz (LangGraph's draw_png, offline)"
    dot = shutil.which("dot") or "dot"
    done = subprocess.run(
        [dot, "-Tpng", "-o", str(out)],
        input=to_dot(graph, title=title),
        text=True,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise ConfigError(f"Graphviz dot failed (exit {done.returncode}): {done.stderr.strip()}")
    return f"PNG drawn by Graphviz {dot} from evigraph's DOT (offline)"


def _with_png_default(args: list[str]) -> list[str]:
    """``args`` with ``.`` after a ``--png`` that has no path (last, or followed by another option).

    typer's parser has no option whose value may be left out, so a bare ``--png`` is given the current folder,
    which :func:`png_path` turns into ``AGENT.png``.
    """
    fixed: list[str] = []
    for position, arg in enumerate(args):
        fixed.append(arg)
        following = args[position + 1] if position + 1 < len(args) else None
        if arg == "--png" and (following is None or (following.startswith("-") and following != "-")):
            fixed.append(".")
    return fixed


class GraphCommand(typer.core.TyperCommand):
    """``evigraph graph``, whose ``--png`` may be given without a path."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _with_png_default(list(args)))


def png_path(png: Path, agent: str) -> Path:
    """Where ``--png`` writes: ``AGENT.png`` inside ``png`` when it is a folder (the current one for a bare
    ``--png``), else ``png`` itself."""
    return png / f"{agent}.png" if png.is_dir() else png


def graph_command(
    agent: Annotated[str, typer.Argument(help="A registered agent (see `evigraph info`).")],
    png: Annotated[
        Path | None,
        typer.Option(
            "--png",
            metavar="[PATH]",
            help="Write a PNG (needs Graphviz): to PATH, into PATH as AGENT.png when it is a folder, "
            "or to AGENT.png in the current folder when no PATH is given.",
        ),
    ] = None,
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Print Mermaid text (the default when --png is not given).")
    ] = False,
    verifier: Annotated[
        bool, typer.Option("--verifier", help="Draw the graph a host embeds (AgentSpec.verifier_builder).")
    ] = False,
    settings: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="A config field for this drawing, KEY=VALUE (offline=true)."),
    ] = None,
) -> None:
    """Draw AGENT's state machine offline: Mermaid text, or a PNG through Graphviz."""
    from evigraph.registry import get_agent

    loaded = get_agent(agent).load()
    if verifier and loaded.verifier_builder is None:
        err_console.print(
            f"{agent} declares no verifier_builder: a host embeds its graph_builder graph", markup=False, soft_wrap=True
        )
    compiled = compile_for_drawing(loaded, verifier=verifier, settings=settings or [])
    graph = drawable(compiled)
    if png is not None:
        png = png_path(png, agent)
        how = write_png(graph, png, title=compiled.name)
        err_console.print(
            f"{how}: wrote {png} ({png.stat().st_size} bytes)", markup=False, highlight=False, soft_wrap=True
        )
    if mermaid or png is None:
        text = graph.draw_mermaid()
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        err_console.print(
            "Mermaid text from LangGraph's draw_mermaid (offline)", markup=False, highlight=False, soft_wrap=True
        )
