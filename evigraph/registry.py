"""The agent registry: what a verification method plugs into.

An agent is declared by an :class:`AgentSpec`: its name, what it does, and *import paths*
(``"package.module:attribute"``) of its graph builder, input/output schemas, reward and metric functions and
CLI hooks. Paths, not objects, keep ``evigraph info`` and ``evigraph --help`` light: nothing heavy is imported
until a hook is used.

Built-in agents and third-party packages register the same way, through the entry-point group
``evigraph.agents`` (each entry point names an ``AgentSpec`` object)::

    [project.entry-points."evigraph.agents"]
    my-checker = "my_package.agent:SPEC"

:func:`register_agent` adds one at run time (tests, notebooks). A plug-in that fails to load is reported by
:func:`load_agents` and ``evigraph info`` instead of breaking every other agent.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evigraph.errors import ConfigError

__all__ = (
    "ENTRY_POINT_GROUP",
    "HOOKS",
    "AgentSpec",
    "BrokenAgent",
    "get_agent",
    "load_agents",
    "register_agent",
    "resolve",
)

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "evigraph.agents"

HOOKS: tuple[str, ...] = ("run", "eval", "score", "reward", "filter")
"""CLI hooks an agent may provide. ``run`` backs the agent's own verb (``verify``, ``check``, ...)."""

VERBS: tuple[str, ...] = ("verify", "check", "detect", "attribute", "rank")
"""The method verbs of the CLI (``evigraph verify ...``); an agent claims at most one."""

_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


def resolve(path: str) -> Any:
    """Import ``"package.module:attr.sub"`` and return the object.

    Raises:
        ConfigError: the module or attribute does not exist (the message names the path).
    """
    module_name, _, attr_path = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"cannot import {module_name!r} ({error})", source=path) from error
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{module_name!r} has no attribute {attr_path!r}", source=path) from None
    return obj


class AgentSpec(BaseModel):
    """Everything the framework needs to know about one agent, as import paths."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Registry key and CLI argument, lowercase with dashes (``veri-r1``)."""
    description: str
    verb: str | None = None
    """The CLI verb this agent answers (one of ``VERBS``), if any."""
    graph_builder: str | None = None
    """``module:function`` building the compiled LangGraph graph."""
    input_schema: str | None = None
    output_schema: str | None = None
    rewards: dict[str, str] = Field(default_factory=dict)
    """Reward component name → ``module:function``."""
    metrics: str | None = None
    """``module:function`` computing the evaluation report from predictions and gold records."""
    hooks: dict[str, str] = Field(default_factory=dict)
    """CLI hook name (one of ``HOOKS``) → ``module:function``."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"agent names are lowercase words joined by dashes, got {value!r}")
        return value

    @field_validator("verb")
    @classmethod
    def _check_verb(cls, value: str | None) -> str | None:
        if value is not None and value not in VERBS:
            raise ValueError(f"verb must be one of {', '.join(VERBS)}, got {value!r}")
        return value

    @field_validator("hooks")
    @classmethod
    def _check_hooks(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(HOOKS))
        if unknown:
            raise ValueError(f"unknown hook(s) {unknown}; accepted: {', '.join(HOOKS)}")
        return value

    @field_validator("graph_builder", "input_schema", "output_schema", "metrics")
    @classmethod
    def _check_path(cls, value: str | None) -> str | None:
        if value is not None and not _IMPORT_PATH.match(value):
            raise ValueError(f"expected 'package.module:attribute', got {value!r}")
        return value

    def hook(self, name: str) -> Callable[..., Any]:
        """The callable behind CLI hook ``name``.

        Raises:
            ConfigError: the agent does not provide that hook.
        """
        if name not in self.hooks:
            provided = ", ".join(sorted(self.hooks)) or "none"
            raise ConfigError(f"agent {self.name!r} has no {name!r} hook (it provides: {provided})")
        return resolve(self.hooks[name])


@dataclass(frozen=True)
class BrokenAgent:
    """An entry point that failed to load, kept so ``evigraph info`` can say why."""

    name: str
    target: str
    error: str


@dataclass
class _Registry:
    agents: dict[str, AgentSpec] = field(default_factory=dict)
    broken: dict[str, BrokenAgent] = field(default_factory=dict)
    discovered: bool = False


_REGISTRY = _Registry()


def register_agent(spec: AgentSpec, *, replace: bool = False) -> AgentSpec:
    """Add ``spec`` to the registry (returns it, so it can decorate a module constant).

    Raises:
        ConfigError: another agent already uses the name (pass ``replace=True`` to override).
    """
    _discover()
    if spec.name in _REGISTRY.agents and not replace and _REGISTRY.agents[spec.name] != spec:
        raise ConfigError(f"an agent named {spec.name!r} is already registered")
    _REGISTRY.agents[spec.name] = spec
    return spec


def _discover() -> None:
    if _REGISTRY.discovered:
        return
    _REGISTRY.discovered = True
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = entry.load()
            if not isinstance(spec, AgentSpec):
                raise TypeError(f"expected an AgentSpec, got {type(spec).__name__}")
            if spec.name != entry.name:
                raise ValueError(f"entry point is named {entry.name!r} but the spec says {spec.name!r}")
        except Exception as error:  # a broken plug-in must not take the others down
            logger.warning("agent plug-in %s (%s) failed to load: %s", entry.name, entry.value, error)
            _REGISTRY.broken[entry.name] = BrokenAgent(entry.name, entry.value, f"{type(error).__name__}: {error}")
            continue
        _REGISTRY.agents.setdefault(spec.name, spec)


def load_agents() -> tuple[dict[str, AgentSpec], dict[str, BrokenAgent]]:
    """All registered agents and the plug-ins that failed to load (discovering entry points once)."""
    _discover()
    return dict(sorted(_REGISTRY.agents.items())), dict(_REGISTRY.broken)


def get_agent(name: str) -> AgentSpec:
    """The agent called ``name``.

    Raises:
        ConfigError: no such agent; the message lists the registered names.
    """
    agents, broken = load_agents()
    if name in agents:
        return agents[name]
    if name in broken:
        raise ConfigError(f"agent {name!r} failed to load: {broken[name].error}")
    known = f"registered: {', '.join(agents)}" if agents else "no agent is registered"
    raise ConfigError(f"unknown agent {name!r} ({known})")


def _reset_for_tests() -> None:
    """Forget everything (tests only): the next call rediscovers entry points."""
    _REGISTRY.agents.clear()
    _REGISTRY.broken.clear()
    _REGISTRY.discovered = False
