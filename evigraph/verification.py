"""One typed verdict for every verifier: what a host agent reads after any evigraph agent checked something.

Every agent maps its own result to a :class:`Verification` (``AgentSpec.verification`` names the function, in
the agent's ``verification.py``); the embedding forms (:mod:`evigraph.embed`: graph node, LangChain tool,
middleware, router) hand it to the host unchanged. What ``passed`` means is the agent's to say and its module
documents it; ``repair`` is an instruction a host can give its own model when the check failed.

The model is frozen and holds only JSON types -- the agent's own output model is kept dumped in ``detail``
(:meth:`Verification.detail_as` reads it back) -- so it round-trips through LangGraph checkpointers in strict
deserialisation mode, where only the state schema's own types are rebuilt.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = ("CheckedSpan", "CitedEvidence", "StepVerdict", "Verification", "failure_of")

Model = TypeVar("Model", bound=BaseModel)


class CitedEvidence(BaseModel):
    """One piece of evidence behind the verdict: a cited id (a corpus entry), a quote from the source, or both."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None = None
    text: str | None = None
    found: bool | None = None
    """For a quote: whether it was found in the source (``None`` when not checked)."""


class CheckedSpan(BaseModel):
    """A half-open character span ``[start, end)`` of the checked text the verifier flagged, with its text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str
    label: str | None = None


class StepVerdict(BaseModel):
    """One step's verdict (a step-level checker): its label and the repair action that goes with it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int = Field(ge=0)
    label: str | None
    """``None`` when the step could not be checked."""
    repair: str | None = None
    text: str = ""


class Verification(BaseModel):
    """The verdict of one verifier run (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    """The registered agent that checked (``veri-r1``, ``stepgap``, ``rlseek``, ``seva``, ``rag-zeval`` ...)."""
    passed: bool
    """The check passed, in the agent's documented sense (a failed run never passes)."""
    label: str | None = None
    """The agent's own verdict label (``SUPPORT``, ``Attributable``, ``no-gap`` ...); ``None`` when it gave none."""
    confidence: float | None = None
    evidence: list[CitedEvidence] = []
    spans: list[CheckedSpan] = []
    steps: list[StepVerdict] = []
    repair: str | None = None
    """What to tell the host's model when the check failed (``None`` when it passed)."""
    error: str | None = None
    """Why the run failed (a backend error, an exhausted budget); such a run has ``passed=False``."""
    hint: str | None = None
    """For the person who set the verifier up, not for the host's model: the setting that would help, e.g. weak-model
    mode when a reply could not be parsed (:func:`evigraph.generators.guidance.guidance_hint`)."""
    disagreement: str | None = None
    """One line saying where the verdict contradicts the agent's own reasoning (SEVA: an Attributable label over
    steps judged not supported; RLSeek: a flagged span that no reasoning step names); ``None`` when they agree or
    the agent gives no reasoning to compare. It names steps, offsets and labels (RLSeek also quotes the flagged piece
    of the checked response), never the model's prose. A verdict its own reasoning contradicts deserves less trust,
    whether or not it passed."""
    detail: dict[str, Any] = {}
    """The agent's output model, dumped as JSON."""

    def detail_as(self, model: type[Model]) -> Model:
        """``detail`` read back as the agent's output model."""
        return model.model_validate(self.detail)

    def summary(self) -> str:
        """A short verdict a model can read (a tool message's content): pass/fail, the label, the confidence and
        the repair instruction, on one or two lines. Texts from the checked material are not included, so the
        summary cannot carry forged markup from it."""
        verdict = "PASSED" if self.passed else "FAILED"
        parts = [f"{self.agent}: {verdict}"]
        if self.label is not None:
            parts.append(f"label={self.label}")
        if self.confidence is not None:
            parts.append(f"confidence={self.confidence:.2f}")
        if self.spans:
            parts.append(f"{len(self.spans)} flagged span(s)")
        flagged = [s for s in self.steps if s.label not in (None, "no-gap")]
        if self.steps:
            parts.append(f"{len(flagged)} of {len(self.steps)} step(s) flagged")
        if self.disagreement:
            # Flagged, not quoted: the line may hold the checked text (a flagged span of the response).
            parts.append("the verdict disagrees with its own reasoning")
        if self.error:
            parts.append(f"error: {self.error}")
        line = ", ".join(parts)
        return f"{line}\n{self.repair}" if self.repair and not self.passed else line


def failure_of(trajectory: Any) -> str | None:
    """Why a run failed (``"Type: message"``), from its trajectory's ``error``; ``None`` for a finished run. Every
    agent's mapping sets ``Verification.error`` with it, and a failed run does not pass."""
    error = getattr(trajectory, "error", None)
    return None if error is None else f"{error.type}: {error.message}"
