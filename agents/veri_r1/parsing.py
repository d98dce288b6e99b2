"""The Veri-R1 answer grammar (spec §2.5): find the answer block, read its label and its evidence ids.

Two readers:

- :func:`parse_answer` -- the spec's strict grammar, used for rewards and clean-mode metrics. The label value
  must be exactly one of the three labels (``Label: SUPPORTS`` is no label), evidence entries must all be
  ``[[id]]``, and :attr:`ParsedAnswer.body_ok` says whether the body holds nothing but those two lines (F8).
- :func:`parse_answer_compat` -- how the reference evaluator reads a response (research notes §1.2, §1.4):
  the first label word anywhere in the last answer block, and every ``[[...]]`` in it. Used only in compat
  mode, to reproduce reference numbers.

Both take *policy* text: the caller removes environment ``<information>`` blocks first (they may hold ids and
label words of their own).
"""

from __future__ import annotations

import re
import unicodedata

from pydantic import BaseModel, ConfigDict

from evigraph.agents.veri_r1.labels import LABELS, Label, normalize_id

__all__ = ("ParsedAnswer", "answer_bodies", "parse_answer", "parse_answer_body", "parse_answer_compat")

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
# The label value runs to the end of its line, or to an ``Evidence:`` written on the same line.
_LABEL_LINE = re.compile(r"Label:[ \t]*(?P<value>.*?)[ \t]*(?=Evidence:|$)", re.IGNORECASE | re.MULTILINE)
# The evidence text runs to a later ``Label:`` (if the model wrote the lines in the other order) or the end.
_EVIDENCE = re.compile(r"Evidence:(?P<value>.*?)(?=Label:|\Z)", re.IGNORECASE | re.DOTALL)
_ID = re.compile(r"\[\[\s*([^\[\]]+?)\s*\]\]")
_SEPARATORS = re.compile(r"[\s,;]*")
_COMPAT_LABEL = re.compile(r"(NOT ENOUGH INFO|SUPPORT|REFUTE)")
_COMPAT_ID = re.compile(r"\[\[\s*([^\]]+?)\s*\]\]")
_QWEN_PREAMBLE = "<|im_start|>assistant"


class ParsedAnswer(BaseModel):
    """What the answer block(s) of a policy text say."""

    model_config = ConfigDict(frozen=True)

    n_blocks: int
    """How many ``<answer>...</answer>`` blocks the text has (more than one is a format failure, F5)."""
    body: str | None
    """Content of the last answer block; ``None`` when there is none."""
    label: Label | None
    evidence: tuple[str, ...] = ()
    """Cited ids in order of first appearance, de-duplicated."""
    label_ok: bool = False
    evidence_ok: bool = False
    """An ``Evidence:`` part exists and every entry in it is ``[[id]]`` (an empty list is legal)."""
    body_ok: bool = False
    """F8: label and evidence parse and the body holds nothing else but whitespace."""


def answer_bodies(text: str) -> list[str]:
    """The contents of every ``<answer>...</answer>`` block, non-greedy, dot matching newlines (spec §2.5).

    For text without nested or stray answer tags this equals the protocol parser's answer blocks.
    """
    return _ANSWER.findall(text)


def _dedup(ids: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ids))


def parse_answer_body(body: str) -> ParsedAnswer:
    """Read one answer body with the strict grammar (``n_blocks`` is set to 1)."""
    label: Label | None = None
    consumed: list[tuple[int, int]] = []
    label_match = _LABEL_LINE.search(body)
    if label_match is not None:
        value = " ".join(label_match["value"].split()).upper()
        label = next((candidate for candidate in LABELS if candidate == value), None)
        consumed.append(label_match.span())
    evidence: tuple[str, ...] = ()
    evidence_ok = False
    evidence_match = _EVIDENCE.search(body)
    if evidence_match is not None:
        value = evidence_match["value"]
        raw_ids = [normalize_id(m) for m in _ID.findall(value)]
        leftover = _ID.sub(",", value)
        # Only separators may remain once the [[id]] entries are cut out; an empty id is malformed too.
        evidence_ok = _SEPARATORS.fullmatch(leftover) is not None and all(raw_ids)
        evidence = _dedup([i for i in raw_ids if i])
        consumed.append(evidence_match.span())
    rest = body
    for start, end in sorted(consumed, reverse=True):
        rest = rest[:start] + rest[end:]
    label_ok = label is not None
    return ParsedAnswer(
        n_blocks=1,
        body=body,
        label=label,
        evidence=evidence,
        label_ok=label_ok,
        evidence_ok=evidence_ok,
        body_ok=label_ok and evidence_ok and not rest.strip(),
    )


def parse_answer(text: str) -> ParsedAnswer:
    """Parse the last answer block of policy ``text`` with the strict grammar of spec §2.5. Never raises."""
    bodies = answer_bodies(text)
    if not bodies:
        return ParsedAnswer(n_blocks=0, body=None, label=None)
    return parse_answer_body(bodies[-1]).model_copy(update={"n_blocks": len(bodies)})


def scored_text(text: str) -> str:
    """The part of a decoded response the reference evaluator scores: what follows the first Qwen assistant
    preamble, or the whole string when there is none (research notes §1.2)."""
    _, found, after = text.partition(_QWEN_PREAMBLE)
    return after if found else text


def parse_answer_compat(text: str) -> ParsedAnswer:
    """Read ``text`` as the reference *evaluation* reward does (research notes §1.2, §1.4). Never raises.

    The last answer block after the assistant preamble is scored; the label is the first of
    ``NOT ENOUGH INFO | SUPPORT | REFUTE`` found anywhere in it (case-sensitive, so ``SUPPORTS`` reads as
    SUPPORT); ids are every ``[[...]]`` in the block, stripped and NFC-composed (the reference composes
    predicted ids only; gold ids stay raw, see :func:`~evigraph.agents.veri_r1.gold.gold_evidence`).
    ``label_ok`` and ``body_ok`` both mean "a label was found" (the reference's format score);
    ``evidence_ok`` means an ``Evidence:`` marker exists.
    """
    bodies = answer_bodies(scored_text(text))
    if not bodies:
        return ParsedAnswer(n_blocks=0, body=None, label=None)
    body = bodies[-1]
    match = _COMPAT_LABEL.search(body)
    label: Label | None = match.group(1) if match else None  # type: ignore[assignment]
    ids = [unicodedata.normalize("NFC", raw.strip()) for raw in _COMPAT_ID.findall(body)]
    return ParsedAnswer(
        n_blocks=len(bodies),
        body=body,
        label=label,
        evidence=_dedup(ids),
        label_ok=label is not None,
        evidence_ok="Evidence:" in body,
        body_ok=label is not None,
    )
