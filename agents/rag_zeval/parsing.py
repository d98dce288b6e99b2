"""Reading the evaluator's reply (specs/rag-zeval.md §2.2, §3.1): strict JSON, the format gate, the inference-only
regex fallback, and per-candidate claim counts.

Every function is total over untrusted text: a reply is data, never an exception. The regexes are linear (no
nested quantifiers), so a hostile reply costs time proportional to its length.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from evigraph.agents.rag_zeval.schemas import Claim, ParseMode, RagZevalOutput, ReferenceKind, ScoredCandidate

__all__ = (
    "CLAIM_FIELDS",
    "ITEM_FIELDS",
    "format_problems",
    "read_evaluation",
    "regex_counts",
    "strict_json",
)

ITEM_FIELDS = ("id", "answer", "atomic_claims")
"""Required keys of one item (spec O1)."""
CLAIM_FIELDS = ("claim", "is_supported", "grounding_evidence", "analysis")
"""Required keys of one claim (spec O1)."""

_FENCE = re.compile(r"\A```[A-Za-z]*[ \t]*\n(.*)\n[ \t]*```\Z", re.DOTALL)
_ID = re.compile(r'"id"\s*:\s*"([A-Z])"')
_LABEL = re.compile(r'"is_supported"\s*:\s*(true|false)')


def strict_json(text: str) -> tuple[Any, str | None]:
    """``(value, None)`` when ``text`` is JSON after stripping whitespace and one surrounding Markdown fence
    (``` or ```json), else ``(None, why)``. Nothing else is salvaged (§2.2, O4)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return json.loads(body), None
    except (json.JSONDecodeError, RecursionError) as error:
        return None, f"not JSON: {error}"


def format_problems(value: Any, letters: Sequence[str]) -> tuple[str, ...]:
    """Why a parsed reply fails the format gate of §3.1 (empty: ``r_f = 0``).

    The reply must be a list with exactly one item per shown letter; every item a dict with the item fields,
    ``atomic_claims`` a non-empty list (O7) of dicts with the claim fields; ``claim`` and ``analysis`` strings,
    ``is_supported`` a JSON boolean, ``grounding_evidence`` a list of strings, non-empty when the claim is
    supported. ``answer`` is not compared with the candidate (O8).
    """
    if not isinstance(value, list):
        return (f"the reply is a JSON {type(value).__name__}, not a list",)
    problems: list[str] = []
    ids = [item.get("id") if isinstance(item, dict) else None for item in value]
    if sorted(map(str, ids)) != sorted(letters) or len(ids) != len(letters):
        problems.append(f"ids {ids} do not match the answers shown ({', '.join(sorted(letters))})")
    for position, item in enumerate(value):
        where = f"item {position}"
        if not isinstance(item, dict):
            problems.append(f"{where} is not an object")
            continue
        missing = [f for f in ITEM_FIELDS if f not in item]
        if missing:
            problems.append(f"{where} lacks {', '.join(missing)}")
        claims = item.get("atomic_claims")
        if "atomic_claims" in item and (not isinstance(claims, list) or not claims):
            problems.append(f"{where}: atomic_claims must be a non-empty list")
            continue
        for k, claim in enumerate(claims or ()):
            problems.extend(f"{where} claim {k}: {p}" for p in _claim_problems(claim))
    return tuple(problems)


def _claim_problems(claim: Any) -> list[str]:
    if not isinstance(claim, dict):
        return ["not an object"]
    problems = [f"lacks {f}" for f in CLAIM_FIELDS if f not in claim]
    for field in ("claim", "analysis"):
        if field in claim and not isinstance(claim[field], str):
            problems.append(f"{field} is not a string")
    if "is_supported" in claim and not isinstance(claim["is_supported"], bool):
        problems.append("is_supported is not a JSON boolean")
    evidence = claim.get("grounding_evidence")
    if "grounding_evidence" in claim and not (isinstance(evidence, list) and all(isinstance(e, str) for e in evidence)):
        problems.append("grounding_evidence is not a list of strings")
    elif claim.get("is_supported") is True and not evidence:
        problems.append("a supported claim without evidence")
    return problems


def regex_counts(text: str) -> dict[str, tuple[int, int]]:
    """The inference fallback of §2.2: ``letter -> (#true, #true + #false)`` of ``"is_supported"`` labels in the
    stretch of text from each ``"id": "X"`` to the next. A letter seen twice keeps its first stretch."""
    counts: dict[str, tuple[int, int]] = {}
    marks = list(_ID.finditer(text))
    for k, mark in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        labels = _LABEL.findall(text, mark.end(), end)
        counts.setdefault(mark.group(1), (labels.count("true"), len(labels)))
    return counts


def read_evaluation(
    text: str,
    letters: Sequence[str],
    *,
    kind: ReferenceKind = "faithfulness",
    lenient: bool = False,
    truncated: bool = False,
) -> RagZevalOutput:
    """The reply as scores per candidate; ``letters[i]`` is candidate ``i``'s letter.

    Strict JSON is read first; a JSON list is scored from its items even when the format gate fails (ids
    outside the shown letters are ignored, a letter's first item counts). Otherwise, with ``lenient``, the regex
    fallback counts labels. A candidate without claims scores 0 (O7). A reply cut by the token cap is a parse
    failure even if a prefix happens to parse.
    """
    value, error = (None, "the reply was cut off at the token cap") if truncated else strict_json(text)
    if error is None:
        problems = format_problems(value, letters)
        if isinstance(value, list):
            items = _first_items(value, letters)
            scored = tuple(_scored(letter, i, items.get(letter)) for i, letter in enumerate(letters))
            return _output(kind, letters, scored, "strict", "; ".join(problems) or None, not problems)
        error = problems[0]
    mode: ParseMode = "failed"
    counts: dict[str, tuple[int, int]] = {}
    if lenient and not truncated:
        counts = regex_counts(text)
        mode = "lenient" if counts else "failed"
    found = [counts.get(letter, (0, 0)) for letter in letters]
    scored = tuple(
        ScoredCandidate(id=letter, index=i, supported=supported, total=total)
        for i, (letter, (supported, total)) in enumerate(zip(letters, found, strict=True))
    )
    return _output(kind, letters, scored, mode, error, False)


def _output(
    kind: ReferenceKind,
    letters: Sequence[str],
    scored: tuple[ScoredCandidate, ...],
    mode: ParseMode,
    error: str | None,
    format_ok: bool,
) -> RagZevalOutput:
    return RagZevalOutput(
        kind=kind, letters=tuple(letters), candidates=scored, parse_mode=mode, parse_error=error, format_ok=format_ok
    )


def _first_items(value: list[Any], letters: Sequence[str]) -> dict[str, dict[str, Any]]:
    items: dict[str, dict[str, Any]] = {}
    for item in value:
        if isinstance(item, dict) and item.get("id") in letters:
            items.setdefault(item["id"], item)
    return items


def _scored(letter: str, index: int, item: dict[str, Any] | None) -> ScoredCandidate:
    raw = item.get("atomic_claims") if item else None
    entries = raw if isinstance(raw, list) else []
    claims = tuple(claim for claim in map(_claim, entries) if claim is not None)
    return ScoredCandidate(
        id=letter, index=index, claims=claims, supported=sum(c.is_supported for c in claims), total=len(entries)
    )


def _claim(entry: Any) -> Claim | None:
    """A claim as far as it reads: only a JSON ``true`` counts as supported."""
    if not isinstance(entry, dict):
        return None
    evidence = entry.get("grounding_evidence")
    return Claim(
        claim=str(entry.get("claim", "")),
        is_supported=entry.get("is_supported") is True,
        grounding_evidence=tuple(e for e in evidence if isinstance(e, str)) if isinstance(evidence, list) else (),
        analysis=str(entry.get("analysis", "")),
    )
