"""Teacher annotation (specs/seva.md §2.1): a strong model writes the structured verdict for labelled pairs;
validated verdicts become SFT examples in the verifier's own prompt format.

Validation of one teacher reply: (1) it parses (§2.2) to an object with ``evidence_alignment``,
``reasoning_chain``, ``label`` and ``confidence``; (2) every alignment ``status`` is valid; (3) every chain
``judgment`` is valid; (4) the confidence is a number in [0, 1]; and (O9) the label agrees with the gold label.
A failed reply is regenerated, at most three attempts in all; then the pair is discarded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.agents.seva.data import SevaRecord
from evigraph.agents.seva.labels import normalize_label
from evigraph.agents.seva.parsing import parse_reply
from evigraph.agents.seva.prompts import show, teacher_transcript, verifier_transcript
from evigraph.agents.seva.rewards import REQUIRED_FIELDS, confidence_of
from evigraph.agents.seva.schemas import ALIGNMENT_STATUSES, JUDGMENTS
from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.training.sft import sft_line
from evigraph.trajectory import Segment, Trajectory

__all__ = ("Annotation", "annotate", "teacher_problems")


def _listed(reply: Mapping[str, Any], field: str, key: str, allowed: Sequence[str]) -> list[str]:
    entries = reply.get(field)
    if not isinstance(entries, list):
        return [f"{field} is not a list"]
    problems = []
    for i, entry in enumerate(entries):
        value = entry.get(key) if isinstance(entry, Mapping) else None
        if not isinstance(value, str) or value.strip().lower() not in allowed:
            problems.append(f"{field}[{i}].{key} {value!r} is not one of {', '.join(allowed)}")
    return problems


def teacher_problems(text: str, gold_label: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The teacher reply's object and what is wrong with it (empty: accepted)."""
    parsed = parse_reply(text)
    if parsed.value is None:
        return None, [f"unparseable: {parsed.error}"]
    reply = parsed.value
    missing = [k for k in REQUIRED_FIELDS if k not in reply]
    if missing:
        return reply, [f"missing {', '.join(missing)}"]
    problems = _listed(reply, "evidence_alignment", "status", ALIGNMENT_STATUSES)
    problems += _listed(reply, "reasoning_chain", "judgment", JUDGMENTS)
    confidence = reply["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or confidence_of(reply) != confidence:
        problems.append(f"confidence {confidence!r} is not a number in [0, 1]")
    label = normalize_label(reply["label"])
    if label != gold_label:
        problems.append(f"label {reply['label']!r} disagrees with the gold label {gold_label!r}")
    return reply, problems


class Annotation(BaseModel):
    """One pair's outcome: the SFT line when accepted, the attempts used and the last problems."""

    model_config = ConfigDict(frozen=True)

    id: str
    accepted: bool
    attempts: int
    problems: list[str] = []
    sft: dict[str, Any] | None = None


def sft_example(record: SevaRecord, verdict: Mapping[str, Any]) -> dict[str, Any]:
    """The SFT line: the verifier's own prompt (not the teacher's) and the teacher's verdict as the reply."""
    shown = show(record.claim, record.source)
    reply = Segment(origin="policy", text=json.dumps(verdict, ensure_ascii=False))
    trajectory = Trajectory(
        id=record.id, agent="seva", input={"claim": record.claim, "source": record.source},
        segments=[*verifier_transcript(shown), reply],
    )  # fmt: skip
    return {**sft_line(trajectory), "label": record.gold.label if record.gold else None}


async def annotate_one(
    teacher: Generator, record: SevaRecord, params: SamplingParams, *, attempts: int = 3
) -> Annotation:
    """Ask the teacher up to ``attempts`` times for a verdict that passes :func:`teacher_problems`."""
    if record.gold is None:
        return Annotation(id=record.id, accepted=False, attempts=0, problems=["the record has no gold label"])
    transcript = teacher_transcript(show(record.claim, record.source), record.gold.label)
    problems: list[str] = []
    for attempt in range(1, attempts + 1):
        # A different seed per attempt: a greedy teacher would repeat the same rejected reply.
        seeded = params.model_copy(update={"seed": None if params.seed is None else params.seed + attempt - 1})
        continuation = await teacher.continue_transcript(transcript, seeded)
        if continuation.finish_reason == "length":
            problems = ["the reply hit the token cap"]
            continue
        reply, problems = teacher_problems(continuation.text, record.gold.label)
        if not problems and reply is not None:
            return Annotation(id=record.id, accepted=True, attempts=attempt, sft=sft_example(record, reply))
    return Annotation(id=record.id, accepted=False, attempts=attempts, problems=problems)


async def annotate(
    teacher: Generator,
    records: Sequence[SevaRecord],
    params: SamplingParams,
    *,
    attempts: int = 3,
    concurrency: int = 4,
) -> AsyncIterator[Annotation]:
    """Annotate ``records`` with at most ``concurrency`` teacher calls in flight, yielding in input order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(record: SevaRecord) -> Annotation:
        async with gate:
            return await annotate_one(teacher, record, params, attempts=attempts)

    tasks = [asyncio.ensure_future(one(r)) for r in records]
    try:
        for task in tasks:
            yield await task
    finally:
        for task in tasks:
            task.cancel()
