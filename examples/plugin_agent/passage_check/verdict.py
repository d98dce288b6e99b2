"""Reading the policy's turn: total (never raises on model text)."""

from __future__ import annotations

from passage_check.protocol import PROTOCOL
from passage_check.schemas import PassageCheckOutput

__all__ = ("read_verdict",)


def read_verdict(text: str, *, lenient: bool = False) -> PassageCheckOutput:
    """The verdict in ``text``: the content of its one answer block, if that is ``yes`` or ``no``.

    Example:
        >>> read_verdict("<answer>yes</answer>")
        PassageCheckOutput(verdict='yes', well_formed=True)
        >>> read_verdict("I think <answer> Yes </answer>", lenient=True)
        PassageCheckOutput(verdict='yes', well_formed=False)
    """
    parsed = PROTOCOL.parse(text)
    answers = parsed.blocks_of("answer")
    content = answers[0].content if len(answers) == 1 else ""
    if lenient:
        content = content.strip().lower()
    verdict = content if content in ("yes", "no") else None
    return PassageCheckOutput(verdict=verdict, well_formed=PROTOCOL.format_ok(parsed) and len(answers) == 1)
