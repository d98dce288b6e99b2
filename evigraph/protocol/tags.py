"""Tag protocols: one declaration renders the prompt's format instructions, parses model text, and feeds the
format reward (and the decoding regex, the stop strings and the escaping of environment text).

Parsing is **total**: :meth:`TagProtocol.parse` never raises on any string. A *tag token* is ``<name>`` or
``</name>`` with ``name`` matching ``[A-Za-z][A-Za-z0-9_-]*``; anything else (``< think>``, ``<br/>``,
``x < y``) is plain text. Tokens are read left to right:

- an undeclared name is an ``unknown_tag`` issue and stays text;
- a declared opening tag opens a block that ends at the **first** matching closing tag after it (the
  non-greedy ``<t>(.*?)</t>`` reading the specs use); with none, it is ``unclosed_tag`` and stays text;
- a closing tag with no open block is ``stray_close``;
- inside a block, a tag the block's :attr:`TagSpec.may_contain` does not list is ``nested_tag`` and stays
  part of the content; allowed children are parsed recursively inside the content;
- a tag written by the wrong party (``<information>`` in a policy turn) still forms a block, so rules can
  point at it, and adds ``environment_tag_in_policy`` (or ``policy_tag_in_environment``);
- more blocks of a tag than its ``max_count`` is ``too_many`` (per text, or per transcript).

Free text is whatever lies outside top-level blocks (:attr:`ParsedText.free_spans`); only space, tab, CR and
LF count as whitespace there, the same set the decoding regex allows between blocks.

Each method declares its protocol next to its agent (``evigraph.agents.<method>.protocol``); method-specific
rules (Veri-R1 F1–F8, RLSeek P1–P5) are functions over :class:`ParsedText` / :class:`ParsedTranscript`. This
module knows nothing about them.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError
from evigraph.protocol.escaping import DEFAULT_GUARDS, EscapedText, Guards, escape_untrusted
from evigraph.trajectory import Segment

__all__ = (
    "WHITESPACE",
    "Block",
    "FormatIssue",
    "IssueCode",
    "ParsedText",
    "ParsedTranscript",
    "TagProtocol",
    "TagSpec",
    "Writer",
)

Writer = Literal["policy", "environment"]
"""Who may write a tag: the policy model or the environment (tool output, notes)."""

IssueCode = Literal[
    "unknown_tag",
    "unclosed_tag",
    "stray_close",
    "nested_tag",
    "environment_tag_in_policy",
    "policy_tag_in_environment",
    "too_many",
    "step_number_gap",
    "duplicate_step_number",
]
"""Every typed format problem of the protocol layer (the last two come from :mod:`~evigraph.protocol.steps`)."""

WHITESPACE = " \t\r\n"
"""What counts as whitespace between blocks (explicit, so the decoding regex agrees on every engine)."""

_WRONG_WRITER: dict[Writer, IssueCode] = {
    "environment": "environment_tag_in_policy",
    "policy": "policy_tag_in_environment",
}
"""The issue for a tag found in the other party's text, keyed by the tag's writer."""

_TAG_TOKEN = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9_-]*)>")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class TagSpec:
    """One declared tag.

    Example:
        ``TagSpec("search", purpose="one search query", max_count=3)``
    """

    name: str
    writer: Writer = field(default="policy", kw_only=True)
    purpose: str = field(kw_only=True)
    """What the tag is for, in words the model reads (rendered by :meth:`TagProtocol.instructions`)."""
    max_count: int | None = field(default=None, kw_only=True)
    """Most blocks of this tag per parsed text or transcript; ``None`` = unlimited."""
    may_contain: frozenset[str] = field(default=frozenset(), kw_only=True)
    """Declared tags allowed inside this one (parsed as nested blocks)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "may_contain", frozenset(self.may_contain))  # accept any iterable, stay hashable
        if self.max_count is not None and self.max_count < 0:
            raise ConfigError(f"<{self.name}>: max_count must be >= 0 or None, got {self.max_count}")


class FormatIssue(BaseModel):
    """One format problem: a value, never an exception."""

    model_config = ConfigDict(frozen=True)

    code: IssueCode
    message: str
    position: int
    """Character offset in the parsed text (the segment's text for transcripts)."""
    tag: str | None = None
    segment_index: int | None = None


class Block(BaseModel):
    """One ``<tag>content</tag>`` block; offsets are half-open ``[start, end)`` into the parsed text."""

    model_config = ConfigDict(frozen=True)

    tag: str
    content: str
    start: int
    end: int
    content_start: int
    content_end: int
    depth: int = 0
    """0 at top level, 1 inside a parent block's content, ..."""
    origin: Writer = "policy"
    """Who wrote the text the block was parsed from."""
    segment_index: int | None = None
    """Index of the transcript segment (``None`` for :meth:`TagProtocol.parse`)."""


class ParsedText(BaseModel):
    """The parse of one text (one policy or environment segment)."""

    model_config = ConfigDict(frozen=True)

    text: str
    writer: Writer = "policy"
    segment_index: int | None = None
    blocks: tuple[Block, ...] = ()
    """Every block, nested ones included, ordered by ``start``."""
    free_spans: tuple[tuple[int, int], ...] = ()
    """Half-open spans outside top-level blocks (whitespace-only spans included)."""
    issues: tuple[FormatIssue, ...] = ()

    def blocks_of(self, tag: str) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.tag == tag)

    @property
    def has_free_text(self) -> bool:
        """Whether anything but whitespace lies outside the top-level blocks."""
        return any(self.text[s:e].strip(WHITESPACE) for s, e in self.free_spans)


class ParsedTranscript(BaseModel):
    """The parses of a transcript's policy and environment segments (prompt segments are not parsed)."""

    model_config = ConfigDict(frozen=True)

    parts: tuple[ParsedText, ...] = ()
    issues: tuple[FormatIssue, ...] = ()
    """Every part's issues plus transcript-wide ``too_many``."""

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple(b for part in self.parts for b in part.blocks)

    def blocks_of(self, tag: str, *, origin: Writer | None = None) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.tag == tag and (origin is None or b.origin == origin))


@dataclass(frozen=True)
class TagProtocol:
    """A named set of tags plus the guards that escape untrusted text rendered under them.

    Args:
        name: protocol name (for messages).
        tags: the declared tags, in the order the instructions list them.
        guards: escaping rules; must include a guard on ``<`` (what makes forged tags impossible).
        allow_free_text: whether policy text may hold non-whitespace outside blocks.

    Raises:
        ConfigError: duplicate or malformed names, ``may_contain`` naming an undeclared tag, a tag that can
            (transitively) contain itself, or guards that leave ``<`` alone.

    Example:
        >>> tags = (TagSpec("search", purpose="a query"), TagSpec("information", writer="environment", purpose="hits"))
        >>> protocol = TagProtocol("demo", tags)
        >>> parsed = protocol.parse("<search>q</search><information>x</information>")
        >>> [(b.tag, b.content) for b in parsed.blocks], [i.code for i in parsed.issues]
        ([('search', 'q'), ('information', 'x')], ['environment_tag_in_policy'])
        >>> protocol.format_ok(parsed)
        False
    """

    name: str
    tags: tuple[TagSpec, ...]
    guards: Guards = field(default=DEFAULT_GUARDS, kw_only=True)
    allow_free_text: bool = field(default=False, kw_only=True)
    _specs: dict[str, TagSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        specs = {spec.name: spec for spec in self.tags}
        if len(specs) != len(self.tags):
            raise ConfigError(f"protocol {self.name!r}: tag names must be unique, got {[s.name for s in self.tags]}")
        for spec in self.tags:
            if not _NAME.fullmatch(spec.name):
                raise ConfigError(f"protocol {self.name!r}: tag name {spec.name!r} must match {_NAME.pattern}")
            if unknown := spec.may_contain - specs.keys():
                raise ConfigError(f"protocol {self.name!r}: <{spec.name}> may_contain undeclared {sorted(unknown)}")
            if spec.name in _descendants(spec.name, specs):
                raise ConfigError(f"protocol {self.name!r}: <{spec.name}> can contain itself")
        if "<" not in self.guards.triggers:
            raise ConfigError(f"protocol {self.name!r}: guards must neutralise '<', got {self.guards.triggers}")
        object.__setattr__(self, "_specs", specs)

    def spec(self, tag: str) -> TagSpec:
        """The declaration of ``tag``; raises :class:`ConfigError` for an undeclared name."""
        if tag not in self._specs:
            raise ConfigError(f"protocol {self.name!r} has no tag {tag!r}; declared: {sorted(self._specs)}")
        return self._specs[tag]

    def instructions(self) -> str:
        """The format instructions for the prompt: every tag, who writes it, and what it is for."""
        lines = ["Write your reply with these tags:"]
        lines += [_describe(spec) for spec in self.tags if spec.writer == "policy"]
        environment = [spec for spec in self.tags if spec.writer == "environment"]
        if environment:
            lines.append("The system adds these tags itself; never write them:")
            lines += [_describe(spec) for spec in environment]
        nesting = " unless its line above says it may" if any(s.may_contain for s in self.tags) else ""
        lines.append(f"Close every tag you open, and never put a tag inside another{nesting}.")
        if not self.allow_free_text:
            lines.append("Write nothing outside the tags.")
        return "\n".join(lines)

    def render_block(self, tag: str, content: str) -> str:
        """``<tag>content</tag>``.

        Raises:
            ConfigError: ``tag`` is undeclared, or ``content`` holds tag tokens that would change the parse
                (escape untrusted content with :meth:`escape` first).
        """
        self.spec(tag)
        rendered = f"<{tag}>{content}</{tag}>"
        parsed = self._parse(rendered, writer=self._specs[tag].writer, segment_index=None, count=False)
        top = [b for b in parsed.blocks if b.depth == 0]
        if parsed.issues or len(top) != 1 or top[0].end != len(rendered):
            raise ConfigError(f"content for <{tag}> must not contain tags that change the parse: {content[:80]!r}")
        return rendered

    def escape(self, text: str) -> EscapedText:
        """Escape untrusted text with this protocol's guards."""
        return escape_untrusted(text, self.guards)

    def stop_strings(self, *tags: str) -> tuple[str, ...]:
        """The closing tags of ``tags``, for use as stop strings (e.g. ``</search>``, ``</answer>``)."""
        return tuple(f"</{self.spec(tag).name}>" for tag in tags)

    def parse(self, text: str, *, writer: Writer = "policy") -> ParsedText:
        """Parse ``text`` written by ``writer``; never raises."""
        return self._parse(text, writer=writer, segment_index=None, count=True)

    def parse_transcript(self, segments: Sequence[Segment]) -> ParsedTranscript:
        """Parse each policy and environment segment on its own; ``max_count`` applies to the whole transcript."""
        parts = tuple(
            self._parse(seg.text, writer=seg.origin, segment_index=i, count=False)
            for i, seg in enumerate(segments)
            if seg.origin != "prompt"
        )
        blocks = [b for part in parts for b in part.blocks]
        issues = [issue for part in parts for issue in part.issues]
        return ParsedTranscript(parts=parts, issues=(*issues, *self._count_issues(blocks)))

    def format_ok(self, parsed: ParsedText | ParsedTranscript) -> bool:
        """The generic format check: no issue, and no free text in policy text unless the protocol allows it.

        For a transcript only policy segments are charged: an issue in an environment segment is the
        environment's bug (unescaped text), so it stays in ``issues`` but does not cost the policy.
        """
        if isinstance(parsed, ParsedText):
            parts, charged = (parsed,), parsed.issues
        else:
            parts = parsed.parts
            policy_indices = {p.segment_index for p in parts if p.writer == "policy"}
            charged = tuple(i for i in parsed.issues if i.segment_index in policy_indices)
        free_text = any(p.has_free_text for p in parts if p.writer == "policy")
        return not charged and (self.allow_free_text or not free_text)

    def turn_regex(self, *, allowed: Sequence[str]) -> str:
        """A regular expression for one well-formed policy turn of ``allowed`` top-level blocks.

        It matches exactly the texts whose :meth:`parse` has at least one block, only ``allowed`` tags at the
        top level, no issue other than ``too_many`` (counts are not expressed), and free text only where the
        protocol allows it. It uses no look-around or back-references, so constrained-decoding engines
        (lm-format-enforcer, vLLM) accept it.

        Raises:
            ConfigError: ``allowed`` is empty or names an undeclared or environment tag.
        """
        if not allowed:
            raise ConfigError("turn_regex needs at least one allowed tag")
        for tag in allowed:
            if self.spec(tag).writer != "policy":
                raise ConfigError(f"<{tag}> is written by the environment; a policy turn may not contain it")
        block = "(?:" + "|".join(self._block_regex(tag) for tag in allowed) + ")"
        free = _no_tags(()) if self.allow_free_text else f"[{_WS_CLASS}]*"
        return f"(?:{free}{block})+{free}"

    def _block_regex(self, tag: str) -> str:
        children = [
            self._block_regex(c) for c in sorted(self._specs[tag].may_contain) if self._specs[c].writer == "policy"
        ]
        return re.escape(f"<{tag}>") + _no_tags(tuple(children)) + re.escape(f"</{tag}>")

    def _parse(self, text: str, *, writer: Writer, segment_index: int | None, count: bool) -> ParsedText:
        tokens = [(m.start(), m.end(), m.group(2), m.group(1) == "/") for m in _TAG_TOKEN.finditer(text)]
        closes: dict[str, list[int]] = {}
        for i, (_, _, name, is_close) in enumerate(tokens):
            if is_close:
                closes.setdefault(name, []).append(i)
        blocks: list[Block] = []
        issues: list[FormatIssue] = []

        def issue(code: IssueCode, message: str, position: int, tag: str) -> None:
            issues.append(
                FormatIssue(code=code, message=message, position=position, tag=tag, segment_index=segment_index)
            )

        def walk(i: int, stop: int, parent: TagSpec | None, depth: int) -> None:
            while i < stop:
                start, end, name, is_close = tokens[i]
                spec = self._specs.get(name)
                token = f"<{'/' if is_close else ''}{name}>"
                i += 1
                if spec is None:
                    issue("unknown_tag", f"{token} is not a tag of {self.name}", start, name)
                    continue
                if parent is not None and name not in parent.may_contain:
                    issue("nested_tag", f"{token} inside <{parent.name}>", start, name)
                    continue
                if is_close:
                    issue("stray_close", f"{token} closes no open block", start, name)
                    continue
                if spec.writer != writer:
                    message = f"{token} is written by the {spec.writer}, found in {writer} text"
                    issue(_WRONG_WRITER[spec.writer], message, start, name)
                close = _next_close(closes.get(name, []), i - 1, stop)
                if close is None:
                    issue("unclosed_tag", f"{token} is never closed", start, name)
                    continue
                close_start, close_end = tokens[close][0], tokens[close][1]
                blocks.append(
                    Block(
                        tag=name,
                        content=text[end:close_start],
                        start=start,
                        end=close_end,
                        content_start=end,
                        content_end=close_start,
                        depth=depth,
                        origin=writer,
                        segment_index=segment_index,
                    )
                )
                walk(i, close, spec, depth + 1)
                i = close + 1

        walk(0, len(tokens), None, 0)
        if count:
            issues += self._count_issues(blocks)
        free, position = [], 0
        for b in blocks:
            if b.depth == 0:
                if b.start > position:
                    free.append((position, b.start))
                position = b.end
        if position < len(text):
            free.append((position, len(text)))
        return ParsedText(
            text=text,
            writer=writer,
            segment_index=segment_index,
            blocks=tuple(blocks),
            free_spans=tuple(free),
            issues=tuple(issues),
        )

    def _count_issues(self, blocks: Sequence[Block]) -> list[FormatIssue]:
        seen: dict[str, int] = {}
        issues = []
        for b in blocks:
            seen[b.tag] = seen.get(b.tag, 0) + 1
            limit = self._specs[b.tag].max_count
            if limit is not None and seen[b.tag] == limit + 1:
                message = f"more than {limit} <{b.tag}> block(s)"
                issues.append(
                    FormatIssue(
                        code="too_many", message=message, position=b.start, tag=b.tag, segment_index=b.segment_index
                    )
                )
        return issues


def _next_close(indices: list[int], after: int, stop: int) -> int | None:
    k = bisect.bisect_right(indices, after)
    return indices[k] if k < len(indices) and indices[k] < stop else None


def _descendants(name: str, specs: dict[str, TagSpec]) -> set[str]:
    found: set[str] = set()
    frontier = list(specs[name].may_contain)
    while frontier:
        child = frontier.pop()
        if child not in found and child in specs:
            found.add(child)
            frontier.extend(specs[child].may_contain)
    return found


def _describe(spec: TagSpec) -> str:
    notes = []
    if spec.max_count is not None:
        notes.append("at most once" if spec.max_count == 1 else f"at most {spec.max_count} times")
    if spec.may_contain:
        notes.append("may contain " + ", ".join(f"<{c}>" for c in sorted(spec.may_contain)))
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return f"- <{spec.name}>...</{spec.name}>: {spec.purpose}{suffix}"


# Regex building blocks for "text with no tag token". After a '<' the text may be inside a would-be token
# ('<', '</', '<name', '</name'); it leaves that state on a character that cannot continue a token (a
# "pending" run may also end right before another '<', which starts a new one). No look-around needed.
_WS_CLASS = r" \t\r\n"
_PENDING = r"<(?:/?[A-Za-z][A-Za-z0-9_-]*|/)?"
_EXIT = r"<(?:[^</A-Za-z]|/[^<A-Za-z]|/?[A-Za-z][A-Za-z0-9_-]*[^<>A-Za-z0-9_-])"


def _no_tags(children: tuple[str, ...]) -> str:
    exits = "|".join((_EXIT, *children))
    return f"(?:[^<]|(?:{_PENDING})*(?:{exits}))*(?:{_PENDING})*"
