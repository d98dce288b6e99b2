"""Weak-model mode (issue 25 §6): a weak model's verdict is decoded under a schema built from its claim and source.
Spans are pieces of those texts, an alignment's status and its source span agree, and only a Not Attributable
verdict names an error type and a fix (checked with lm-format-enforcer, the embedded backend's enforcer)."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from evigraph.agents.seva.decoding import claim_pieces, source_pieces, verdict_schema
from evigraph.agents.seva.prompts import show
from evigraph.agents.seva.schemas import SevaConfig
from evigraph.graphs.kit.context import RunContext
from evigraph.graphs.seva import build_seva_graph
from tests.doubles import JsonGuidedScripted, fits_json_guide

CLAIM = "The ferry to Skye carried 40 cars at dawn."
SOURCE = "The ferry to Skye left at dawn. It carried 25 cars and a bus."
VERDICT: dict[str, Any] = {
    "evidence_alignment": [
        {"claim_span": "to Skye carried 40 cars", "source_span": "It carried 25 cars", "status": "mismatch"},
        {"claim_span": "at dawn.", "source_span": "at dawn.", "status": "match"},
    ],
    "reasoning_chain": [
        {"claim_part": "to Skye carried 40 cars", "source_evidence": "It carried 25 cars", "judgment": "not_supported",
         "explanation": "25 cars, not 40."},
        {"claim_part": "at dawn.", "source_evidence": "The ferry to Skye left at dawn.", "judgment": "supported",
         "explanation": "Same time of day."},
    ],
    "label": "Not Attributable", "confidence": 0.8, "error_type": "numerical_exaggeration",
    "fix_suggestion": "Say 25 cars.",
}  # fmt: skip
SCHEMA = verdict_schema(show(CLAIM, SOURCE))


def _fits(verdict: dict[str, Any]) -> bool:
    return fits_json_guide(SCHEMA, json.dumps(verdict, indent=1))


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    verdict = copy.deepcopy(VERDICT)
    target = verdict
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return verdict


def test_the_pieces_are_the_texts_own() -> None:
    assert claim_pieces(CLAIM) == ["The ferry to Skye carried 40 cars at dawn.", "The ferry", "to Skye carried 40 cars",
                                   "at dawn."]  # fmt: skip
    assert {"It carried 25 cars", "The ferry to Skye left at dawn."} <= set(source_pieces(SOURCE))
    assert _fits(VERDICT)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("evidence_alignment", 0, "claim_span"), "opened to traffic in 1932"),  # the teacher example's words
        (("evidence_alignment", 0, "claim_span"), "to Skye carried forty cars"),  # not verbatim
        (("evidence_alignment", 0, "source_span"), "Construction of the bridge began in 1926"),
        (("reasoning_chain", 1, "source_evidence"), "It carried 40 cars"),  # not in the source
        (("reasoning_chain", 0, "claim_part"), "a national record"),
        (("evidence_alignment", 0, "status"), "not_found"),  # not_found comes with an empty source span
        (("evidence_alignment", 0, "source_span"), ""),  # and only it
        (("error_type",), None),  # a Not Attributable verdict names its error
        (("label",), "Attributable"),  # an Attributable one does not
    ],
)
def test_the_schema_refuses_what_is_not_tied_to_the_input(path: tuple[Any, ...], value: Any) -> None:
    assert not _fits(_with(path, value))


def test_an_attributable_verdict_has_no_error_type_or_fix() -> None:
    attributable = {**{k: VERDICT[k] for k in ("evidence_alignment", "reasoning_chain")}, "label": "Attributable"}
    assert _fits({**attributable, "confidence": 0.6})
    assert not _fits({**attributable, "confidence": 0.6, "error_type": "fabrication"})
    assert not _fits({**attributable, "confidence": 0.6, "fix_suggestion": "None needed."})
    missing = {"claim_span": "to Skye carried 40 cars", "source_span": "", "status": "not_found"}
    assert _fits({**attributable, "confidence": 0.6, "evidence_alignment": [missing]})


def test_a_guided_run_sends_the_schema_of_its_own_texts() -> None:
    generator = JsonGuidedScripted([json.dumps(VERDICT)])
    graph = build_seva_graph(None, config=SevaConfig(guided=True))
    result = asyncio.run(graph.ainvoke({"claim": CLAIM, "source": SOURCE}, context=RunContext(generator=generator)))
    assert generator.calls[0].params.guide.json_schema == SCHEMA
    assert result["output"].label == "Not Attributable" and all(s.found for s in result["output"].source_spans)
