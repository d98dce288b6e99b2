"""Weak-model mode (issue 25 §6): nothing of the prompt's skeleton fits RAG-Zeval's reply schema. Each item's
``answer`` is the start of that answer, and an answer has no more claims than clauses (checked with
lm-format-enforcer, the embedded backend's enforcer)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evigraph.agents.rag_zeval.prompts import reply_schema, show
from tests.doubles import fits_json_guide

QUESTION = "How many cars does the Skye ferry carry?"
REFERENCE = "The ferry to Skye left Mallaig at dawn. It carried 25 cars."
ANSWERS = ["It carries 25 cars.", "The ferry carries 40 cars, and it leaves at dawn."]
SCHEMA = reply_schema(show(QUESTION, REFERENCE, ANSWERS), ("A", "B"))


def _claim(text: str) -> dict[str, Any]:
    return {"claim": text, "is_supported": False, "grounding_evidence": [], "analysis": "The count differs."}


def _reply(answer_a: str = "It carries 25 cars.", claims_a: list[str] | None = None) -> str:
    items = [
        {"id": "A", "answer": answer_a, "atomic_claims": [_claim(c) for c in claims_a or ["It carries 25 cars."]]},
        {"id": "B", "answer": "The ferry carries 40 cars, and it", "atomic_claims": [_claim("and it leaves at dawn.")]},
    ]
    return json.dumps(items, indent=1)


def test_a_reply_built_from_the_answers_fits() -> None:
    assert fits_json_guide(SCHEMA, _reply())


@pytest.mark.parametrize(
    ("answer", "claims"),
    [
        ("the text of answer A", None),  # the skeleton's words, which a 135M model copied into every item
        ("It carries", None),  # the answer's start is given whole (up to 40 characters)
        (None, ["one self-contained statement taken from answer A"]),
        (None, ["It carries 25 cars.", "It carries 25 cars."]),  # one clause: one claim
    ],
)
def test_the_skeleton_and_extra_claims_do_not_fit(answer: str | None, claims: list[str] | None) -> None:
    assert not fits_json_guide(SCHEMA, _reply(answer or "It carries 25 cars.", claims))
