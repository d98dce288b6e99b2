"""StepGap's codes in words, for people reading a check (``evigraph check``, reports): the gap labels and every
``pipeline_path`` decision of specs/stepgap.md §2.6 (and the NLI-only checker's ``nliOnly:*`` entries).

The tree: A asks whether the step stays on the question, B whether an abstention is right, C whether the
evidence is about the step's entity and holds a verbatim quote for it, D whether that quote entails the step's
claim, E whether an earlier step's evidence does (for a conclusion with no quote of its own).
"""

from __future__ import annotations

from typing import Final

from evigraph.agents.stepgap.labels import GapLabel, StepKind

__all__ = ("LABEL_WORDS", "STAGE_NAMES", "explain_entry", "explain_path")

LABEL_WORDS: Final[dict[GapLabel, str]] = {
    "no-gap": "no gap",
    "CC": "contradicted claim: retract it",
    "IE": "irrelevant evidence: search again",
    "MB": "missing bridge: search for the linking fact",
}
"""Each label and the repair it calls for."""

STAGE_NAMES: Final[dict[str, str]] = {
    "A": "alignment",
    "B": "abstention",
    "C": "entity and quote",
    "D": "quote entails claim",
    "E": "earlier evidence entails claim",
    "nliOnly": "NLI on the step's evidence",
}

_DECISIONS: Final[dict[tuple[str, str], str]] = {
    ("A", "on_target"): "the step stays on the question",
    ("A", "entity_drift"): "the step is about another entity than the question's",
    ("A", "relation_drift"): "the step asks for another kind of fact than the question",
    ("A", "scope_drift"): "the step strays outside the question's scope",
    ("B", "not_abstention"): "the step does not abstain",
    ("B", "grounded_abstention"): "the step abstains, and the evidence indeed lacks the fact",
    ("B", "wrong_abstention"): "the step abstains although the evidence holds the answer",
    ("C", "entity_mismatch"): "the evidence is about another entity",
    ("C", "quote_found"): "a verbatim quote of the evidence backs the step",
    ("C", "no_quote"): "no verbatim quote of the evidence backs the step",
    ("D", "entailment"): "the quote entails the claim",
    ("D", "neutral"): "the quote neither entails nor contradicts the claim",
    ("D", "contradiction"): "the quote contradicts the claim",
    ("E", "entailed"): "an earlier step's evidence entails the claim",
    ("E", "no_entailing_prior"): "no earlier evidence entails the claim",
    ("nliOnly", "entailment"): "the evidence entails the claim",
    ("nliOnly", "neutral"): "the evidence does not settle the claim",
    ("nliOnly", "contradiction"): "the evidence contradicts the claim",
    ("nliOnly", "no_evidence"): "the step has no evidence to test",
    ("nliOnly", "no_claim"): "the step asserts nothing to test",
}


_NO_QUOTE: Final[dict[StepKind, str]] = {
    "inference": ", which a search step does not need (its query asserts nothing to test)",
    "conclusion": ", so earlier steps' evidence is tried (E)",
}


def explain_entry(entry: str, kind: StepKind | None = None) -> str:
    """One ``pipeline_path`` entry in words (a missing quote says what follows for a step of ``kind``); an
    unknown code is returned as written.

    >>> explain_entry("stageD:neutral")
    'D (quote entails claim): the quote neither entails nor contradicts the claim'
    >>> explain_entry("stageC:no_quote", "conclusion")
    "C (entity and quote): no verbatim quote of the evidence backs the step, so earlier steps' evidence is tried (E)"
    >>> explain_entry("stageZ:odd")
    'stageZ:odd'
    """
    prefix, _, decision = entry.strip().partition(":")
    stage = prefix.removeprefix("stage") if prefix.startswith("stage") else prefix
    words = _DECISIONS.get((stage, decision))
    if words is None:
        return entry.strip()
    if (stage, decision) == ("C", "no_quote") and kind is not None:
        words += _NO_QUOTE[kind]
    return f"{stage} ({STAGE_NAMES[stage]}): {words}"


def explain_path(path: str, kind: StepKind | None = None) -> list[str]:
    """Every entry of a ``pipeline_path`` in words, in the order the stages ran.

    >>> explain_path("stageA:on_target, stageB:not_abstention, stageC:entity_mismatch")[-1]
    'C (entity and quote): the evidence is about another entity'
    """
    return [explain_entry(entry, kind) for entry in path.split(",") if entry.strip()]
