"""``## Step N`` blocks in Markdown reasoning (specs/rlseek.md §2.2–2.3), parsed totally.

A step starts at a line matching ``^##[ \\t]*Step[ \\t]*([0-9]+)`` and runs to the next line that starts a
step or a non-step ``## `` section (e.g. ``## Final Output``), or to the end of the text. Non-step sections
are kept apart in :attr:`ParsedSteps.sections`; text before the first header is the preamble. With no step
header at all the whole text is one implicit step (RLSeek P3: ``L = 1``).

Tags inside each step go through the caller's :class:`~evigraph.protocol.tags.TagProtocol` (RLSeek's
quote protocol, for instance), so an unmatched ``<quote>`` or ``</quote>`` is an
``unclosed_tag`` / ``stray_close`` issue on that step. Numbering problems are ``step_number_gap`` and
``duplicate_step_number`` issues. Rules such as RLSeek P3–P4 are functions over :class:`ParsedSteps`.

Pass only the reasoning region (the text before the extracted answer, e.g. ``completion[:answer_start]``):
a prefix keeps every offset valid in the full completion.

Deviation from the spec's regex: the header uses ``[ \\t]`` where the spec writes ``\\s``, so a header never
spans two lines (``##`` on one line and ``Step 1`` on the next is not a header).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from evigraph.protocol.tags import Block, FormatIssue, IssueCode, TagProtocol

__all__ = ("ParsedSteps", "Section", "StepBlock", "parse_steps")

_HEADING = re.compile(r"^##(?:[ \t]*Step[ \t]*([0-9]+)| )", re.MULTILINE)
_MAX_NUMBER_DIGITS = 18
"""Longer digit runs get ``number=None``: no real step number, and int() of huge strings can raise."""


class StepBlock(BaseModel):
    """One step; offsets are half-open into the parsed text."""

    model_config = ConfigDict(frozen=True)

    index: int
    """Position among the steps, from 0."""
    number: int | None
    """The number as written (``None`` for the implicit step or an absurdly long number)."""
    number_text: str
    """The digits exactly as written (``""`` for the implicit step)."""
    header: str
    """The header line without its newline (``""`` for the implicit step)."""
    start: int
    body_start: int
    """Where the body starts: after the header's newline."""
    end: int
    body: str
    blocks: tuple[Block, ...] = ()
    """Tag blocks inside the step (header and body), offsets into the whole text."""
    issues: tuple[FormatIssue, ...] = ()
    implicit: bool = False
    """True when the text had no step header and this step is the whole text."""

    @property
    def quotes(self) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.tag == "quote")


class Section(BaseModel):
    """A non-step ``## ...`` section (e.g. ``## Final Output``)."""

    model_config = ConfigDict(frozen=True)

    header: str
    start: int
    body_start: int
    end: int
    body: str


class ParsedSteps(BaseModel):
    """The steps, non-step sections and preamble of one text."""

    model_config = ConfigDict(frozen=True)

    text: str
    steps: tuple[StepBlock, ...]
    """At least one step (the implicit one when there is no header)."""
    sections: tuple[Section, ...] = ()
    preamble_end: int = 0
    """``text[:preamble_end]`` comes before the first heading."""

    @property
    def implicit(self) -> bool:
        """Whether the text had no step header."""
        return self.steps[0].implicit

    @property
    def issues(self) -> tuple[FormatIssue, ...]:
        return tuple(issue for step in self.steps for issue in step.issues)


def parse_steps(text: str, *, protocol: TagProtocol) -> ParsedSteps:
    """Split ``text`` into ``## Step N`` blocks and non-step sections; never raises.

    Args:
        text: the reasoning region of a completion.
        protocol: the tags read inside each step (RLSeek: its quote protocol).

    Returns:
        The steps (each with its tag blocks and issues), the sections and the preamble's end.

    Example:
        >>> from evigraph.protocol.tags import TagProtocol, TagSpec
        >>> quotes = TagProtocol("quotes", (TagSpec("quote", purpose="copied text"),), allow_free_text=True)
        >>> parsed = parse_steps("## Step 1: check\\n<quote>a</quote>\\n## Final Output\\n[]", protocol=quotes)
        >>> [(s.number, [q.content for q in s.quotes]) for s in parsed.steps], parsed.sections[0].header
        ([(1, ['a'])], '## Final Output')
    """
    headings = list(_HEADING.finditer(text))
    if not any(m.group(1) is not None for m in headings):
        return ParsedSteps(text=text, steps=(_step(text, 0, 0, len(text), None, protocol),))
    bounds = [m.start() for m in headings] + [len(text)]
    steps: list[StepBlock] = []
    sections: list[Section] = []
    for k, match in enumerate(headings):
        start, end = bounds[k], bounds[k + 1]
        if match.group(1) is None:
            header, body_start = _header(text, start, end)
            sections.append(
                Section(header=header, start=start, body_start=body_start, end=end, body=text[body_start:end])
            )
        else:
            steps.append(_step(text, len(steps), start, end, match.group(1), protocol))
    return ParsedSteps(text=text, steps=_numbered(steps), sections=tuple(sections), preamble_end=bounds[0])


def _header(text: str, start: int, end: int) -> tuple[str, int]:
    newline = text.find("\n", start, end)
    line_end = end if newline < 0 else newline
    return text[start:line_end], (end if newline < 0 else newline + 1)


def _step(text: str, index: int, start: int, end: int, digits: str | None, protocol: TagProtocol) -> StepBlock:
    header, body_start = _header(text, start, end) if digits is not None else ("", start)
    parsed = protocol.parse(text[start:end])
    # The step is parsed on its own (tag tokens never cross a line start); shift offsets back into ``text``.
    blocks = tuple(
        b.model_copy(
            update={
                "start": b.start + start,
                "end": b.end + start,
                "content_start": b.content_start + start,
                "content_end": b.content_end + start,
            }
        )
        for b in parsed.blocks
    )
    issues = tuple(i.model_copy(update={"position": i.position + start}) for i in parsed.issues)
    number = int(digits) if digits is not None and len(digits) <= _MAX_NUMBER_DIGITS else None
    return StepBlock(
        index=index,
        number=number,
        number_text=digits or "",
        header=header,
        start=start,
        body_start=body_start,
        end=end,
        body=text[body_start:end],
        blocks=blocks,
        issues=issues,
        implicit=digits is None,
    )


def _numbered(steps: list[StepBlock]) -> tuple[StepBlock, ...]:
    """Add numbering issues: steps should count 1, 2, 3, ... with no repeats."""
    seen: set[int] = set()
    expected = 1
    result = []
    for step in steps:
        extra: list[FormatIssue] = []
        if step.number is not None and step.number in seen:
            extra.append(_issue("duplicate_step_number", f"step number {step.number} was already used", step))
        elif step.number != expected:
            extra.append(_issue("step_number_gap", f"expected step {expected}, found {step.number_text}", step))
        if step.number is not None:
            seen.add(step.number)
            expected = step.number + 1
        result.append(step.model_copy(update={"issues": (*step.issues, *extra)}) if extra else step)
    return tuple(result)


def _issue(code: IssueCode, message: str, step: StepBlock) -> FormatIssue:
    return FormatIssue(code=code, message=message, position=step.start)
