"""Reading a detector completion (specs/rlseek.md §2.3, rules P1-P5), as pure total functions.

- :func:`final_list` (P1-P2): the last ```json block (else the last balanced ``{...}``) holding the key
  ``"hallucination list"``, or the claim variant's last ``<answer>[...]</answer>``. JSON is read strictly
  (standard JSON: no raw control characters inside strings, no trailing commas); the claim variant falls back
  to a Python literal, as the spec says.
- :func:`reasoning_steps` (P3-P4): the ``## Step N`` blocks before the answer and their ``<quote>`` bodies;
  what makes the quotation set invalid.
- :func:`locate_spans` (P5): span strings to character offsets in the response.

Everything here reads text the model wrote about text we did not write; nothing raises on any input.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from typing import NamedTuple

from evigraph.agents.rlseek.protocol import QUOTE_PROTOCOL
from evigraph.agents.rlseek.schemas import DetectedSpan, TaskType
from evigraph.protocol.steps import ParsedSteps, StepBlock, parse_steps

__all__ = (
    "FINAL_KEY",
    "FinalList",
    "SpanMapping",
    "StepQuotes",
    "final_list",
    "locate_spans",
    "reasoning_steps",
    "strip_span_string",
)

FINAL_KEY = "hallucination list"
"""The final object's only key: two words and a space (a parser expecting ``hallucination_list`` fails)."""

_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_MAX_OBJECT_STARTS = 256
"""Bounds the backward ``raw_decode`` scan on brace-heavy text (each attempt is linear in the rest)."""
_MAX_LITERAL_CHARS = 20_000
"""``ast.literal_eval`` of a long hostile string can exhaust the parser's stack; no real list is this long."""
_QUOTE_CHARS = ('"', "'", "`", "“”", "‘’")
"""Surrounding quote pairs P5 strips (one layer): a symmetric character, or an opening/closing pair."""
_BROKEN_TAG = {"unclosed_tag", "stray_close", "nested_tag"}


class FinalList(NamedTuple):
    """The completion's final answer (P1-P2)."""

    items: tuple[str, ...] | None
    """The listed strings, blank ones dropped; ``None`` on a parse failure."""
    start: int
    """Where the answer starts: the reasoning region is ``completion[:start]``."""
    error: str | None
    """Why parsing failed (``None`` when it did not)."""


class StepQuotes(NamedTuple):
    """The reasoning region's steps (P3) and whether their quotation set is valid (P4, §3.2)."""

    parsed: ParsedSteps
    quotes: tuple[tuple[str, ...], ...]
    """Each step's quotes, whitespace-stripped."""
    problems: tuple[tuple[str, ...], ...]
    """Each step's reasons for invalidity: ``no_quote``, ``empty_quote``, ``unbalanced_tag``."""

    @property
    def valid(self) -> bool:
        return bool(self.quotes) and not any(self.problems)


class SpanMapping(NamedTuple):
    """Where the listed strings are in the response (P5)."""

    spans: tuple[DetectedSpan, ...]
    unmatched: tuple[str, ...]
    """Stripped strings found nowhere: their length counts as false-positive characters."""


def final_list(completion: str, task: TaskType) -> FinalList:
    """The final answer of a completion (P1), or a parse failure (P2).

    Example:
        >>> final_list('## Step 1: x\\n```json\\n{"hallucination list": ["in 1899", " "]}\\n```', "summary")
        FinalList(items=('in 1899',), start=13, error=None)
        >>> final_list("hallucination list: [{'1899'}]", "summary").error
        'no JSON object with the key "hallucination list"'
    """
    if task == "claim":
        return _answer_list(completion)
    for fence in reversed(list(_FENCE.finditer(completion))):
        found = _keyed_object(fence.group(1))
        if found is not None:
            return _as_list(found[0], fence.start())
    found = _keyed_object(completion)
    if found is None:
        return FinalList(None, len(completion), f"no JSON object with the key {json.dumps(FINAL_KEY)}")
    return _as_list(found[0], found[1])


def reasoning_steps(reasoning: str) -> StepQuotes:
    """The ``## Step N`` blocks of the reasoning region and their quotes (P3-P4).

    A step is invalid when it has no quote, a quote that is empty after stripping, or a ``<quote>`` /
    ``</quote>`` that does not pair up (a nested ``<quote>`` included). Quotes in non-step sections (``## Final
    Output``) are ignored; with no header at all the whole region is one step.

    Example:
        >>> steps = reasoning_steps("## Step 1: a\\n<quote> x </quote>\\n## Step 2: b\\nno quote")
        >>> steps.quotes, steps.problems, steps.valid
        ((('x',), ()), ((), ('no_quote',)), False)
    """
    parsed = parse_steps(reasoning, protocol=QUOTE_PROTOCOL)
    quotes = tuple(tuple(q.content.strip() for q in step.quotes) for step in parsed.steps)
    problems = tuple(_problems(step, texts) for step, texts in zip(parsed.steps, quotes, strict=True))
    return StepQuotes(parsed, quotes, problems)


def strip_span_string(text: str) -> str:
    """A listed string as P5 compares it: whitespace and one layer of surrounding quote characters removed.

    Example:
        >>> strip_span_string(' "330 metres tall" '), strip_span_string("“in 1899”")
        ('330 metres tall', 'in 1899')
    """
    text = text.strip()
    for pair in _QUOTE_CHARS:
        opening, closing = (pair, pair) if len(pair) == 1 else (pair[0], pair[1])
        if len(text) >= 2 and text[0] == opening and text[-1] == closing:
            return text[1:-1].strip()
    return text


def locate_spans(
    items: Sequence[str],
    response: str,
    *,
    step_texts: Sequence[str] = (),
    step_quotes: Sequence[Sequence[int]] = (),
) -> SpanMapping:
    """Map listed strings to ``[start, end)`` offsets in ``response`` (P5).

    Strings are stripped (:func:`strip_span_string`) and deduplicated; each maps to its **first exact
    occurrence**, else its first case-insensitive one (``re.IGNORECASE`` on the response itself, so offsets
    never shift), else it is unmatched. A span records the steps whose text names the string (case-insensitively)
    and their quotes, its supporting quotes.

    Args:
        items: the final list (blank strings already dropped).
        response: the response text the model saw (escaped, which preserves offsets).
        step_texts: each step's text, to attach supporting quotes.
        step_quotes: each step's quote indices (parallel to ``step_texts``).

    Example:
        >>> text = "The Eiffel Tower is 330 metres tall and was completed in 1899."
        >>> mapping = locate_spans(["the eiffel tower", "1899", "1899", "built by Gustave"], text)
        >>> [(s.start, s.end) for s in mapping.spans], mapping.unmatched
        ([(0, 16), (57, 61)], ('built by Gustave',))
    """
    spans: list[DetectedSpan] = []
    unmatched: list[str] = []
    folded_steps = [t.casefold() for t in step_texts]
    for string in dict.fromkeys(strip_span_string(i) for i in items):
        if not string:
            continue
        start = response.find(string)
        if start < 0:
            match = re.search(re.escape(string), response, re.IGNORECASE)
            start = match.start() if match else -1
            end = match.end() if match else -1
        else:
            end = start + len(string)
        if start < 0:
            unmatched.append(string)
            continue
        needle = string.casefold()
        named = tuple(i for i, text in enumerate(folded_steps) if needle in text)
        support = tuple(q for i in named if i < len(step_quotes) for q in step_quotes[i])
        spans.append(DetectedSpan(start=start, end=end, text=response[start:end], quotes=support, steps=named))
    return SpanMapping(tuple(spans), tuple(unmatched))


def _keyed_object(text: str) -> tuple[object, int] | None:
    """The last decodable JSON object in ``text`` that has :data:`FINAL_KEY`, and where it starts."""
    if FINAL_KEY not in text:
        return None
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"\{", text)][-_MAX_OBJECT_STARTS:]
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict) and FINAL_KEY in value:
            return value[FINAL_KEY], start
    return None


def _answer_list(completion: str) -> FinalList:
    """The claim variant: the last ``<answer>...</answer>`` as a JSON list, else a Python literal list."""
    answers = list(_ANSWER.finditer(completion))
    if not answers:
        return FinalList(None, len(completion), "no <answer>...</answer> block")
    last = answers[-1]
    body = last.group(1).strip()
    try:
        value: object = json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        value = _literal(body)
    if value is _NOT_A_LITERAL:
        return FinalList(None, last.start(), "the <answer> block is neither a JSON list nor a list literal")
    return _as_list(value, last.start())


_NOT_A_LITERAL = object()


def _literal(body: str) -> object:
    if len(body) > _MAX_LITERAL_CHARS:
        return _NOT_A_LITERAL
    try:
        return ast.literal_eval(body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_A_LITERAL


def _as_list(value: object, start: int) -> FinalList:
    if not isinstance(value, list):
        return FinalList(None, start, f"the final answer is a {type(value).__name__}, not a list of strings")
    if not all(isinstance(item, str) for item in value):
        return FinalList(None, start, "the final list holds something other than strings")
    return FinalList(tuple(item for item in value if item.strip()), start, None)


def _problems(step: StepBlock, quotes: tuple[str, ...]) -> tuple[str, ...]:
    problems = []
    if not quotes:
        problems.append("no_quote")
    elif not all(quotes):
        problems.append("empty_quote")
    if any(issue.code in _BROKEN_TAG and issue.tag == "quote" for issue in step.issues):
        problems.append("unbalanced_tag")
    return tuple(problems)
