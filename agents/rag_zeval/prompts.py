"""RAG-Zeval's evaluator prompt (specs/rag-zeval.md §2.1), written for this project.

The question, the reference and every candidate are untrusted: each is escaped
(:func:`~evigraph.protocol.escaping.escape_untrusted`, ``<`` becomes ``‹``) and sits in a tag-delimited slot it
cannot close, so a candidate cannot forge another candidate's block or end the context early. Escaping keeps
offsets, and the evidence reward compares evidence with the reference *as shown* (:class:`Shown`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import Any, NamedTuple

from evigraph.agents.rag_zeval.parsing import CLAIM_FIELDS, ITEM_FIELDS
from evigraph.agents.rag_zeval.schemas import LETTERS, ReferenceKind
from evigraph.protocol.escaping import escape_untrusted
from evigraph.protocol.guides import choice_schema, clause_choices, sentence_choices, verbatim_choices
from evigraph.trajectory import Segment

__all__ = ("Shown", "assign_letters", "content_key", "evaluator_prompt", "evaluator_transcript", "reply_schema", "show")

_SKELETON = [
    {
        "id": "A",
        "answer": "the text of answer A",
        "atomic_claims": [
            {
                "claim": "one self-contained statement taken from answer A",
                "is_supported": True,
                "grounding_evidence": ["a context sentence copied word for word"],
                "analysis": "why the context backs, contradicts or is silent on this claim",
            }
        ],
    }
]

_UNQUOTABLE = '"\\<>'
"""Characters a guided choice may not hold: JSON string delimiters and escapes, and tag brackets."""

_REFERENCE_NAMES: dict[ReferenceKind, str] = {
    "faithfulness": "retrieved passages",
    "correctness": "reference answer",
}


class Shown(NamedTuple):
    """The inputs as the model sees them (escaped, same offsets as the originals)."""

    question: str
    reference: str
    candidates: tuple[str, ...]


def show(question: str, reference: str, candidates: Sequence[str]) -> Shown:
    return Shown(
        escape_untrusted(question).text,
        escape_untrusted(reference).text,
        tuple(escape_untrusted(c).text for c in candidates),
    )


def evaluator_prompt(shown: Shown, letters: Sequence[str], *, kind: ReferenceKind = "faithfulness") -> str:
    """The one user turn: role, inputs, the five duties per answer, and the JSON skeleton.

    ``letters[i]`` labels ``shown.candidates[i]``; blocks are written in letter order, so a shuffled
    assignment is a shuffled presentation.
    """
    order = sorted(range(len(letters)), key=lambda i: letters[i])
    blocks = "\n\n".join(f'<answer id="{letters[i]}">\n{shown.candidates[i]}\n</answer>' for i in order)
    listed = ", ".join(sorted(letters))
    count = "is 1 answer" if len(letters) == 1 else f"are {len(letters)} answers"
    skeleton = json.dumps(_SKELETON, indent=2)
    return f"""\
You grade answers produced by a retrieval-augmented system. There {count} ({listed}) to one \
question. For each answer, decide how far the context below -- the {_REFERENCE_NAMES[kind]} -- backs what the \
answer says. Judge only from the context, never from what you know yourself, and be strict.

Question: <question>{shown.question}</question>

Context: <context>{shown.reference}</context>

{blocks}

Work through the answers in order. For each one:
1. Split it into atomic claims, at least one: each a standalone sentence that states exactly one fact, names \
things instead of using pronouns, does not repeat another claim, and together they cover the whole answer.
2. Mark a claim "is_supported": true only when the context states it directly; mark it false when the context \
contradicts it or does not mention it.
3. In "grounding_evidence", copy every context sentence that backs or contradicts the claim, character for \
character. Leave the list empty when the context says nothing about the claim. A supported claim always has \
evidence.
4. In "analysis", say briefly how clearly the context backs or contradicts the claim.
5. Output one JSON list with one object per answer, ids {listed}, that Python's json.loads can read, shaped \
like this (true and false are JSON booleans), and nothing else:
{skeleton}"""


def evaluator_transcript(
    shown: Shown, letters: Sequence[str], *, kind: ReferenceKind = "faithfulness"
) -> tuple[Segment, ...]:
    return (Segment(origin="prompt", role="user", text=evaluator_prompt(shown, letters, kind=kind)),)


def assign_letters(count: int, *, seed: int, key: str, shuffle: bool = True) -> tuple[str, ...]:
    """``letters[i]`` for candidate ``i``: a seeded shuffle per instance (``key``, e.g. the run id) so position
    and letter carry no information (§8, O5), reproducible for a fixed ``seed``."""
    if not 2 <= count <= len(LETTERS):
        raise ValueError(f"RAG-Zeval ranks 2 to {len(LETTERS)} candidates, got {count}")
    letters = list(LETTERS[:count])
    if shuffle:
        random.Random(f"{seed}:{key}").shuffle(letters)
    return tuple(letters)


def content_key(question: str, candidates: Sequence[str]) -> str:
    """A shuffle key for a run without an id: a digest of what it shows, so reruns present the same order."""
    digest = hashlib.sha256(json.dumps([question, *candidates], ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:16]


def reply_schema(shown: Shown, letters: Sequence[str], *, max_claims: int = 3) -> dict[str, Any]:
    """The JSON schema of a reply for guided decoding (weak-model mode, inference only): exactly one item per
    letter; the item of letter ``X`` repeats the start of answer ``X`` and holds 1 to ``max_claims`` claims (no
    more than the answer has clauses), each one of answer ``X``'s own clauses, with at most one evidence sentence
    taken verbatim from the reference, and a short analysis.

    A small model offered free strings copies the prompt's skeleton ("one self-contained statement ...") into
    every claim; offering the texts' own clauses and sentences (:func:`~evigraph.protocol.guides.verbatim_choices`)
    keeps it on them, so what it still decides is which claims the reference supports. Answers or references
    with no printable-ASCII piece fall back to bounded free strings. Rewards never use this schema: they read the
    raw reply strictly."""
    free = {"type": "string", "maxLength": 160}
    evidence = sentence_choices(shown.reference, max_chars=200, banned=_UNQUOTABLE)
    evidence_schema = {"type": "string", "enum": evidence} if evidence else free

    def item(index: int) -> dict[str, Any]:
        clauses = clause_choices(shown.candidates[index], max_chars=160, banned=_UNQUOTABLE)
        opening = verbatim_choices([shown.candidates[index]], max_chars=40, banned=_UNQUOTABLE)
        claim = {
            "type": "object",
            "properties": {
                "claim": {"type": "string", "enum": clauses} if clauses else free,
                "is_supported": {"type": "boolean"},
                "grounding_evidence": {"type": "array", "items": evidence_schema, "maxItems": 1},
                "analysis": {"type": "string", "maxLength": 80},
            },
            "required": list(CLAIM_FIELDS),
        }
        return {
            "type": "object",
            "properties": {
                "id": {"type": "string", "const": letters[index]},
                "answer": choice_schema(opening, max_chars=80),  # as free text it was the skeleton's words
                "atomic_claims": {
                    "type": "array",
                    "items": claim,
                    "minItems": 1,
                    "maxItems": min(max_claims, len(clauses) or max_claims),
                },
            },
            "required": list(ITEM_FIELDS),
        }

    items = [item(i) for i in sorted(range(len(letters)), key=lambda i: letters[i])]
    return {"type": "array", "items": {"anyOf": items}, "minItems": len(letters), "maxItems": len(letters)}
