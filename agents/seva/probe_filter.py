"""The rule half of SEVA's probe filter (specs/seva.md §2.4): :func:`probe_problems` checks that a probe's change
is real, small, fluent-looking and of the intended type, read off the word diff between the claim and the probe,
not off what the generator claims it did. The second-model half is
:func:`~evigraph.agents.seva.probe_llm.llm_type_check`.

Length rule: the spec's "small edit" is taken as an edit region of at most 12 words and a perturbed claim at most
1.6× the original's length, with at least 30 characters of room, so that short claims (the spec's own examples)
can still take a short appended qualifier.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from evigraph.agents.seva.probe_lexicon import lexicon
from evigraph.agents.seva.probe_schema import Perturbation
from evigraph.agents.seva.probe_text import (
    Change,
    changes,
    contains_word,
    is_month,
    is_negation,
    is_number,
    is_word,
    is_year,
    normalise,
    number_value,
    numbers_in,
    tokens,
)
from evigraph.agents.seva.schemas import ErrorType

__all__ = ("MAX_EDIT_WORDS", "MAX_GROWTH", "MIN_ROOM_CHARS", "accept", "probe_problems")

MAX_EDIT_WORDS = 12
"""The most words one probe's edit region may span (on either side of the edit)."""
MAX_GROWTH = 1.6
"""The perturbed claim may be at most this many times the original's length ..."""
MIN_ROOM_CHARS = 30
"""... or this many characters longer, whichever allows more (short claims need room for a qualifier)."""

_WORDS = lexicon()
_ANTONYM_SET = _WORDS.antonym_set


def probe_problems(p: Perturbation, source: str) -> list[str]:
    """What keeps ``p`` from being a usable probe against ``source``, in words; an empty list accepts it.

    Checks that the claim changed, that the change is one small edit, that nothing obviously broke the text,
    and that the word diff between ``p.original`` and ``p.claim`` is of ``p.category``'s kind."""
    if normalise(p.claim) == normalise(p.original):
        return ["the perturbed claim is the same as the original"]
    original = p.original.strip()
    diff = changes(original, p.claim)
    return [*_size_problems(p, diff), *_fluency_problems(original, p.claim), *_type_problems(p, diff, source)]


def accept(p: Perturbation, source: str) -> bool:
    """Whether ``p`` passes the rule filter (:func:`probe_problems` finds nothing)."""
    return not probe_problems(p, source)


def _max_length(original_length: int) -> float:
    return max(MAX_GROWTH * original_length, original_length + MIN_ROOM_CHARS)


def _size_problems(p: Perturbation, diff: list[Change]) -> list[str]:
    problems = []
    words = sum(max(sum(map(is_word, c.removed)), sum(map(is_word, c.added))) for c in diff)
    if words > MAX_EDIT_WORDS:
        problems.append(f"the edit spans {words} words (at most {MAX_EDIT_WORDS})")
    limit = _max_length(len(p.original.strip()))
    if len(p.claim) > limit:
        problems.append(f"the perturbed claim has {len(p.claim)} characters, more than the {limit:.0f} allowed")
    return problems


def _adjacent_repeats(text: str) -> list[str]:
    words = [t.text.lower() for t in tokens(text) if is_word(t.text)]
    return [a for a, b in itertools.pairwise(words) if a == b]


def _balanced(text: str) -> bool:
    pairs = (("(", ")"), ("[", "]"), ("“", "”"))
    return all(text.count(a) == text.count(b) for a, b in pairs) and text.count('"') % 2 == 0


_DOUBLE_PUNCT_RE = re.compile(r"[,;:.!?]\s*[,;:.!?]")
_SPACE_BEFORE_PUNCT_RE = re.compile(r"\s[,.;:!?]")


def _fluency_problems(original: str, claim: str) -> list[str]:
    """Surface damage the edit introduced (patterns already in the original are not held against it)."""
    problems = []
    if not claim.strip():
        return ["the perturbed claim is empty"]
    if claim != claim.strip():
        problems.append("the perturbed claim has leading or trailing whitespace")
    new_repeats = set(_adjacent_repeats(claim)) - set(_adjacent_repeats(original))
    if new_repeats:
        problems.append(f"repeated adjacent word: {', '.join(sorted(new_repeats))}")
    if _balanced(original) and not _balanced(claim):
        problems.append("unbalanced brackets or quotes")
    surface = ((_DOUBLE_PUNCT_RE, "double punctuation"), (_SPACE_BEFORE_PUNCT_RE, "space before punctuation"))
    problems.extend(what for pattern, what in surface if len(pattern.findall(claim)) > len(pattern.findall(original)))
    if claim.count("  ") > original.count("  "):
        problems.append("double space")
    if original and claim.strip()[0].isupper() != original[0].isupper():
        problems.append("the claim's first letter changed case")
    return problems


def _type_problems(p: Perturbation, diff: list[Change], source: str) -> list[str]:
    if len(diff) != 1:
        return [f"the claim is edited in {len(diff)} places, not one"]
    return _TYPE_CHECKS[p.category](p, diff[0], source)


def _one_token_swap(change: Change) -> tuple[str, str] | None:
    if len(change.removed) == 1 and len(change.added) == 1:
        return change.removed[0], change.added[0]
    return None


def _check_numerical(p: Perturbation, change: Change, source: str) -> list[str]:
    swap = _one_token_swap(change)
    if swap is None or not (is_number(swap[0]) and is_number(swap[1])):
        return ["a numerical perturbation replaces exactly one number with another and changes nothing else"]
    old, new = swap
    if is_year(old) or is_year(new):
        return [f"the changed number {old!r} → {new!r} is a year: that is a temporal shift"]
    problems = []
    if number_value(old) == number_value(new):
        problems.append(f"{old!r} → {new!r} keeps the same value")
    if number_value(new) in numbers_in(source):
        problems.append(f"the new value {new!r} occurs in the source")
    return problems


def _check_temporal(p: Perturbation, change: Change, source: str) -> list[str]:
    swap = _one_token_swap(change)
    if swap is None or not (all(map(is_year, swap)) or all(map(is_month, swap))):
        return ["a temporal shift replaces exactly one year or month name with another and changes nothing else"]
    if p.strategy == "numerical_perturbation" and contains_word(source, swap[1]):
        return [f"the new date {swap[1]!r} occurs in the source"]
    return []


def _check_negation(p: Perturbation, change: Change, source: str) -> list[str]:
    swap = _one_token_swap(change)
    if swap is not None and (swap[0].lower(), swap[1].lower()) in _ANTONYM_SET:
        return []
    if sum(map(is_word, change.removed)) > 4 or sum(map(is_word, change.added)) > 4:
        return ["a negation flip is a short edit"]
    net = sum(map(is_negation, change.added)) - sum(map(is_negation, change.removed))
    if abs(net) != 1:
        return ["the edit neither adds nor removes exactly one negation, nor swaps a verb for its opposite"]
    return []


def _new_entity(p: Perturbation, change: Change) -> str:
    # The generator's record names the whole new name ("New Jersey") where the diff sees only "Jersey".
    if p.after and p.after in p.claim and change.added_text in p.after:
        return p.after
    return change.added_text


def _check_entity(p: Perturbation, change: Change, source: str) -> list[str]:
    removed = [t for t in change.removed if is_word(t)]
    added = [t for t in change.added if is_word(t)]
    if not removed or not added:
        return ["an entity substitution replaces one name with another"]
    if not all(t[0].isupper() or t in _WORDS.joiners for t in (*removed, *added)):
        return ["the changed words are not all capitalised, so not a proper name"]
    entity = _new_entity(p, change)
    problems = []
    if entity.lower() in p.original.lower():
        problems.append(f"the new entity {entity!r} already occurs in the claim")
    if p.strategy == "entity_confusion" and entity.lower() in source.lower():
        problems.append(f"the new entity {entity!r} occurs in the source")
    return problems


def _check_insertion(p: Perturbation, change: Change, source: str) -> list[str]:
    if change.removed:
        return [f"the edit removes {' '.join(change.removed)!r}; expected a pure insertion"]
    if not any(map(is_word, change.added)):
        return ["the insertion adds no words"]
    if any(map(is_negation, change.added)):
        return ["the insertion adds a negation: that is a negation flip"]
    inserted = change.added_text.strip(" ,;:").lower()
    if inserted in source.lower():
        return [f"the added text {inserted!r} already occurs in the source"]
    return []


_TYPE_CHECKS: dict[ErrorType, Callable[[Perturbation, Change, str], list[str]]] = {
    "numerical_exaggeration": _check_numerical,
    "negation_flip": _check_negation,
    "scope_inflation": _check_insertion,
    "temporal_shift": _check_temporal,
    "entity_substitution": _check_entity,
    "fabrication": _check_insertion,
}
