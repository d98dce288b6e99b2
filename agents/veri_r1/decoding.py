"""Constrained decoding for weak models (inference only): one regular expression per Veri-R1 turn.

Built from the shared guide pieces (:mod:`evigraph.protocol.guides`): given the claim's words, the plan and
every query are built from them; reasoning is at most two sentences; the final answer may only cite ids the
model was shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evigraph.protocol.guides import block, body_regex, sentence_regex, subject_words, words_regex

__all__ = ("claim_words", "turn_regex")

MAX_CITED = 4
MAX_QUERY_WORDS = 6

claim_words = subject_words
"""The claim's ``(content words, all words)``; see :func:`~evigraph.protocol.guides.subject_words`."""


def _cite(seen_ids: Sequence[str]) -> str | None:
    """One ``[[id]]`` of the ids shown, or ``None`` before any were."""
    # Ids come from retrieved entries (untrusted): escaped, and only those containing no bracket or newline,
    # which could never be cited in the [[id]] syntax anyway.
    ids = [re.escape(i) for i in dict.fromkeys(seen_ids) if i and not set(i) & set("[]\n<")]
    return r"\[\[(?:" + "|".join(ids) + r")\]\]" if ids else None


def _answer(seen_ids: Sequence[str]) -> str:
    cite = _cite(seen_ids)
    evidence = f"(?:{cite}(?:, {cite}){{0,{MAX_CITED - 1}}})?" if cite else ""
    return block("answer", rf"\nLabel: (?:SUPPORT|REFUTE|NOT ENOUGH INFO)\nEvidence: {evidence}\n")


def turn_regex(
    *,
    first: bool,
    may_search: bool,
    seen_ids: Sequence[str],
    claim: str | None = None,
    max_block_chars: int | None = None,
) -> str:
    """The shape of one policy turn.

    Args:
        first: the opening turn, which starts with the plan.
        may_search: a search is still allowed (else the turn must answer).
        seen_ids: ids shown so far; the answer may cite only these.
        claim: the claim; when it has content words, the plan reads ``Look up <claim words> and check the
            claim.`` and each query is 1-6 of the claim's words starting with a content word.
        max_block_chars: cap on plan/think/search bodies. ``None`` (unbounded) keeps lm-format-enforcer's
            per-state cache warm (~5x faster per token) but leaves closing a block to the model; a bound forces
            every block to close, at the cost of a fresh allowed-token computation per character position.
    """
    body = body_regex(max_block_chars)
    content, words = subject_words(claim) if claim is not None else ([], [])
    query = words_regex(content, words, MAX_QUERY_WORDS) if content else body
    # With the claim's words, reasoning is at most two sentences: a small greedy model otherwise repeats one
    # sentence until the token cap. Each sentence is unbounded, which keeps the enforcer's cache warm.
    sentence = sentence_regex(max_block_chars)
    reasoning = f"{sentence}(?: {sentence})?" if content else body
    # After results came back, reasoning opens on one of the entries shown: it is then about this run's results,
    # where free sentences let a small model copy the worked example's entry instead.
    cite = _cite(seen_ids)
    think = block("think", f"{cite} {reasoning}" if cite and content else reasoning)
    action = _answer(seen_ids)
    if may_search:
        action = f"(?:{block('search', query)}|{action})"
    plan = block("plan", rf"Look up {query} and check the claim\.") if content else block("plan", body)
    opening = f"{plan}\\n(?:{think}\\n)?" if first else f"{think}\\n"
    return opening + action
