"""The error vocabulary, named by the boundary that was crossed.

- :class:`ConfigError` -- a usage or configuration mistake. Raised early and names where the bad value
  came from (a flag, an environment variable, ``file:line:field``) and what is accepted.
- :class:`InputDataError` -- a bad record in an input file; always carries ``file:line``.
- :class:`GeneratorError` / :class:`ToolError` -- a backend or tool failed while a graph ran. Graph
  runners record these on the failed :class:`~evigraph.trajectory.Trajectory` instead of cancelling
  sibling rollouts.
- :class:`MissingDependencyError` -- an optional dependency is not installed; the message says which
  extra or command installs it.
- :class:`TokenContractError` -- a strict (training) run met text where exact token ids were required:
  a text backend, a policy segment without ids, a transcript the chat template cannot render.

Bad *model text* is never an exception: parsers return typed format-error values.
"""

from __future__ import annotations

__all__ = (
    "ConfigError",
    "EvigraphError",
    "GeneratorError",
    "InputDataError",
    "MissingDependencyError",
    "TokenContractError",
    "ToolError",
)


class EvigraphError(Exception):
    """Base class of every error evigraph raises on purpose."""


class ConfigError(EvigraphError, ValueError):
    """A configuration or usage error.

    Args:
        message: what was wrong and what is accepted.
        source: where the value came from, e.g. ``--temperature``, ``EVIGRAPH_MODEL`` or
            ``evigraph.toml:3:generator.model``.
    """

    def __init__(self, message: str, *, source: str | None = None) -> None:
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)


class InputDataError(EvigraphError, ValueError):
    """A record in an input file could not be used; the message starts with ``file:line``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {message}")


class GeneratorError(EvigraphError, RuntimeError):
    """A generation backend failed (connection, server error, engine crash)."""


class ToolError(EvigraphError, RuntimeError):
    """A tool (search, NLI, ...) failed while a graph ran."""


class MissingDependencyError(EvigraphError, ImportError):
    """An optional dependency is missing; the message names the install command."""

    def __init__(self, package: str, hint: str) -> None:
        self.package = package
        super().__init__(f"{package} is not installed: {hint}")


class TokenContractError(EvigraphError, RuntimeError):
    """A strict run (training) could not keep exact token ids; see :mod:`evigraph.tokens`."""
