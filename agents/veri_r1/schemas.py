"""Veri-R1 boundary models: the run configuration, the graph's input and its output."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evigraph.agents.veri_r1.format_rules import FormatOptions
from evigraph.agents.veri_r1.labels import Label

__all__ = ("VeriR1Config", "VeriR1Input", "VeriR1Output")


class VeriR1Config(BaseModel):
    """Knobs of one Veri-R1 run (defaults: spec §2 and §5)."""

    model_config = ConfigDict(frozen=True)

    max_searches: int = Field(3, ge=0)
    max_turns: int | None = Field(None, ge=1)
    """Generation turns including the answer turn; default ``max_searches + 1`` (spec §2.6)."""
    top_k: int = Field(3, ge=1)
    max_new_tokens: int = Field(512, ge=1)
    """Per-turn cap (spec §5: max response length per turn)."""
    offline_max_new_tokens: int = Field(1024, ge=1)
    """The single offline turn's cap (reference offline config)."""
    max_information_tokens: int = Field(768, ge=16)
    """Cap on the rendered entries of one information block (spec §2.4)."""
    restrict_to_retrieved: bool = False
    """Drop cited ids that no information block showed (spec §9 #12; default counts them as given)."""
    logprobs: bool = True
    """Ask the backend for logprobs, so the label's confidence can be recorded (spec §9 #14)."""
    format: FormatOptions = FormatOptions()
    constrained: bool = False
    """Guide each turn with a regular expression (:mod:`.decoding`) -- for weak models at inference only;
    needs a backend that enforces regex guides (``--generator.constrained`` on the transformers backend)."""
    guide_max_block_chars: int | None = Field(None, ge=1)
    """With ``constrained``: cap plan/think/search bodies so blocks must close (slower; see ``turn_regex``)."""

    @model_validator(mode="after")
    def _check_turns(self) -> VeriR1Config:
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError("max_turns must be >= 1")
        return self

    @property
    def turns(self) -> int:
        return self.max_turns if self.max_turns is not None else self.max_searches + 1


class VeriR1Input(BaseModel):
    """One claim to verify; ``evidence`` makes it an offline (OffCV) run's given entries."""

    id: str | None = None
    claim: str = Field(min_length=1)


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
