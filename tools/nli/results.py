"""NLI results and the decision rule (specs/stepgap.md §2.5, §9 #6): pure functions, no torch.

Every engine turns its scores into three probabilities in the order entailment / neutral / contradiction and
lets :func:`nli_decision` pick the label, so the thresholds live in one place.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ("NLI_LABELS", "NLILabel", "NLIResult", "nli_decision", "render_nli_result", "softmax")

NLILabel = Literal["ENTAILMENT", "NEUTRAL", "CONTRADICTION"]
"""The three NLI labels, as Stage D/E read them."""
NLI_LABELS: tuple[NLILabel, NLILabel, NLILabel] = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")
"""The canonical order (E, N, C) of probability triples throughout this package."""


def softmax(scores: Sequence[float]) -> list[float]:
    """Probabilities from logits or log-probabilities (max-shifted, so large magnitudes do not overflow).

    Example:
        >>> [round(p, 4) for p in softmax([-2.1, 5.3, -1.0])]
        [0.0006, 0.9976, 0.0018]
    """
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


def nli_decision(p_entail: float, p_neutral: float, p_contra: float) -> NLILabel:
    """The label for one softmax triple: ENTAILMENT if ``p_entail ≥ 0.5`` and it is the unique maximum,
    CONTRADICTION if ``p_contra ≥ 0.5`` and it is the unique maximum, else NEUTRAL (between thresholds, ties).

    Args:
        p_entail, p_neutral, p_contra: softmax probabilities, each in [0, 1].

    Returns:
        The label Stage D/E act on.

    Example (the spec's table, §2.5 N-1 … N-7):
        >>> nli_decision(0.80, 0.15, 0.05)  # N-1
        'ENTAILMENT'
        >>> nli_decision(0.45, 0.20, 0.35)  # N-2: argmax E but below 0.5
        'NEUTRAL'
        >>> nli_decision(0.10, 0.25, 0.65)  # N-3
        'CONTRADICTION'
        >>> nli_decision(0.50, 0.00, 0.50)  # N-5: a tie at the threshold
        'NEUTRAL'
        >>> nli_decision(0.50, 0.30, 0.20)  # N-7: ≥ 0.5 and the unique maximum
        'ENTAILMENT'
    """
    if p_entail >= 0.5 and p_entail > p_neutral and p_entail > p_contra:
        return "ENTAILMENT"
    if p_contra >= 0.5 and p_contra > p_neutral and p_contra > p_entail:
        return "CONTRADICTION"
    return "NEUTRAL"


class NLIResult(BaseModel):
    """One (premise, hypothesis) verdict."""

    model_config = ConfigDict(frozen=True)

    label: NLILabel
    p_entailment: float = Field(ge=0.0, le=1.0)
    p_neutral: float = Field(ge=0.0, le=1.0)
    p_contradiction: float = Field(ge=0.0, le=1.0)
    engine: str
    """Which NLI ran: ``cross-encoder:<checkpoint dir>`` or ``generator:<generator name>`` (the weaker
    fallback, see :mod:`evigraph.tools.nli`)."""

    @classmethod
    def from_probabilities(cls, probabilities: Sequence[float], engine: str) -> NLIResult:
        """The result for an (E, N, C) probability triple, labelled by :func:`nli_decision`."""
        p_e, p_n, p_c = (float(p) for p in probabilities)
        label = nli_decision(p_e, p_n, p_c)
        return cls(label=label, p_entailment=p_e, p_neutral=p_n, p_contradiction=p_c, engine=engine)

    @property
    def confidence(self) -> float:
        """The probability of the chosen label (an NLI stage's confidence, specs/stepgap.md §2.7)."""
        return {"ENTAILMENT": self.p_entailment, "NEUTRAL": self.p_neutral, "CONTRADICTION": self.p_contradiction}[
            self.label
        ]


def render_nli_result(result: NLIResult) -> str:
    """The label and probabilities as one line of text (the LangChain tool's output, a student's input).

    Example:
        >>> render_nli_result(NLIResult.from_probabilities([0.8, 0.15, 0.05], "cross-encoder:demo"))
        'ENTAILMENT (p_entailment=0.800, p_neutral=0.150, p_contradiction=0.050)'
    """
    return (
        f"{result.label} (p_entailment={result.p_entailment:.3f}, p_neutral={result.p_neutral:.3f}, "
        f"p_contradiction={result.p_contradiction:.3f})"
    )
