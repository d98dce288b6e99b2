"""Weak-model mode (issue 25 §6): a weak judge's reply is decoded under a schema built from the step's evidence.
Stage C's quote is ``""`` or an evidence sentence of 5-20 words (exactly what stage C accepts), reasoning is short,
and a judge outside weak-model mode gets the plain schema (checked with lm-format-enforcer, the embedded
backend's enforcer)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evigraph.agents.stepgap.claims import validate_quote
from evigraph.agents.stepgap.decoding import REASONING_CHARS, judgement_schema, quote_choices
from evigraph.agents.stepgap.schemas import StepGapConfig, StepJudgement
from evigraph.graphs.stepgap_checker import build_checker_graph
from evigraph.trajectory import Evidence
from tests.agents.stepgap.doubles import FakeNLI, judgement
from tests.doubles import JsonGuidedScripted, fits_json_guide

TEXT = (
    "The ferry to Skye left Mallaig at dawn. It carried 25 cars. Crossings take about 30 minutes in calm weather "
    "and longer when the wind blows from the west across the Sound of Sleat."
)
EVIDENCE = [Evidence(id="ferry", title="Skye ferry", text=TEXT)]
QUOTE = "The ferry to Skye left Mallaig at dawn."


def test_the_quotes_offered_are_the_ones_stage_c_accepts() -> None:
    quotes = quote_choices(EVIDENCE, max_chars=600, min_words=5, max_words=20)
    assert quotes == [
        QUOTE,  # "It carried 25 cars." has 4 words: too short to count
        "Crossings take about 30 minutes in calm weather and longer when the wind blows from the west across the Sound",
    ]  # the third sentence cut to 20 words
    assert all(validate_quote(q, EVIDENCE) for q in quotes)
    shown = quote_choices(EVIDENCE, max_chars=30, min_words=5, max_words=20)
    assert shown == ["The ferry to Skye left Mallaig"]  # the passage as the judge sees it: 30 characters


@pytest.mark.parametrize(
    ("quote", "fits"),
    [
        (QUOTE, True),
        ("", True),  # no quote found
        ("It carried 25 cars.", False),
        ("Whiplash is a 2014 American film written and directed by Damien Chazelle.", False),  # not this evidence
        ("the question asks who wrote a novel", False),  # the prompt's own example
    ],
)
def test_the_single_call_schema_ties_the_quote_to_the_evidence(quote: str, fits: bool) -> None:
    reply = judgement(match=True, found=bool(quote), quote=quote)
    assert fits_json_guide(judgement_schema(EVIDENCE), reply) is fits
    StepJudgement.model_validate_json(reply)  # the narrowed schema is still the judge's object


def test_reasoning_is_short_and_each_stage_has_its_own_schema() -> None:
    long = json.loads(judgement())
    long["step_minus1_alignment"]["alignment_reasoning"] = "x" * (REASONING_CHARS + 1)
    assert not fits_json_guide(judgement_schema(EVIDENCE), json.dumps(long))
    stage_c = json.loads(judgement(found=True, quote=QUOTE))["step_1_quote_search"]
    assert fits_json_guide(judgement_schema(EVIDENCE, stage="C"), json.dumps(stage_c))
    assert not fits_json_guide(judgement_schema(EVIDENCE, stage="C"), json.dumps({**stage_c, "evidence_quote": "x"}))
    stage_a = json.loads(judgement())["step_minus1_alignment"]
    assert fits_json_guide(judgement_schema(EVIDENCE, stage="A"), json.dumps(stage_a))


def _check(judge: Any, **config: Any) -> Any:
    trace = {"question": "How many cars did the Skye ferry carry?", "steps": [
        {"reasoning": "The ferry carried cars.", "query": "Skye ferry", "evidence": [e.model_dump() for e in EVIDENCE]},
    ]}  # fmt: skip
    graph = build_checker_graph(judge, nli=FakeNLI(), config=StepGapConfig(**config))
    return asyncio.run(graph.ainvoke({"trace": trace}))["checks"].steps[0]


@pytest.mark.parametrize("mode", ["single", "per_stage"])
def test_a_weak_judge_decodes_under_the_evidence_schema(mode: str) -> None:
    reply = judgement(found=True, quote=QUOTE)
    sections = json.loads(reply)
    replies = [reply] if mode == "single" else [json.dumps(s) for s in sections.values()]
    weak = JsonGuidedScripted(replies)
    weak.constrained = True
    check = _check(weak, judge_mode=mode)
    assert check.quote == QUOTE and check.error is None
    schemas = [json.dumps(call.params.guide.json_schema) for call in weak.calls]
    assert len(schemas) == (1 if mode == "single" else 3) and QUOTE in schemas[-1]  # the call that asks stage C

    strong = JsonGuidedScripted(replies)  # not in weak-model mode: the judge's plain schema
    _check(strong, judge_mode=mode)
    assert all(QUOTE not in json.dumps(call.params.guide.json_schema) for call in strong.calls)
