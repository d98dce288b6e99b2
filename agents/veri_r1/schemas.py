"""Veri-R1 boundary types: the run configuration, the graph's input and result, and the verdict it returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Required

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import TypedDict

from evigraph.agents.veri_r1.format_rules import FormatOptions
from evigraph.agents.veri_r1.labels import Label
from evigraph.inputs import NonBlank
from evigraph.trajectory import Evidence, Trajectory

__all__ = ("VeriR1Config", "VeriR1Inputs", "VeriR1Output", "VeriR1Result")


class VeriR1Config(BaseModel):
    """Knobs of one Veri-R1 run (defaults: spec §2 and §5). Each scalar field is also a flag of the agent's
    commands (``--max-searches``) and a key of its config section (``[agents.veri-r1]``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    inherit_from_generator: ClassVar[Mapping[str, str]] = {
        "max_new_tokens": "max_new_tokens",
        "offline_max_new_tokens": "max_new_tokens",
    }
    """Fields set by ``--generator.max-new-tokens`` (and its env/file keys)."""

    offline: bool = False
    """Offline variant (OffCV): the entries come with each claim, one think-and-answer turn, no search."""
    max_searches: int = Field(3, ge=0)
    """Search budget per claim."""
    # spec §2.6
    max_turns: int | None = Field(None, ge=1)
    """Generation turns including the answer turn; default max_searches + 1."""
    top_k: int = Field(3, ge=1)
    """Entries returned per search."""
    # spec §5
    max_new_tokens: int = Field(512, ge=1)
    """Per-turn token cap."""
    offline_max_new_tokens: int = Field(1024, ge=1)
    """The single offline turn's token cap (reference offline config)."""
    # spec §2.4
    max_information_tokens: int = Field(768, ge=16)
    """Token cap on the search results shown in one information block (longer results are cut to fit)."""
    # spec §9 #12
    restrict_to_retrieved: bool = False
    """Drop cited evidence ids that no search showed the model (default: every cited id counts as given)."""
    # spec §9 #14
    logprobs: bool = True
    """Ask the backend for token logprobs, so the label's confidence is recorded."""
    format: FormatOptions = FormatOptions()
    """Switches of the F1–F8 checklist (spec §9 #5); config file only."""
    constrained: bool | None = None
    """Guide each turn with a grammar built from the claim (weak models, inference only); default: the
    generator's weak-model mode (on for the embedded model)."""
    prompt: Literal["full", "brief"] = "full"
    """The online prompt: ``full`` states the whole protocol; ``brief`` is two lines (plan, search, think,
    answer; the answer's two lines), for small policies trained from scratch on the protocol (shorter episodes)."""
    demonstration: bool | None = None
    """Show a worked run in the prompt (small models follow examples); default: with constrained decoding."""
    guide_max_block_chars: int | None = Field(None, ge=1)
    """With constrained decoding: cap plan/think/search bodies so blocks must close (slower)."""

    @model_validator(mode="after")
    def _check_turns(self) -> VeriR1Config:
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        return self

    @property
    def turns(self) -> int:
        """Generation turns of one run: 1 offline, else ``max_turns`` or ``max_searches + 1``."""
        if self.offline:
            return 1
        return self.max_turns if self.max_turns is not None else self.max_searches + 1

    @property
    def turn_cap(self) -> int:
        """The per-turn token cap of this variant."""
        return self.offline_max_new_tokens if self.offline else self.max_new_tokens


class VeriR1Inputs(TypedDict, total=False):
    """What the graph's ``ainvoke`` takes: ``claim`` (required), ``id``, ``evidence`` (the given entries of an
    offline run) and ``gold`` (``{"label", "evidence"}``; when given, the trajectory carries the rewards)."""

    claim: Required[NonBlank]
    id: str
    evidence: list[Evidence]
    gold: dict[str, Any]


class VeriR1Output(BaseModel):
    """What a run concluded, plus the diagnostics the metrics need."""

    label: Label | None
    evidence: list[str]
    """Cited ids after normalisation (and after dropping unseen ids when ``restrict_to_retrieved``)."""
    answered: bool
    format_ok: bool
    format_failed: list[str] = Field(default_factory=list)
    """Format rules (F1–F8) that failed."""
    queries: list[str] = Field(default_factory=list)
    duplicate_queries: int = 0
    retrieved_ids: list[str] = Field(default_factory=list)
    """Every id shown to the model (search results, or the given entries offline), in order."""
    cited_unretrieved: list[str] = Field(default_factory=list)
    """Cited ids no information block showed (spec §8 #9)."""
    confidence: float | None = None
    """Probability of the label's first token, when the backend returned logprobs."""
    n_turns: int = 0
    n_searches: int = 0


class VeriR1Result(TypedDict):
    """What the graph's ``ainvoke`` returns."""

    output: VeriR1Output
    trajectory: Trajectory
