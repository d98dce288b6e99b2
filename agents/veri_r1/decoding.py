"""Constrained decoding for weak models (inference only): one regular expression per Veri-R1 turn.

A guide changes the sampling distribution, so it is never used for RL rollouts or for scoring a policy; it
lets a small model (the embedded SmolLM2) produce protocol-valid turns for demos and plumbing checks. Block
bodies are printable ASCII without ``<``/``>`` (no tags inside), optionally length-bounded; the final answer
may only cite ids the model was shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ("turn_regex",)

MAX_CITED = 4


_TEXT = "[ -;=?-~]"
"""Printable ASCII but ``<`` and ``>``: no tags inside a block, and no partial multi-byte characters, which
lm-format-enforcer cannot track (a random or weak model then escapes the guide)."""


def _block(tag: str, body: str) -> str:
    return f"<{tag}>{body}</{tag}>"


def _answer(seen_ids: Sequence[str]) -> str:
    # Ids come from retrieved entries (untrusted): escaped, and only those containing no bracket or newline,
    # which could never be cited in the [[id]] syntax anyway.
    ids = [re.escape(i) for i in dict.fromkeys(seen_ids) if i and not set(i) & set("[]\n<")]
    cite = r"\[\[(?:" + "|".join(ids) + r")\]\]" if ids else None
    evidence = f"(?:{cite}(?:, {cite}){{0,{MAX_CITED - 1}}})?" if cite else ""
    return _block("answer", rf"\nLabel: (?:SUPPORT|REFUTE|NOT ENOUGH INFO)\nEvidence: {evidence}\n")


def turn_regex(*, first: bool, may_search: bool, seen_ids: Sequence[str], max_block_chars: int | None = None) -> str:
    """The shape of one policy turn.

    Args:
        first: the opening turn, which starts with the plan.
        may_search: a search is still allowed (else the turn must answer).
        seen_ids: ids shown so far; the answer may cite only these.
        max_block_chars: cap on plan/think/search bodies. ``None`` (unbounded) keeps lm-format-enforcer's
            per-state cache warm (~5x faster per token) but leaves closing a block to the model; a bound forces
            every block to close, at the cost of a fresh allowed-token computation per character position.
    """
    body = f"{_TEXT}+" if max_block_chars is None else f"{_TEXT}{{1,{max_block_chars}}}"
    think = _block("think", body)
    action = _answer(seen_ids)
    if may_search:
        action = f"(?:{_block('search', body)}|{action})"
    plan = _block("plan", body)
    opening = f"{plan}\\n(?:{think}\\n)?" if first else f"{think}\\n"
    return opening + action
