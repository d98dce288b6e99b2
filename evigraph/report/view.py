"""The view model of one record in an HTML run report: what an agent's ``report_view`` returns.

An agent turns one line of its ``predictions.jsonl`` into a :class:`RecordView`; the generic page
(:mod:`evigraph.report.page`) knows only these few shapes and draws them the same way for every agent:

- :class:`TextBlock` -- a text with highlighted character spans (a response with its hallucinated spans, a
  source with the quotes that were found in it);
- :class:`TranscriptBlock` -- a transcript cut into tagged pieces (``plan``, ``search``, ``information``, ``think``,
  ``answer`` ...), each a text with highlights (the cited entries inside a retrieved block);
- :class:`KeyValuesBlock` -- short facts (a verdict's confidence, the searches made);
- :class:`TableBlock` -- rows with an optional tone each (one row per step, claim or alignment).

Offsets of a :class:`Highlight` are Python string indices into the block's own text, half-open. Every string is
data: the page escapes all of it, so an agent passes model output and records through as they are.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = (
    "Block",
    "Highlight",
    "KeyValuesBlock",
    "RecordView",
    "TableBlock",
    "TextBlock",
    "Tone",
    "TranscriptBlock",
    "TranscriptPiece",
)

Tone = Literal["good", "bad", "warn", "info", "gold"]
"""How a highlight or a table row is coloured: ``good`` green (a cited entry, a supported claim), ``bad`` red (a
hallucinated span, a gap), ``warn`` amber, ``info`` blue (a quote found in a source), ``gold`` an underline (what
the gold answer marks, so it shows through a prediction's colour where both cover a span)."""

_MODEL = ConfigDict(frozen=True, extra="forbid")


class Highlight(BaseModel):
    """A half-open character span ``[start, end)`` of a text, with its tone and a short note (shown on hover)."""

    model_config = _MODEL

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    tone: Tone = "info"
    note: str | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Highlight:
        if self.end < self.start:
            raise ValueError(f"highlight end {self.end} is before its start {self.start}")
        return self


class _Highlighted(BaseModel):
    model_config = _MODEL

    text: str
    highlights: tuple[Highlight, ...] = ()

    @model_validator(mode="after")
    def _inside(self) -> _Highlighted:
        outside = [h for h in self.highlights if h.end > len(self.text)]
        if outside:
            raise ValueError(f"highlight [{outside[0].start}, {outside[0].end}) ends past the text ({len(self.text)})")
        return self


class _Block(BaseModel):
    model_config = _MODEL

    title: str
    open: bool = True
    """Shown expanded; ``False`` folds the block under its title (long, rarely needed text)."""


class TextBlock(_Block, _Highlighted):
    """A text with highlights; ``mono`` keeps its line breaks and spacing in a fixed-width font (JSON, code)."""

    kind: Literal["text"] = "text"
    mono: bool = False


class TranscriptPiece(_Highlighted):
    """One tagged piece of a transcript: ``tag`` names it (``think``, ``information``, ``text`` for untagged
    text), ``origin`` says who wrote it (``policy`` or ``environment``)."""

    tag: str
    origin: str = "policy"


class TranscriptBlock(_Block):
    """A transcript as tagged pieces, in order."""

    kind: Literal["segments"] = "segments"
    segments: tuple[TranscriptPiece, ...] = ()


class KeyValuesBlock(_Block):
    """Short ``(name, value)`` facts, in order."""

    kind: Literal["kv"] = "kv"
    items: tuple[tuple[str, str], ...] = ()


class TableBlock(_Block):
    """A table: ``rows`` of strings under ``columns``; ``tones[i]`` colours row ``i`` (``None``: plain)."""

    kind: Literal["table"] = "table"
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...] = ()
    tones: tuple[Tone | None, ...] = ()

    @model_validator(mode="after")
    def _shape(self) -> TableBlock:
        wide = next((i for i, row in enumerate(self.rows) if len(row) != len(self.columns)), None)
        if wide is not None:
            cells = len(self.rows[wide])
            raise ValueError(f"table {self.title!r}: row {wide} has {cells} cells, not {len(self.columns)}")
        if self.tones and len(self.tones) != len(self.rows):
            raise ValueError(f"table {self.title!r}: {len(self.tones)} tones for {len(self.rows)} rows")
        return self


Block = Annotated[TextBlock | TranscriptBlock | KeyValuesBlock | TableBlock, Field(discriminator="kind")]
"""Any block of a record view."""


class RecordView(BaseModel):
    """One record of a run as the report shows it.

    ``facets`` are the record's values for the page's filters, by filter name; a record may have several values
    of one filter (each step label of a StepGap trace). The usual names are ``label`` (the predicted label or
    labels), ``gold label`` and ``error type``; the page adds ``correct`` (from :attr:`correct`) and ``run``
    (``ok`` or ``failed``) itself.
    """

    model_config = _MODEL

    id: str
    verdict: str
    """What the agent concluded, in one line."""
    gold: str | None = None
    """The gold answer in one line (``None``: the record has none)."""
    correct: bool | None = None
    """Whether the verdict matches the gold (``None``: not scored)."""
    error: str | None = None
    """Why the run failed, when it did."""
    facets: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    input: tuple[Block, ...] = ()
    """What the agent was given."""
    trajectory: tuple[Block, ...] = ()
    """What it did: its transcript, steps, checks."""
    scores: dict[str, float] = Field(default_factory=dict)
    """The run's reward components."""
