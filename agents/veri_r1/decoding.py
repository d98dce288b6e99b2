"""Constrained decoding for weak models (inference only): one regular expression per Veri-R1 turn.

A guide changes the sampling distribution, so it is never used for RL rollouts or for scoring a policy; it
lets a small model (the embedded SmolLM2) produce protocol-valid turns for demos and plumbing checks. Block
bodies are printable ASCII without ``<``/``>`` (no tags inside) with bounded lengths, so a turn always
closes within its token cap; the final answer may only cite ids the model was shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ("turn_regex",)

PLAN_CHARS = 200
THINK_CHARS = 300
QUERY_CHARS = 100
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


def turn_regex(*, first: bool, may_search: bool, seen_ids: Sequence[str]) -> str:
    """The shape of one policy turn.

    Args:
        first: the opening turn, which starts with the plan.
        may_search: a search is still allowed (else the turn must answer).
        seen_ids: ids shown so far; the answer may cite only these.
    """
    think = _block("think", f"{_TEXT}+")
    action = _answer(seen_ids)
    if may_search:
        search = _block("search", f"{_TEXT}+")
        action = f"(?:{search}|{action})"
    plan = _block("plan", f"{_TEXT}+")
    opening = f"{plan}\\n(?:{think}\\n)?" if first else f"{think}\\n"
    return opening + action
