"""Weak-model mode (issue 25 §6): what the embedded model writes is tied to its input. A step's header checks one
of the response's own clauses, its quote is a source sentence, its evaluation one of three verdicts; the worked
example's texts are refused for an input unlike it, and the example itself fits the guide of its own texts."""

from __future__ import annotations

import re

import pytest

from evigraph.agents.rlseek.decoding import BACKED, CONTRADICTED, UNSUPPORTED, detection_guide
from evigraph.agents.rlseek.prompts import (
    DEMONSTRATION_RESPONSE,
    DEMONSTRATION_SOURCE,
    demonstration_reply,
    detection_prompt,
    render,
)

SOURCE = "The Nile flows north through Egypt. It ends in the Mediterranean Sea."
RESPONSE = "The Nile flows south through Egypt and ends in the Red Sea."
ENDING = '## Final Output\n```json\n{"hallucination list": ["and ends in the Red Sea."]}\n```'


def _step(n: int, header: str, quote: str, verdict: str) -> str:
    return f"## Step {n}: {header}\n- Evidence: <quote>{quote}</quote>\n- Evaluation: {verdict}\n"


GOOD = (
    _step(1, 'Check "The Nile flows south through Egypt"', "The Nile flows north through Egypt.", CONTRADICTED)
    + _step(2, 'Check "and ends in the Red Sea."', "It ends in the Mediterranean Sea.", UNSUPPORTED)
    + ENDING
)


@pytest.mark.parametrize("task", ["summary", "claim"])
def test_the_demonstration_fits_the_guide_of_its_own_texts(task: str) -> None:
    guide = detection_guide(task, source=DEMONSTRATION_SOURCE, response=DEMONSTRATION_RESPONSE)  # type: ignore[arg-type]
    assert re.fullmatch(guide, demonstration_reply(task))  # type: ignore[arg-type]
    texts = render(task, DEMONSTRATION_SOURCE, DEMONSTRATION_RESPONSE)  # type: ignore[arg-type]
    assert demonstration_reply(task) in detection_prompt(task, texts, demonstration=True)  # type: ignore[arg-type]


def test_headers_are_the_responses_own_clauses() -> None:
    pattern = re.compile(detection_guide("summary", source=SOURCE, response=RESPONSE))
    assert pattern.fullmatch(GOOD)
    copied = [
        ('Check "The Nile flows south through Egypt"', 'Check "330 metres tall"'),  # the example's header
        ('Check "The Nile flows south through Egypt"', 'Check "The Eiffel Tower is 330 metres tall"'),
        ('Check "The Nile flows south through Egypt"', 'Check "The Nile flows south"'),  # not a whole clause
        ('Check "The Nile flows south through Egypt"', "Check the direction"),  # free words
        ("<quote>The Nile flows north through Egypt.</quote>", "<quote>It is 330 metres tall.</quote>"),
        (CONTRADICTED, "The source says 1889, not 1899, so this part is a hallucination."),
        ('["and ends in the Red Sea."]', '["and was completed in 1899."]'),
    ]
    for ours, theirs in copied:
        assert not pattern.fullmatch(GOOD.replace(ours, theirs, 1)), theirs


def test_step_n_checks_the_nth_clause_or_a_later_one() -> None:
    pattern = re.compile(detection_guide("summary", source=SOURCE, response=RESPONSE))
    repeated = GOOD.replace('Check "and ends in the Red Sea."', 'Check "The Nile flows south through Egypt"')
    assert not pattern.fullmatch(repeated)  # a greedy model's repeat of the first clause
    skipped = GOOD.replace('Check "The Nile flows south through Egypt"', 'Check "and ends in the Red Sea."')
    assert pattern.fullmatch(skipped)  # step 1 may skip ahead
    third = _step(3, 'Check "and ends in the Red Sea."', "It ends in the Mediterranean Sea.", BACKED)
    assert not pattern.fullmatch(GOOD.replace(ENDING, third + ENDING))  # two clauses, so two steps at most


def test_without_usable_pieces_the_guide_falls_back_to_free_text() -> None:
    pattern = re.compile(detection_guide("summary", source="«»", response="“”"))
    reply = _step(1, "Check the direction", "flows north", BACKED)
    assert pattern.fullmatch(reply + '## Final Output\n```json\n{"hallucination list": ["south"]}\n```')
