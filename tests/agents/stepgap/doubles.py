"""Test doubles for StepGap: a scripted judge answering per step, and a rule-based NLI."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evigraph.generators.scripted import ScriptedGenerator


@dataclass(frozen=True)
class Verdict:
    label: str
    p_entailment: float
    p_neutral: float
    p_contradiction: float
    engine: str = "fake-nli"


ENTAIL = Verdict("ENTAILMENT", 0.9, 0.07, 0.03)
NEUTRAL = Verdict("NEUTRAL", 0.2, 0.7, 0.1)
CONTRADICT = Verdict("CONTRADICTION", 0.05, 0.15, 0.8)


class FakeNLI:
    """Labels a pair by the first rule whose premise fragment occurs in the premise; NEUTRAL otherwise."""

    engine = "fake-nli"

    def __init__(self, rules: dict[str, Verdict] | None = None) -> None:
        self.rules = rules or {}
        self.pairs: list[tuple[str, str]] = []

    def batch_classify(self, pairs: list[tuple[str, str]]) -> list[Verdict]:
        self.pairs += pairs
        return [next((v for k, v in self.rules.items() if k in p), NEUTRAL) for p, _ in pairs]


def judgement(
    *,
    off: bool = False,
    drift: str = "none",
    abstention: bool = False,
    accurate: bool = False,
    match: bool = True,
    found: bool = False,
    quote: str = "",
) -> str:
    return json.dumps(
        {
            "step_minus1_alignment": {"is_off_target": off, "drift_type": drift, "alignment_reasoning": "r-A"},
            "step_0_abstention_check": {
                "is_abstention_step": abstention,
                "abstention_is_accurate": accurate,
                "abstention_reasoning": "r-B",
            },
            "step_1_quote_search": {
                "entity_match": match,
                "entity_match_reasoning": "r-C1",
                "found_quote": found,
                "evidence_quote": quote,
                "quote_search_reasoning": "r-C2",
            },
        }
    )


def context_of(prompt: str) -> dict[str, Any]:
    """The JSON context object of a judge prompt."""
    return json.JSONDecoder().raw_decode(prompt, prompt.index("CONTEXT\n") + 8)[0]


def judge_by_step(replies: dict[str, str]) -> ScriptedGenerator:
    """A judge that answers each step by a marker found in the step under review."""

    def reply(transcript: list[Any], params: Any) -> str:
        prompt = transcript[0].text
        step = context_of(prompt)["step_under_review"]
        return next(v for k, v in replies.items() if k in step)

    return ScriptedGenerator(reply)
