"""evigraph: pluggable tool-using verifier agents as LangGraph state machines.

``import evigraph`` is light on purpose: it loads pydantic models only. torch, transformers, vLLM,
Pyserini and OpenRLHF are imported where they are used. The subpackages ``evigraph.agents``,
``evigraph.tools``, ``evigraph.graphs``, ``evigraph.training`` and ``evigraph.corpora`` live in the
repository's top-level folders of the same names (see setup.py).
"""

from __future__ import annotations

import logging
from typing import Any

from evigraph.errors import (
    ConfigError,
    EvigraphError,
    GeneratorError,
    InputDataError,
    MissingDependencyError,
    TokenContractError,
    ToolError,
)
from evigraph.trajectory import Evidence, RewardComponent, Segment, Step, Timing, Trajectory, TrajectoryError
from evigraph.version import __version__

logging.getLogger(__name__).addHandler(logging.NullHandler())


def agent(
    name: str, *, model: Any = None, search: Any = None, nli: Any = None, judge: Any = None, **config: Any
) -> Any:
    """The compiled LangGraph graph of the registered agent ``name``, built from a model spec string, an evigraph
    generator or a LangChain chat model (see :func:`evigraph.embed.agent.agent`)::

        graph = evigraph.agent("veri-r1", model="openai:smollm2@http://127.0.0.1:8000/v1", max_searches=2)
        result = asyncio.run(graph.ainvoke({"claim": "The Eiffel Tower is in Paris."}))  # its nodes are async
    """
    from evigraph.embed.agent import agent as build

    return build(name, model=model, search=search, nli=nli, judge=judge, **config)


__all__ = (
    "ConfigError",
    "Evidence",
    "EvigraphError",
    "GeneratorError",
    "InputDataError",
    "MissingDependencyError",
    "RewardComponent",
    "Segment",
    "Step",
    "Timing",
    "TokenContractError",
    "ToolError",
    "Trajectory",
    "TrajectoryError",
    "__version__",
    "agent",
)
