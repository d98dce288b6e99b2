"""Boundary types: the config (its fields are flags and ``[agents.passage-check]`` keys), the graph's input and
result, the output, and the gold answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict  # pydantic builds its JSON schema (Studio's form) on Python 3.11

from evigraph.trajectory import Trajectory

__all__ = ("Gold", "PassageCheckConfig", "PassageCheckInputs", "PassageCheckOutput", "PassageCheckResult")


class PassageCheckConfig(BaseModel):
    """Knobs of one run."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    inherit_from_generator: ClassVar[Mapping[str, str]] = {"max_new_tokens": "max_new_tokens"}
    """``--generator.max-new-tokens`` (or its env/file key) sets the turn's cap."""

    max_new_tokens: int = Field(64, ge=1)
    """Token cap of the one turn."""
    lenient: bool = False
    """Accept the verdict in any letter case and with surrounding spaces."""
    constrained: bool | None = None
    """Decode under a pattern that admits only the answer block with yes or no (weak models, inference only);
    default: the generator's weak-model mode (on for the embedded model)."""


class PassageCheckInputs(TypedDict, total=False):
    """What the graph takes: ``claim`` and ``passage`` (required), ``id``, ``gold`` (``{"supported": bool}``)."""

    claim: str
    passage: str
    id: str
    gold: dict[str, Any]


class PassageCheckOutput(BaseModel):
    """What a run concluded."""

    verdict: Literal["yes", "no"] | None
    """``None`` when the turn held no readable verdict."""
    well_formed: bool
    """Exactly one answer block and nothing outside it."""


class PassageCheckResult(TypedDict):
    """What the graph returns."""

    output: PassageCheckOutput
    trajectory: Trajectory


class Gold(BaseModel):
    """The gold answer (also one line of a gold file)."""

    id: str | None = None
    supported: bool
