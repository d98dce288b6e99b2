"""A Search-R1 trace as steps ``s_i = (c_i, q_i, e_i, a_i)`` (specs/stepgap.md §2.1, §9 #2).

A step ends at ``</search>`` (the information block after it is ``e_i``) or at ``</answer>``; ``c_i`` is the
step's ``<think>`` text. Two sources: a finished run of our graph (one policy turn per step, the hits recorded
per search) and a foreign transcript (one text with the environment's ``<information>`` blocks inline, e.g.
Search-R1's own rollouts), whose passages are read back from the ``Doc i (Title: ...) text`` layout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evigraph.agents.search_r1.protocol import SEARCH_R1_PROTOCOL
from evigraph.agents.search_r1.schemas import TraceStepRecord
from evigraph.trajectory import Evidence

__all__ = ("parse_passages", "step_record", "steps_from_text")

_DOC = re.compile(r"^Doc\s*(\d+)\s*\(Title:\s*")
_STEP_END = re.compile(r"</search>|</answer>")


def _joined(parts: Sequence[str]) -> str:
    return " ".join(" ".join(p.split()) for p in parts if p.strip())


def step_record(
    text: str, *, segment_index: int, evidence: Sequence[Evidence] = (), span: tuple[int, int] | None = None
) -> TraceStepRecord:
    """One step from its model text (``span``: where that text sits in its segment, default all of it)."""
    parsed = SEARCH_R1_PROTOCOL.parse(text, writer="policy")
    top = [b for b in parsed.blocks if b.depth == 0]
    searches = [b.content.strip() for b in top if b.tag == "search"]
    answers = [b.content.strip() for b in top if b.tag == "answer"]
    return TraceStepRecord(
        reasoning=_joined([b.content for b in top if b.tag == "think"]),
        query=searches[0] if searches and not answers else None,
        evidence=[e.model_dump(mode="json") for e in evidence] if searches and not answers else [],
        answer=answers[-1] if answers else None,
        text=text,
        segment_index=segment_index,
        char_span=span or (0, len(text)),
    )


def _close_title(line: str, start: int) -> int | None:
    """The index of the ``)`` closing ``(Title:`` (titles may hold balanced parentheses themselves)."""
    depth = 0
    for i in range(start, len(line)):
        if line[i] == "(":
            depth += 1
        elif line[i] == ")":
            if depth == 0:
                return i
            depth -= 1
    return None


def parse_passages(information: str) -> list[Evidence]:
    """Passages of one information block in the ``Doc i (Title: t) text`` layout (other lines continue the
    previous passage; a block in no known layout is one passage)."""
    passages: list[dict[str, str]] = []
    for line in information.strip().splitlines():
        line = line.strip()
        match = _DOC.match(line)
        split = _close_title(line, match.end()) if match else None
        if match and split is not None:
            title, text = line[match.end() : split], line[split + 1 :]
            passages.append({"id": f"doc-{match.group(1)}", "title": title.strip().strip('"'), "text": text})
        elif passages:
            passages[-1]["text"] += " " + line.strip()
        elif line.strip():
            passages.append({"id": "doc-1", "title": "", "text": line.strip()})
    return [Evidence(id=p["id"], title=p["title"] or None, text=p["text"].strip()) for p in passages]


def steps_from_text(text: str) -> list[TraceStepRecord]:
    """The steps of one flat Search-R1 transcript (policy text with the environment's information blocks).

    >>> steps = steps_from_text("<think>Need the director.</think><search>Jaws director</search>"
    ...     "<information>Doc 1(Title: Jaws) Directed by Steven Spielberg.</information>"
    ...     "<think>Spielberg.</think><answer>Steven Spielberg</answer>")
    >>> [(s.query, s.answer, [e["title"] for e in s.evidence]) for s in steps]
    [('Jaws director', None, ['Jaws']), (None, 'Steven Spielberg', [])]
    """
    information = [b for b in SEARCH_R1_PROTOCOL.parse(text, writer="environment").blocks if b.tag == "information"]
    steps: list[TraceStepRecord] = []
    start = 0
    for end_match in _STEP_END.finditer(text):
        end = end_match.end()
        own = text[start:end]
        # The step's own text excludes information blocks that precede it (they belong to the previous step).
        for block in information:
            if start <= block.start < end:
                own = text[block.end : end]
                start = block.end
        following = next((b for b in information if b.start >= end), None)
        evidence = parse_passages(following.content) if end_match.group() == "</search>" and following else []
        steps.append(step_record(own, segment_index=0, evidence=evidence, span=(start, end)))
        start = following.end if following is not None and end_match.group() == "</search>" else end
    tail = text[start:]
    if tail.strip() and not steps:
        steps.append(step_record(tail, segment_index=0, span=(start, len(text))))
    return steps
