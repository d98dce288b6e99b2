"""Token budgets for environment text (observation caps such as Veri-R1's 768-token information block).

With the policy's tokenizer the cap is exact; without one (chat APIs) a whitespace piece counts as one
token, which over-counts for most tokenizers and so errs on the safe side.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ("count_tokens", "truncate_to_tokens")

_PIECE = re.compile(r"\s*\S+")


def count_tokens(text: str, tokenizer: Any | None = None) -> int:
    """Tokens in ``text`` under ``tokenizer`` (no special tokens), else whitespace pieces."""
    if tokenizer is not None:
        return len(tokenizer.encode(text, add_special_tokens=False))
    return len(_PIECE.findall(text))


def truncate_to_tokens(text: str, max_tokens: int, tokenizer: Any | None = None) -> tuple[str, bool]:
    """The longest prefix of ``text`` within ``max_tokens``; returns ``(text, was_truncated)``.

    Whole lines are kept while they fit, so a cut never leaves a line's id without its text unless a
    single line alone exceeds the budget (then that line is cut mid-way).
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    if count_tokens(text, tokenizer) <= max_tokens:
        return text, False
    kept: list[str] = []
    used = 0
    for line in text.split("\n"):
        cost = count_tokens(line + "\n", tokenizer)
        if used + cost > max_tokens:
            if not kept:  # one oversized line: cut inside it
                kept.append(_prefix(line, max_tokens, tokenizer))
            break
        kept.append(line)
        used += cost
    return "\n".join(kept), True


def _prefix(text: str, max_tokens: int, tokenizer: Any | None) -> str:
    if tokenizer is None:
        return "".join(_PIECE.findall(text)[:max_tokens])
    ids = tokenizer.encode(text, add_special_tokens=False)[:max_tokens]
    return tokenizer.decode(ids, skip_special_tokens=True)
