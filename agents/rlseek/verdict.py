"""One completion to one :class:`~evigraph.agents.rlseek.schemas.RLSeekOutput` (pure): the final list, the
steps and their quotes checked against the source, the spans located in the response.

Both texts are the *rendered* ones the model saw (untrusted ``<`` neutralised, spec P6); escaping preserves
length, so offsets into them are offsets into the originals. Quotes are located with the shared quote matcher
(:func:`evigraph.tools.quotes.find_quote`: exact, else up to whitespace and case) and measured by the longest
common substring with the source (:class:`evigraph.tools.lcs.SuffixAutomaton`, whitespace runs collapsed in
both, case-sensitive: spec O3), which is what the penalty reads.
"""

from __future__ import annotations

import re

from evigraph.agents.rlseek.parsing import final_list, locate_spans, reasoning_steps
from evigraph.agents.rlseek.schemas import QuoteCheck, ReasoningStep, RLSeekOutput, TaskType
from evigraph.tools.lcs import SuffixAutomaton
from evigraph.tools.quotes import find_quote

__all__ = ("QuoteScorer", "collapse_whitespace", "detect")

_SPACE_RUN = re.compile(r"\s+")


def collapse_whitespace(text: str) -> str:
    """Every run of whitespace becomes one space (spec O3); nothing else changes.

    Example:
        >>> collapse_whitespace("330\\n  metres\\ttall")
        '330 metres tall'
    """
    return _SPACE_RUN.sub(" ", text)


class QuoteScorer:
    """Checks quotes against one source: the suffix automaton of the collapsed source is built once (O(|D|))
    and every quote is measured in O(|Q|)."""

    __slots__ = ("_automaton", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self._automaton = SuffixAutomaton(collapse_whitespace(source))

    def overlap(self, quote: str) -> tuple[int, int]:
        """``(LCS(Q, D), |Q|)`` over collapsed whitespace, in characters."""
        collapsed = collapse_whitespace(quote)
        return self._automaton.longest_common_substring(collapsed).length, len(collapsed)

    def check(self, quote: str, step: int) -> QuoteCheck:
        """One quote's location (the shared matcher) and its LCS with the source."""
        lcs, length = self.overlap(quote)
        match = find_quote(quote, self.source)
        if match is None:
            return QuoteCheck(step=step, text=quote, lcs=lcs, length=length)
        return QuoteCheck(
            step=step, text=quote, start=match.start, end=match.end, rule=match.rule, lcs=lcs, length=length
        )


def detect(
    completion: str,
    *,
    task: TaskType,
    source: str,
    response: str,
    truncated: bool = False,
    scorer: QuoteScorer | None = None,
) -> RLSeekOutput:
    """Parse one completion (P1-P5) and check its quotes against ``source``.

    Args:
        completion: the detector's reply.
        task: which variant wrote it (the claim variant answers in ``<answer>``).
        source: the rendered source ``D``.
        response: the rendered response ``T``.
        truncated: the completion hit its token cap: a parse failure whatever it holds (spec O7).
        scorer: a :class:`QuoteScorer` of ``source`` to reuse (built here otherwise).

    Example:
        >>> reply = '## Step 1: Check "1899"\\n- Evidence: <quote>completed in 1889</quote>\\n' \\
        ...         '## Final Output\\n```json\\n{"hallucination list": ["1899"]}\\n```'
        >>> out = detect(reply, task="summary", source="It was completed in 1889.",
        ...              response="It was completed in 1899.")
        >>> [(s.start, s.end, s.quotes) for s in out.spans], out.quotes_valid, out.quotes[0].rule
        ([(20, 24, (0,))], True, 'exact')
    """
    answer = final_list(completion, task)
    if truncated:
        answer = answer._replace(items=None, error="the completion hit its token cap (spec O7)")
    reasoning = reasoning_steps(completion[: answer.start])
    scorer = scorer if scorer is not None and scorer.source == source else QuoteScorer(source)
    quotes: list[QuoteCheck] = []
    steps: list[ReasoningStep] = []
    for block, texts, problems in zip(reasoning.parsed.steps, reasoning.quotes, reasoning.problems, strict=True):
        first = len(quotes)
        quotes.extend(scorer.check(text, block.index) for text in texts)
        steps.append(
            ReasoningStep(
                index=block.index,
                header=block.header,
                start=block.start,
                end=block.end,
                quotes=tuple(range(first, len(quotes))),
                problems=problems,
                implicit=block.implicit,
            )
        )
    mapping = locate_spans(
        answer.items or (),
        response,
        step_texts=[completion[s.start : s.end] for s in steps],
        step_quotes=[s.quotes for s in steps],
    )
    return RLSeekOutput(
        task=task,
        spans=mapping.spans,
        raw_list=answer.items or (),
        unmatched=mapping.unmatched,
        steps=tuple(steps),
        quotes=tuple(quotes),
        parse_ok=answer.items is not None,
        parse_error=answer.error,
        quotes_valid=reasoning.valid,
    )
