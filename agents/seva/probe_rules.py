"""SEVA's rule-based probes (specs/seva.md §2.4): :func:`perturb` turns an Attributable claim into a Not
Attributable one with one small, deterministic edit of a strategy: swap a name, move a number or a date, flip the
polarity, or bolt on a qualifier or an unverifiable detail.

Each strategy has a site finder: the places in the claim it can edit, each with its alternative edits. Sites
are visited in an order drawn from the caller's generator and the first edit that passes the rule filter
(:func:`~evigraph.agents.seva.probe_filter.probe_problems`) is kept. Entity sites come from
:mod:`.probe_entities` (spaCy NER, or capitalised chunks without it); the word lists from :mod:`.probe_lexicon`.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evigraph.agents.seva.probe_entities import EntityFinder, EntitySpan, default_entity_finder
from evigraph.agents.seva.probe_filter import probe_problems
from evigraph.agents.seva.probe_lexicon import lexicon
from evigraph.agents.seva.probe_schema import Perturbation, Strategy
from evigraph.agents.seva.probe_text import (
    NUMBER_PATTERN,
    at_sentence_start,
    contains_word,
    is_month,
    is_negation,
    is_year,
    match_case,
    number_value,
    numbers_in,
    unique,
)
from evigraph.agents.seva.schemas import ErrorType

__all__ = ("perturb",)

_WORDS = lexicon()


@dataclass(frozen=True)
class _Edit:
    """Replace ``text[start:end]`` with ``new``; within a site, edits of lower ``rank`` are tried first."""

    start: int
    end: int
    new: str
    category: ErrorType
    rank: int = 0


_Site = list[_Edit]
"""The alternative edits at one place in the claim."""
_SiteFinder = Callable[[str, str, Sequence[str], EntityFinder], list[_Site]]
"""(claim, source, donors, entity finder) → the claim's sites for one strategy."""


def perturb(
    claim: str,
    source: str,
    strategy: Strategy,
    *,
    rng: random.Random,
    donors: Sequence[str] = (),
    entities: EntityFinder | None = None,
) -> Perturbation | None:
    """Perturb ``claim`` with one rule-based edit of ``strategy``; ``None`` when the claim offers no site for it
    (or no edit there passes :func:`~evigraph.agents.seva.probe_filter.probe_problems`).

    Sites are visited in an order drawn from ``rng`` and the first edit that passes the rule filter is returned,
    so the result is a function of the inputs and the generator's state. ``donors`` are other texts (other pairs'
    claims and sources) that entity confusion borrows names from. ``entities`` finds the names of the two entity
    strategies (default: :func:`~evigraph.agents.seva.probe_entities.default_entity_finder`). The perturbed claim
    is built from ``claim.strip()``."""
    text = claim.strip()
    if not text:
        return None
    find = entities if entities is not None else default_entity_finder().find
    sites = _SITE_FINDERS[strategy](text, source, donors, find)

    def build(edit: _Edit) -> Perturbation:
        return Perturbation(
            claim=text[: edit.start] + edit.new + text[edit.end :],
            original=claim,
            strategy=strategy,
            category=edit.category,
            before=text[edit.start : edit.end].strip(),
            after=edit.new.strip(),
            method="rule",
        )

    return _first_accepted(sites, build, source, rng)


def _first_accepted(
    sites: list[_Site], build: Callable[[_Edit], Perturbation], source: str, rng: random.Random
) -> Perturbation | None:
    # Site first, then edit: a site with many alternatives (a year has twenty shifts) is not favoured.
    order = list(sites)
    rng.shuffle(order)
    for site in order:
        options = list(site)
        rng.shuffle(options)
        options.sort(key=lambda edit: edit.rank)
        for edit in options:
            candidate = build(edit)
            if not probe_problems(candidate, source):
                return candidate
    return None


# entity confusion and multi-hop graft


def _swap_rank(target: EntitySpan, name: EntitySpan) -> int:
    # A name of the target's kind reads best ("Samsung" for "Apple", not "Seoul"), then one of its length.
    other_kind = target.kind is not None and name.kind is not None and target.kind != name.kind
    return 2 * other_kind + (len(name.words) != len(target.words))


def _entity_sites(targets: list[EntitySpan], pool: list[EntitySpan]) -> list[_Site]:
    return [
        [_Edit(t.start, t.end, name.text, "entity_substitution", _swap_rank(t, name)) for name in pool]
        for t in targets
        if pool
    ]


def _unique_names(spans: Sequence[EntitySpan]) -> list[EntitySpan]:
    first: dict[str, EntitySpan] = {}
    for span in spans:
        first.setdefault(span.text, span)
    return list(first.values())


def _entity_confusion_sites(text: str, source: str, donors: Sequence[str], find: EntityFinder) -> list[_Site]:
    targets = find([text, source])[0]
    seen = (text.lower(), source.lower())
    pool = _unique_names([s for spans in find(donors) for s in spans if all(s.text.lower() not in t for t in seen)])
    return _entity_sites(targets, pool)


def _multi_hop_graft_sites(text: str, source: str, donors: Sequence[str], find: EntityFinder) -> list[_Site]:
    targets, in_source = find([text, source])
    pool = _unique_names([s for s in in_source if s.text.lower() not in text.lower()])
    sites = []
    for target in targets:
        # A source name sharing a word with the target ("Oxford University" for "Oxford") is no swap.
        target_words = {w.lower() for w in target.words} - _WORDS.joiners
        fitting = [name for name in pool if not target_words & {w.lower() for w in name.words}]
        sites.extend(_entity_sites([target], fitting))
    return sites


# numerical perturbation

_NUMBER_SITE_RE = re.compile(rf"(?<![\w.,\-/:]){NUMBER_PATTERN}(?!\d|[.,:/\-–]\d|(?:st|nd|rd|th)\b)")
_COUNTING_WORDS = [word for word, value in _WORDS.number_words.items() if value >= 2]  # "one" is often no count
_NUMBER_WORD_SITE_RE = re.compile(rf"(?<![\w'’-])(?:{'|'.join(_COUNTING_WORDS)})(?![\w'’-])", re.IGNORECASE)
_WORD_FOR_NUMBER = {value: word for word, value in _WORDS.number_words.items()}
_MONTH_SITE_RE = re.compile(rf"(?<![\w'’-])(?:{'|'.join(_WORDS.months)})(?![\w'’-])")


def _next_to_month(text: str, m: re.Match[str]) -> bool:
    # The day of "May 31" / "31 May" belongs to the date: scaling it gives "May 93".
    before = re.search(r"(\w+)\s+$", text[: m.start()])
    after = re.match(r"\s+(\w+)", text[m.end() :])
    return any(w is not None and is_month(w.group(1)) for w in (before, after))


def _numerical_sites(text: str, source: str, donors: Sequence[str], find: EntityFinder) -> list[_Site]:
    # A new value already in the claim would blur which number changed.
    taken = numbers_in(source) | numbers_in(text)
    sites = []
    for m in _NUMBER_SITE_RE.finditer(text):
        if _next_to_month(text, m) and not is_year(m.group()):
            continue
        if is_year(m.group()):
            sites.append(_year_edits(m, source))
        else:
            sites.append(_number_edits(m, taken))
    sites.extend(_number_word_edits(m, taken) for m in _NUMBER_WORD_SITE_RE.finditer(text))
    sites.extend(_month_edits(text, m, source) for m in _MONTH_SITE_RE.finditer(text) if _is_month_date(text, m))
    return [site for site in sites if site]


def _year_edits(m: re.Match[str], source: str) -> _Site:
    year = int(m.group())
    shifted = (year + d for d in (*range(-10, 0), *range(1, 11)))
    return [
        _Edit(m.start(), m.end(), str(y), "temporal_shift")
        for y in shifted
        if 1000 <= y <= 2099 and not contains_word(source, str(y))
    ]


def _is_month_date(text: str, m: re.Match[str]) -> bool:
    # "May" is also a modal verb opening a sentence: take it as a month only next to a number.
    if m.group() != "May":
        return True
    return bool(re.match(r"\s+\d", text[m.end() :]) or re.search(r"\d\s+$", text[: m.start()]))


def _month_edits(text: str, m: re.Match[str], source: str) -> _Site:
    day = re.match(r"\s+(\d{1,2})\b", text[m.end() :])
    needed = int(day.group(1)) if day else 1
    return [
        _Edit(m.start(), m.end(), month, "temporal_shift")
        for month, days in _WORDS.months.items()
        if month != m.group() and days >= needed and not contains_word(source, month)
    ]


def _rescaled(value: float, decimals: int, percent: bool) -> list[float]:
    """Clearly different values: doubled, tripled, halved, or raised by two units of the leading digit."""
    unit = 10.0**-decimals
    if value == 0:
        options = [unit, 5 * unit, 10 * unit]
    else:
        options = [value * 2, value * 3, value / 2]
        if value >= 1:
            options.append(value + 2 * 10 ** math.floor(math.log10(value)))
    # A share above 100% would read as nonsense rather than as an error.
    return [v for v in options if v >= unit and not (percent and value <= 100 < v)]


def _format_like(value: float, template: str) -> str:
    body = template.rstrip("%")
    decimals = len(body.split(".")[1]) if "." in body else 0
    text = f"{value:,.{decimals}f}" if "," in body else f"{value:.{decimals}f}"
    return text + ("%" if template.endswith("%") else "")


def _number_edits(m: re.Match[str], taken: set[float]) -> _Site:
    old = m.group()
    body = old.rstrip("%")
    decimals = len(body.split(".")[1]) if "." in body else 0
    value = float(body.replace(",", ""))
    edits = []
    for new in unique(_format_like(v, old) for v in _rescaled(value, decimals, old.endswith("%"))):
        new_value = number_value(new)
        # A result that looks like a year would read as a date change.
        if new != old and new_value != value and new_value not in taken and not is_year(new):
            edits.append(_Edit(m.start(), m.end(), new, "numerical_exaggeration"))
    return edits


def _number_word_edits(m: re.Match[str], taken: set[float]) -> _Site:
    value = _WORDS.number_words[m.group().lower()]
    options = unique(v for v in (value * 2, value * 3, value // 2, value + 3) if 2 <= v <= 12 and v != value)
    return [
        _Edit(m.start(), m.end(), match_case(m.group(), _WORD_FOR_NUMBER[v]), "numerical_exaggeration")
        for v in options
        if float(v) not in taken
    ]


# paraphrase (negation flip)

_WORD_RE = re.compile(r"(?<![\w'’-])[A-Za-z]+(?:['’][A-Za-z]+)?(?![\w'’-])")
_AUX_RE = re.compile(rf"(?<![\w'’-])({'|'.join(_WORDS.auxiliaries)})(?![\w'’-])(\s+)(\S+)")
_ANTONYMS = _WORDS.antonyms


def _previous_word(text: str, position: int) -> str:
    words = re.findall(r"[\w'’]+", text[:position])
    return words[-1].lower() if words else ""


def _paraphrase_sites(text: str, source: str, donors: Sequence[str], find: EntityFinder) -> list[_Site]:
    return [site for site in (*_negation_removals(text), *_not_insertions(text), *_antonym_swaps(text)) if site]


def _negation_removals(text: str) -> list[_Site]:
    sites: list[_Site] = []
    for m in re.finditer(r"(?<![\w'’-])(not|never|no longer)\s+(?=([A-Za-z0-9$]\w*))", text):
        following, previous = m.group(2).lower(), _previous_word(text, m.start())
        contrastive = text[: m.start()].rstrip().endswith(",")  # "in Q3, not 1%": dropping "not" breaks it
        if m.group(1) == "not" and (following == "only" or previous in {"or", "if"} or contrastive):
            continue
        if m.group(1) == "never" and following in {"before", "again"}:
            continue
        sites.append([_Edit(m.start(), m.end(), "", "negation_flip")])
    for m in _WORD_RE.finditer(text):
        word = m.group().lower().replace("’", "'")
        if word in _WORDS.contractions:
            positive = match_case(m.group(), _WORDS.contractions[word])
            sites.append([_Edit(m.start(), m.end(), positive, "negation_flip")])
        elif word in _WORDS.negative_swaps and m.group().islower():
            following = re.match(r"\s+([a-z]+)", text[m.end() :])
            if word == "no" and (following is None or following.group(1) in _WORDS.no_blockers):
                continue
            sites.append([_Edit(m.start(), m.end(), _WORDS.negative_swaps[word], "negation_flip")])
    return sites


def _takes_not(aux: str, following: str, previous: str) -> bool:
    """Whether "not" can follow ``aux`` here: it must be an auxiliary, not a noun ("the will") or a main verb."""
    if previous in _WORDS.determiners or is_negation(following) or not re.match(r"[a-z0-9$\"“(]", following):
        return False
    word = following.lower()
    if aux in _WORDS.perfect_auxiliaries:
        return word in _WORDS.irregular_participles or word.endswith(("ed", "en", "wn"))
    if aux in _WORDS.do_auxiliaries:
        plain_verb = word.isalpha() and word.islower() and not word.endswith(("s", "ed", "ly"))
        return plain_verb and word not in _WORDS.do_objects
    return True


def _not_insertions(text: str) -> list[_Site]:
    sites = []
    for m in _AUX_RE.finditer(text):
        aux, following = m.group(1), m.group(3)
        if not _takes_not(aux, following, _previous_word(text, m.start())):
            continue
        if aux == "can":
            sites.append([_Edit(m.start(1), m.end(1), "cannot", "negation_flip")])
        else:
            sites.append([_Edit(m.start(3), m.start(3), "not ", "negation_flip")])
    return sites


def _antonym_swaps(text: str) -> list[_Site]:
    sites = []
    for m in _WORD_RE.finditer(text):
        word = m.group()
        # A capitalised word mid-sentence is part of a name ("Lost Horizon"), not a verb to flip.
        if word.lower() not in _ANTONYMS or (word[0].isupper() and not at_sentence_start(text, m.start())):
            continue
        opposites = _ANTONYMS[word.lower()]
        sites.append([_Edit(m.start(), m.end(), match_case(word, a), "negation_flip") for a in opposites])
    return sites


# presupposition injection and unanswerable wrapping


def _end_position(text: str) -> int | None:
    """Where an appended phrase goes: before the final punctuation; ``None`` if the claim ends in a quote,
    a bracket or a dangling comma, where an appended phrase would land in the wrong place."""
    position = len(text.rstrip(".!?…"))
    body = text[:position]
    if not body or body[-1] in "\"'“”‘’)]},;:-":
        return None
    return position


def _appended(text: str, source: str, templates: Sequence[str], category: ErrorType) -> list[_Site]:
    position = _end_position(text)
    if position is None:
        return []
    fresh = [t for t in templates if t.strip(" ,").lower() not in source.lower()]
    return [[_Edit(position, position, t, category) for t in fresh]] if fresh else []


def _presupposition_sites(text: str, source: str, donors: Sequence[str], find: EntityFinder) -> list[_Site]:
    sites = _appended(text, source, _WORDS.scope_templates, "scope_inflation")
    adverbs = [a for a in _WORDS.intensifiers if not contains_word(text, a) and not contains_word(source, a)]
    for m in _WORD_RE.finditer(text):
        if m.group() not in _WORDS.gradable_verbs or at_sentence_start(text, m.start()):
            continue
        if _previous_word(text, m.start()).endswith("ly"):  # already modified by an adverb
            continue
        sites.append([_Edit(m.start(), m.start(), f"{a} ", "scope_inflation") for a in adverbs])
    return [site for site in sites if site]


def _unanswerable_sites(text: str, source: str, donors: Sequence[str], find: EntityFinder) -> list[_Site]:
    return _appended(text, source, _WORDS.fabrication_templates, "fabrication")


_SITE_FINDERS: dict[Strategy, _SiteFinder] = {
    "entity_confusion": _entity_confusion_sites,
    "numerical_perturbation": _numerical_sites,
    "multi_hop_graft": _multi_hop_graft_sites,
    "paraphrase": _paraphrase_sites,
    "presupposition_injection": _presupposition_sites,
    "unanswerable_wrapping": _unanswerable_sites,
}
