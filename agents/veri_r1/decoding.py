"""Constrained decoding for weak models (inference only): one regular expression per Veri-R1 turn.

A guide changes the sampling distribution, so it is never used for RL rollouts or for scoring a policy; it
lets a small model (the embedded SmolLM2) produce protocol-valid turns that follow the claim. Think bodies are
printable ASCII without ``<``/``>`` (no tags inside), optionally length-bounded. Given the claim's words, the
plan and every query are built from them (a small model otherwise copies the prompt's instructions into its
queries); the final answer may only cite ids the model was shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib.resources import files

__all__ = ("claim_words", "turn_regex")

MAX_CITED = 4
MAX_QUERY_WORDS = 6

_WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*")
_FUNCTION_WORDS = frozenset(
    line
    for line in (files("evigraph.agents.veri_r1") / "function_words.txt").read_text().split("\n")
    if line and line[0] != "#"
)
"""Words that never make a query on their own (the grammar starts every query with another word)."""


_TEXT = "[ -;=?-~]"
"""Printable ASCII but ``<`` and ``>``: no tags inside a block, and no partial multi-byte characters, which
lm-format-enforcer cannot track (a random or weak model then escapes the guide)."""


_SENTENCE = r"[A-Za-z0-9][ -\-/-;=?-~]{more}\."
"""One sentence: printable ASCII without ``<``, ``>`` or a period inside, ending with a period (``{more}``:
the repetition of its middle)."""


def _block(tag: str, body: str) -> str:
    return f"<{tag}>{body}</{tag}>"


def _answer(seen_ids: Sequence[str]) -> str:
    # Ids come from retrieved entries (untrusted): escaped, and only those containing no bracket or newline,
    # which could never be cited in the [[id]] syntax anyway.
    ids = [re.escape(i) for i in dict.fromkeys(seen_ids) if i and not set(i) & set("[]\n<")]
    cite = r"\[\[(?:" + "|".join(ids) + r")\]\]" if ids else None
    evidence = f"(?:{cite}(?:, {cite}){{0,{MAX_CITED - 1}}})?" if cite else ""
    return _block("answer", rf"\nLabel: (?:SUPPORT|REFUTE|NOT ENOUGH INFO)\nEvidence: {evidence}\n")


def claim_words(claim: str) -> tuple[list[str], list[str]]:
    """The claim's ASCII words in first-seen order: ``(content words, all words)``.

    Example:
        >>> content, words = claim_words("Hog Island Light was first lit in 1853.")
        >>> content, [w for w in words if w not in content]
        (['Hog', 'Island', 'Light', 'first', 'lit', '1853'], ['was', 'in'])
    """
    words = list(dict.fromkeys(w.rstrip(".") for w in _WORD.findall(claim) if w.isascii()))
    return [w for w in words if w.lower() not in _FUNCTION_WORDS], words


def _words(content: Sequence[str], others: Sequence[str], most: int) -> str:
    """A content word, then up to ``most - 1`` more words, single-spaced."""
    first = "(?:" + "|".join(re.escape(w) for w in content) + ")"
    any_word = "(?:" + "|".join(re.escape(w) for w in dict.fromkeys([*content, *others])) + ")"
    return f"{first}(?: {any_word}){{0,{most - 1}}}"


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
    body = f"{_TEXT}+" if max_block_chars is None else f"{_TEXT}{{1,{max_block_chars}}}"
    content, words = claim_words(claim) if claim is not None else ([], [])
    query = _words(content, words, MAX_QUERY_WORDS) if content else body
    # With the claim's words, reasoning is at most two sentences: a small greedy model otherwise repeats one
    # sentence until the token cap. Each sentence is unbounded, which keeps the enforcer's cache warm.
    sentence = _SENTENCE.format(more="*" if max_block_chars is None else f"{{0,{max(0, max_block_chars - 2)}}}")
    think = _block("think", f"{sentence}(?: {sentence})?" if content else body)
    action = _answer(seen_ids)
    if may_search:
        action = f"(?:{_block('search', query)}|{action})"
    plan = _block("plan", rf"Look up {query} and check the claim\.") if content else _block("plan", body)
    opening = f"{plan}\\n(?:{think}\\n)?" if first else f"{think}\\n"
    return opening + action
