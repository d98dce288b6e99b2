"""evigraph: pluggable tool-using verifier agents as LangGraph state machines.

``import evigraph`` is light on purpose: it loads pydantic models only. torch, transformers, vLLM,
Pyserini and OpenRLHF are imported where they are used. The subpackages ``evigraph.agents``,
``evigraph.tools``, ``evigraph.graphs``, ``evigraph.training`` and ``evigraph.corpora`` live in the
repository's top-level folders of the same names (see setup.py).
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version

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

try:
    __version__ = version("evigraph")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

logging.getLogger(__name__).addHandler(logging.NullHandler())

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
)
