"""One reply to a :class:`~evigraph.agents.seva.schemas.SevaOutput`: the §2.2 parse, the normalised label and
diagnosis, the format level, and -- beyond the paper (spec §8) -- whether each quoted source span really occurs
in the source (the shared quote matcher: exact, then whitespace- and case-insensitive)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.seva.labels import normalize_label
from evigraph.agents.seva.parsing import parse_reply
from evigraph.agents.seva.rewards import error_present, format_score, stated_confidence
from evigraph.agents.seva.schemas import SevaOutput, SourceSpanCheck
from evigraph.protocol.escaping import EscapedText
from evigraph.tools.quotes import find_quote

__all__ = ("check_source_spans", "read_verdict")

# Placeholders a model writes for "nothing in the source"; they are not quotes.
_NOT_QUOTES = frozenset({"", "not_found", "not found", "none", "n/a", "null"})


def _quoted(reply: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    quoted: list[tuple[str, int, str]] = []
    for field, key in (("evidence_alignment", "source_span"), ("reasoning_chain", "source_evidence")):
        entries = reply.get(field)
        if not isinstance(entries, list):
            continue
        for index, entry in enumerate(entries):
            text = entry.get(key) if isinstance(entry, Mapping) else None
            if isinstance(text, str) and text.strip().lower() not in _NOT_QUOTES:
                quoted.append((field, index, text))
    return quoted


def check_source_spans(reply: Mapping[str, Any], source: str | EscapedText) -> tuple[SourceSpanCheck, ...]:
    """Every non-empty ``source_span`` and ``source_evidence`` of ``reply``, located in ``source``."""
    checks = []
    for field, index, text in _quoted(reply):
        match = find_quote(text, source)
        checks.append(
            SourceSpanCheck(
                field=field,  # type: ignore[arg-type]
                index=index,
                text=text,
                found=match is not None,
                start=match.start if match else None,
                end=match.end if match else None,
            )
        )
    return tuple(checks)


def read_verdict(
    text: str, *, source: str | EscapedText, truncated: bool = False, repaired: bool = False
) -> SevaOutput:
    """Read one reply. A reply cut by the token cap is a parse failure (spec §5: truncation ⇒ unparseable)."""
    if truncated:
        return SevaOutput(raw=text, parse_ok=False, parse_error="the reply hit the token cap", truncated=True)
    parsed = parse_reply(text)
    if parsed.value is None:
        return SevaOutput(raw=text, parse_ok=False, parse_error=parsed.error, repaired=repaired)
    reply = parsed.value
    fix = reply.get("fix_suggestion")
    return SevaOutput(
        raw=text,
        parse_ok=True,
        parsed=reply,
        label=normalize_label(reply.get("label")),
        confidence=stated_confidence(reply),
        error_type=str(reply["error_type"]).strip() if error_present(reply) else None,
        fix_suggestion=fix if isinstance(fix, str) and fix.strip() else None,
        format_score=format_score(reply),
        repaired=repaired,
        source_spans=check_source_spans(reply, source),
    )
