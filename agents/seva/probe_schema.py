"""What a SEVA probe is (specs/seva.md §2.4): the six perturbation strategies, the error categories each
produces (the spec's table, open point O12), and :class:`Perturbation`, one probe with its single recorded edit.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

from evigraph.agents.seva.schemas import ERROR_TYPES, ErrorType

__all__ = ("STRATEGIES", "STRATEGY_CATEGORIES", "Perturbation", "Strategy", "strategies_for")

Strategy = Literal[
    "entity_confusion",
    "numerical_perturbation",
    "multi_hop_graft",
    "paraphrase",
    "presupposition_injection",
    "unanswerable_wrapping",
]
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
STRATEGY_CATEGORIES: dict[Strategy, tuple[ErrorType, ...]] = {
    "entity_confusion": ("entity_substitution",),
    "numerical_perturbation": ("numerical_exaggeration", "temporal_shift"),
    "multi_hop_graft": ("entity_substitution",),
    "paraphrase": ("negation_flip",),
    "presupposition_injection": ("scope_inflation",),
    "unanswerable_wrapping": ("fabrication",),
}
"""Which error categories each strategy produces (spec §2.4 table, open point O12)."""


def strategies_for(category: ErrorType) -> tuple[Strategy, ...]:
    """The strategies that produce ``category``, in :data:`STRATEGIES` order (the inverse of
    :data:`STRATEGY_CATEGORIES`)."""
    if category not in ERROR_TYPES:
        raise ValueError(f"unknown error category {category!r}; expected one of {', '.join(ERROR_TYPES)}")
    return tuple(s for s in STRATEGIES if category in STRATEGY_CATEGORIES[s])


class Perturbation(BaseModel):
    """One probe: the perturbed claim, the claim it came from, and the single edit that separates them.

    ``before`` and ``after`` are the edited text on each side, trimmed of surrounding spaces; ``before`` is ""
    for a pure insertion and ``after`` is "" for a pure deletion."""

    model_config = ConfigDict(frozen=True)

    claim: str
    original: str
    strategy: Strategy
    category: ErrorType
    before: str
    after: str
    method: Literal["rule", "llm"]

    @model_validator(mode="after")
    def _category_fits_strategy(self) -> Perturbation:
        if self.category not in STRATEGY_CATEGORIES[self.strategy]:
            raise ValueError(f"strategy {self.strategy!r} does not produce {self.category!r}")
        return self
