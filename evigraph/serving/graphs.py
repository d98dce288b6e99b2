"""The registered agents' graphs for LangGraph's own server: the graph factories ``langgraph.json`` names.

``langgraph dev`` (the ``[langgraph]`` extra) serves them and LangGraph Studio draws and runs them. There is one
factory per registered agent, named after it (``veri-r1`` → ``evigraph.serving.graphs:veri_r1``), and one more
for each agent whose embedded verifier is a graph of its own (``AgentSpec.verifier_builder``: StepGap's checker
over a host's steps, ``stepgap-verifier``). They are made from the registry when this module is imported --
nothing loads then -- and :func:`langgraph_config` writes the matching ``langgraph.json``
(``python -m evigraph.serving.graphs > langgraph.json``).

A factory takes the run's config and the server's runtime (LangGraph's ``ServerRuntime``): a run gets the agent's
real graph, over the model, search tool, NLI engine and settings :func:`~evigraph.serving.graphs_build.read_run`
reads from ``configurable`` and the server's environment, built in a worker thread and kept for the next runs;
every other call (Studio drawing the graph, its schemas, a thread's state) gets the same graph over stand-ins
that load nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from evigraph.serving.graphs_build import read_run, served_graph

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph_sdk.runtime import ServerRuntime

logger = logging.getLogger(__name__)

MODULE = "evigraph.serving.graphs"
"""How ``langgraph.json`` names this module (a module path: the package is installed, ``dependencies: ["."]``)."""


class ServedGraph(BaseModel):
    """One graph ``langgraph.json`` lists."""

    model_config = ConfigDict(frozen=True)

    graph_id: str
    """The server's name for it (the agent's name; ``-verifier`` added for an embedded verifier graph)."""
    variable: str
    """The factory's name in this module."""
    agent: str
    embedded: bool
    description: str


def served_graphs() -> dict[str, ServedGraph]:
    """Every registered agent's graph, and its embedded verifier graph where it has one of its own, by graph id."""
    from evigraph.registry import load_agents

    agents, _broken = load_agents()
    graphs: dict[str, ServedGraph] = {}
    for name, spec in agents.items():
        variable = name.replace("-", "_")
        graphs[name] = ServedGraph(
            graph_id=name, variable=variable, agent=name, embedded=False, description=spec.description
        )
        if spec.verifier_builder is not None:
            schema = (spec.verifier_input_schema or spec.input_schema or "").rpartition(":")[2]
            inputs = f" (input: {schema})" if schema else ""
            graphs[f"{name}-verifier"] = ServedGraph(
                graph_id=f"{name}-verifier",
                variable=f"{variable}_verifier",
                agent=name,
                embedded=True,
                description=f"{name} as a host embeds it, checking the host's own work{inputs}. {spec.description}",
            )
    return graphs


def langgraph_config() -> dict[str, Any]:
    """The ``langgraph.json`` serving :data:`GRAPHS`."""
    return {
        "$schema": "https://langgra.ph/schema.json",
        "python_version": "3.11",
        "dependencies": ["."],
        "graphs": {
            graph.graph_id: {"path": f"{MODULE}:{graph.variable}", "description": graph.description}
            for graph in GRAPHS.values()
        },
    }


def _factory(graph: ServedGraph) -> Callable[..., Any]:
    async def factory(config: RunnableConfig, runtime: ServerRuntime) -> Any:
        # Only a run executes the graph; reads (drawing, schemas, state) get it over stand-ins that load nothing.
        execute = runtime.execution_runtime is not None
        configurable = (config or {}).get("configurable")
        return await asyncio.to_thread(_graph, graph, configurable, execute)

    factory.__name__ = factory.__qualname__ = graph.variable
    factory.__doc__ = f"The {graph.graph_id!r} graph for LangGraph's server: {graph.description}"
    return factory


def _graph(graph: ServedGraph, configurable: Any, execute: bool) -> Any:
    run = read_run(graph.agent, configurable if isinstance(configurable, dict) else None, embedded=graph.embedded)
    return served_graph(run, execute=execute)


GRAPHS: dict[str, ServedGraph] = {}
"""What this module serves, by graph id."""
for _graph_id, _served in served_graphs().items():
    if _served.variable in globals():  # a plug-in whose name would shadow this module's own names
        logger.warning("agent %s is not served: its factory name %r is taken", _served.agent, _served.variable)
        continue
    GRAPHS[_graph_id] = _served
    globals()[_served.variable] = _factory(_served)

__all__ = (  # the factories are named from the registry
    "GRAPHS",
    "MODULE",
    "ServedGraph",
    "langgraph_config",
    "served_graphs",
    *(graph.variable for graph in GRAPHS.values()),
)


if __name__ == "__main__":
    print(json.dumps(langgraph_config(), indent=2))
