"""What each stage reads from a trace (specs/stepgap.md §1.1, §2.2, §9 #2–#5, #8): the step's claim (the NLI
hypothesis), the local evidence Stage C searches, quote validation, and Stage E's prior premises.

Sentences are split with a punctuation rule (no spaCy): claims are one or two short sentences of model text,
where a rule is as good and keeps the checker free of a model load.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evigraph.agents.search_r1.answers import normalize_answer
from evigraph.agents.stepgap.schemas import Trace, TraceStep
from evigraph.trajectory import Evidence

__all__ = (
    "MAX_PREMISE_WORDS",
    "local_evidence",
    "prior_premises",
    "sentences",
    "step_claim",
    "validate_quote",
)

MAX_PREMISE_WORDS = 350
"""Sentence windows of a prior passage stay under this many words (≈ 512 DeBERTa tokens, §9 #5)."""

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")


def sentences(text: str) -> list[str]:
    """Split on sentence-final punctuation followed by whitespace and a capital, digit or opening mark.

    >>> sentences("Kuhn was British. Pertramer was German! Same country?")
    ['Kuhn was British.', 'Pertramer was German!', 'Same country?']
    """
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def step_claim(step: TraceStep, question: str) -> str:
    """The NLI hypothesis of a step (§1.1, §9 #2, #3).

    Inference step: the last declarative sentence of its reasoning (questions and plans ending in ``?`` are
    skipped), else the whole reasoning. Conclusion step: the last sentence of its reasoning that contains the
    normalised answer, else ``"The answer to <question> is <answer>."``.

    >>> step_claim(TraceStep(reasoning="Who directed it? Whiplash was directed by Damien Chazelle.",
    ...                      query="Whiplash director"), "q")
    'Whiplash was directed by Damien Chazelle.'
    >>> step_claim(TraceStep(reasoning="I have what I need.", answer="Damien Chazelle"), "Who directed Whiplash?")
    'The answer to Who directed Whiplash? is Damien Chazelle.'
    """
    parts = sentences(step.reasoning)
    if step.kind == "inference":
        declarative = [s for s in parts if not s.endswith("?")]
        return declarative[-1] if declarative else " ".join(parts)
    answer = step.answer or ""
    wanted = normalize_answer(answer)
    if wanted:
        for sentence in reversed(parts):
            if f" {wanted} " in f" {normalize_answer(sentence)} ":
                return sentence
    question = " ".join(question.split()).rstrip()
    return f"The answer to {question} is {' '.join(answer.split())}."


def local_evidence(trace: Trace, index: int) -> list[Evidence]:
    """What Stage C searches for step ``index`` (§9 #4): the step's own retrieval; a step without one (a
    conclusion) reads the most recent earlier retrieval."""
    for step in reversed(trace.steps[: index + 1]):
        if step.evidence:
            return list(step.evidence)
    return []


def validate_quote(quote: str, evidence: Sequence[Evidence], *, min_words: int = 5, max_words: int = 20) -> bool:
    """Whether a Stage-C quote counts (§2.2, §9 #8, P-13): ``min_words``–``max_words`` words and a verbatim
    substring, up to whitespace, of one passage's text or title.

    >>> text = "Whiplash is a 2014 film directed by Damien Chazelle."
    >>> passage = Evidence(id="d1", title="Whiplash (2014 film)", text=text)
    >>> validate_quote("a 2014 film directed by  Damien Chazelle", [passage])
    True
    >>> validate_quote("a 2014 movie directed by Damien Chazelle", [passage])  # not verbatim
    False
    >>> validate_quote("Damien Chazelle", [passage])  # under 5 words
    False
    """
    words = quote.split()
    if not min_words <= len(words) <= max_words:
        return False
    needle = " ".join(words)
    return any(needle in " ".join(p.text.split()) or needle in " ".join((p.title or "").split()) for p in evidence)


def _windows(text: str, max_words: int) -> list[str]:
    windows: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in sentences(text):
        n = len(sentence.split())
        if current and size + n > max_words:
            windows.append(" ".join(current))
            current, size = [], 0
        current.append(sentence)
        size += n
    if current:
        windows.append(" ".join(current))
    return windows


def prior_premises(trace: Trace, index: int, entity_matched: Sequence[bool], quotes: Sequence[str | None]) -> list[str]:
    """Stage E's premises for step ``index`` (§9 #5): the quotes, then the passages (in sentence windows), of the
    earlier inference steps whose Stage C found the right entity. ``entity_matched[j]``/``quotes[j]`` describe
    step ``j``; duplicates are dropped, order kept."""
    premises: list[str] = []
    matched = [j for j in range(index) if entity_matched[j] and trace.steps[j].kind == "inference"]
    premises += [q for j in matched if (q := quotes[j])]
    for j in matched:
        for passage in trace.steps[j].evidence:
            premises += _windows(passage.text, MAX_PREMISE_WORDS)
    return list(dict.fromkeys(premises))
