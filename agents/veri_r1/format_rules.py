"""The Veri-R1 format reward's checklist F1–F8 (spec §3.1) over a transcript, and the splitter that turns a flat
response string back into policy and environment segments.

Rules are judged on policy segments. Environment segments count only through where they sit: an
``<information>`` block is legitimate only in an environment segment that directly follows a policy segment
ending in ``</search>``, and the model's next output must open with ``<think>``. Environment notes without an
information block ("no searches left", "invalid action") are neutral. Prompt segments are ignored.

F4 and F7 can be switched off (spec §9 #5). ``offline`` adapts the list to the offline variant (evidence in the
prompt, one turn): no plan is required, searching is not allowed, and the single output must open with
``<think>``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evigraph.agents.veri_r1.parsing import parse_answer_body
from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL
from evigraph.protocol.tags import WHITESPACE, Block, ParsedText
from evigraph.trajectory import EOS_MARKER, Segment

__all__ = (
    "FormatOptions",
    "FormatReport",
    "FormatRule",
    "check_format",
    "check_response_format",
    "information_ids",
    "split_response",
)

FormatRule = Literal["F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8"]

MAX_SEARCHES = 3


_TAG_TOKEN = re.compile(r"</?[A-Za-z][A-Za-z0-9_-]*>")
_INFORMATION_AFTER_SEARCH = re.compile(r"</search>([ \t\r\n]*)<information>")
_ENTRY_ID = re.compile(r"^[ \t]*\[\[([^\[\]\n]+?)\]\]:", re.MULTILINE)
_STRUCTURAL = {"too_many", "environment_tag_in_policy"}
"""Protocol issues reported under F1/F2/F5 (counts) and F3 (forged information) instead of F6."""


class FormatOptions(BaseModel):
    """Switches of the checklist (spec §9 #5)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    require_think_after_information: bool = True
    """F4: the first output after every information block opens with ``<think>``."""
    forbid_free_text: bool = True
    """F7: nothing but whitespace outside tags."""
    offline: bool = False
    """Offline variant: evidence sits in the prompt, so no plan is required and no search is allowed."""
    max_searches: int = MAX_SEARCHES


class FormatReport(BaseModel):
    """The verdict: ``ok`` iff no rule failed; one message per problem found."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    failed: tuple[FormatRule, ...] = ()
    """Failed rules, sorted and unique."""
    messages: tuple[str, ...] = ()


def _checked_segments(segments: Sequence[Segment]) -> list[Segment]:
    # A policy turn that ended on the EOS token carries that token's decoded text (the segment text is the
    # decoding of its ids, EOS included); it is not something the model wrote inside the protocol.
    return [s.model_copy(update={"text": s.reply}) if s.origin == "policy" else s for s in segments]


def check_format(segments: Sequence[Segment], options: FormatOptions | None = None) -> FormatReport:
    """Judge a transcript against F1–F8 (spec §3.1). Never raises on any segment text."""
    options = options or FormatOptions()
    checked = _checked_segments(segments)
    parsed = VERI_R1_PROTOCOL.parse_transcript(checked)
    policy = [p for p in parsed.parts if p.writer == "policy"]
    problems: list[tuple[FormatRule, str]] = []
    top = [b for p in policy for b in p.blocks if b.depth == 0]

    problems += _plan_rule(top, options)
    problems += _search_rule(top, options)
    problems += _information_rule(checked, parsed.parts)
    if options.require_think_after_information:
        problems += _think_rule(checked, parsed.parts, options)
    answer_problems, last_answer = _answer_rule(policy, top)
    problems += answer_problems
    for part in policy:
        for issue in part.issues:
            if issue.code not in _STRUCTURAL and issue.tag != "information":
                problems.append(("F6", f"segment {part.segment_index}: {issue.message}"))
    if options.forbid_free_text:
        for part in policy:
            if part.has_free_text:
                problems.append(("F7", f"segment {part.segment_index}: text outside the tags"))
    if last_answer is not None:
        body = parse_answer_body(last_answer.content)
        if not body.label_ok:
            problems.append(("F8", "the answer has no valid 'Label: SUPPORT | REFUTE | NOT ENOUGH INFO' line"))
        if not body.evidence_ok:
            problems.append(("F8", "the answer has no 'Evidence:' line made only of [[id]] entries"))
        if body.label_ok and body.evidence_ok and not body.body_ok:
            problems.append(("F8", "the answer holds more than the label and evidence lines"))

    failed = tuple(sorted({rule for rule, _ in problems}))
    return FormatReport(ok=not failed, failed=failed, messages=tuple(message for _, message in problems))


def _plan_rule(top: list[Block], options: FormatOptions) -> list[tuple[FormatRule, str]]:
    plans = [b for b in top if b.tag == "plan"]
    if options.offline:
        return [("F1", "more than one <plan> block")] if len(plans) > 1 else []
    if len(plans) != 1:
        return [("F1", f"expected exactly one <plan> block, found {len(plans)}")]
    if top[0].tag != "plan":
        return [("F1", f"<{top[0].tag}> comes before <plan>")]
    return []


def _search_rule(top: list[Block], options: FormatOptions) -> list[tuple[FormatRule, str]]:
    searches = [b for b in top if b.tag == "search"]
    problems: list[tuple[FormatRule, str]] = []
    if options.offline and searches:
        problems.append(("F2", "offline runs have no search tool, but the model wrote <search>"))
    elif len(searches) > options.max_searches:
        problems.append(("F2", f"{len(searches)} searches, at most {options.max_searches} allowed"))
    problems += [("F2", "a <search> block has an empty query") for b in searches if not b.content.strip(WHITESPACE)]
    return problems


def _previous_non_prompt(segments: Sequence[Segment], index: int) -> Segment | None:
    for segment in reversed(segments[:index]):
        if segment.origin != "prompt":
            return segment
    return None


def _information_rule(segments: Sequence[Segment], parts: Sequence[ParsedText]) -> list[tuple[FormatRule, str]]:
    problems: list[tuple[FormatRule, str]] = []
    for part in parts:
        where = f"segment {part.segment_index}"
        if part.writer == "policy":
            if any(i.tag == "information" for i in part.issues) or part.blocks_of("information"):
                problems.append(("F3", f"{where}: the model wrote an <information> tag itself"))
            continue
        blocks = [b for b in part.blocks_of("information") if b.depth == 0]
        if not blocks:
            continue
        assert part.segment_index is not None
        before = _previous_non_prompt(segments, part.segment_index)
        follows_search = (
            before is not None and before.origin == "policy" and before.text.rstrip(WHITESPACE).endswith("</search>")
        )
        if not follows_search or part.text[: blocks[0].start].strip(WHITESPACE):
            problems.append(("F3", f"{where}: an <information> block that does not directly follow </search>"))
        if len(blocks) > 1:
            problems.append(("F3", f"{where}: more than one <information> block after one search"))
    return problems


def _think_rule(
    segments: Sequence[Segment], parts: Sequence[ParsedText], options: FormatOptions
) -> list[tuple[FormatRule, str]]:
    policy_indices = [p.segment_index for p in parts if p.writer == "policy" and p.segment_index is not None]
    starts: list[int] = []
    if options.offline and policy_indices:
        starts.append(policy_indices[0])  # the evidence is in the prompt: the one output reasons first
    for part in parts:
        if part.writer == "environment" and part.segment_index is not None and part.blocks_of("information"):
            after = part.segment_index
            starts += [i for i in policy_indices if i > after][:1]
    problems: list[tuple[FormatRule, str]] = []
    for index in dict.fromkeys(starts):
        if not segments[index].text.lstrip(WHITESPACE).startswith("<think>"):
            problems.append(("F4", f"segment {index}: the output after the information does not open with <think>"))
    return problems


def _answer_rule(policy: Sequence[ParsedText], top: list[Block]) -> tuple[list[tuple[FormatRule, str]], Block | None]:
    answers = [b for b in top if b.tag == "answer"]
    if not answers:
        return [("F5", "no <answer> block")], None
    problems: list[tuple[FormatRule, str]] = []
    if len(answers) > 1:
        problems.append(("F5", f"{len(answers)} <answer> blocks, exactly one allowed"))
    last = answers[-1]
    for part in policy:
        if part.segment_index == last.segment_index:
            if part.text[last.end :].strip(WHITESPACE):
                problems.append(("F5", "something follows the <answer> block"))
        elif (part.segment_index or 0) > (last.segment_index or 0) and part.text.strip(WHITESPACE):
            problems.append(("F5", "the model wrote more after the <answer> block"))
    if any(_TAG_TOKEN.search(b.content) for b in answers):
        problems.append(("F5", "a tag inside the <answer> block"))
    return problems, last


def split_response(text: str, *, notes: Collection[str] = ()) -> list[Segment]:
    """Split a flat response (policy text with environment blocks inline) into policy / environment segments.

    An ``<information>...</information>`` block that follows ``</search>`` with only whitespace between
    becomes an environment segment, together with the whitespace around it; so does every verbatim
    occurrence of a string in ``notes`` (the environment's own notes, when the caller knows them).
    Everything else is policy text, so a model-written ``<information>`` stays policy and fails F3. Empty
    policy pieces are dropped. The last policy segment gets ``finish_reason="eos"`` when the text ends with
    an end-of-sequence marker. Never raises.
    """
    spans: list[tuple[int, int]] = []
    position = 0
    while (match := _INFORMATION_AFTER_SEARCH.search(text, position)) is not None:
        close = text.find("</information>", match.end())
        if close < 0:
            break  # an unclosed block is not an environment insert: it stays policy text
        end = close + len("</information>")
        end += len(text[end:]) - len(text[end:].lstrip(WHITESPACE))
        spans.append((match.start(1), end))
        position = end
    for note in {n.strip(WHITESPACE) for n in notes} - {""}:
        start = text.find(note)
        while start >= 0:
            end = start + len(note)
            spans.append(
                (len(text[:start].rstrip(WHITESPACE)), end + len(text[end:]) - len(text[end:].lstrip(WHITESPACE)))
            )
            start = text.find(note, end)
    segments: list[Segment] = []
    position = 0
    for start, end in _merged(spans):
        if text[position:start]:
            segments.append(Segment(origin="policy", text=text[position:start]))
        segments.append(Segment(origin="environment", text=text[start:end]))
        position = end
    if text[position:]:
        segments.append(Segment(origin="policy", text=text[position:]))
    policy = [i for i, s in enumerate(segments) if s.origin == "policy"]
    if policy and EOS_MARKER.search(segments[policy[-1]].text) and policy[-1] == len(segments) - 1:
        segments[-1] = segments[-1].model_copy(update={"finish_reason": "eos"})
    return segments


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans with overlapping or touching ones joined (a note right after an information block)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def check_response_format(
    text: str, options: FormatOptions | None = None, *, notes: Collection[str] = ()
) -> FormatReport:
    """:func:`check_format` over :func:`split_response` of a flat response."""
    return check_format(split_response(text, notes=notes), options)


def information_ids(segments: Sequence[Segment]) -> tuple[str, ...]:
    """Raw ids of the ``[[id]]:`` entry lines inside environment information blocks, in order, de-duplicated."""
    ids: list[str] = []
    for segment in segments:
        if segment.origin != "environment":
            continue
        for block in VERI_R1_PROTOCOL.parse(segment.text, writer="environment").blocks_of("information"):
            ids += [m.strip() for m in _ENTRY_ID.findall(block.content)]
    return tuple(dict.fromkeys(i for i in ids if i))
