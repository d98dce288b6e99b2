"""The two plain-text few-shot prompts of RAG-Zeval's response synthesis (specs/rag-zeval.md §2.4): with
passage (an instruction to answer from the passage, two demonstrations ``Question: / Passage: / Answer:``, then
the target ending in ``Answer:``) and without passage (the same demonstrations without passages).

No chat template is applied, even when the tokenizer has one: CAD (:mod:`evigraph.agents.rag_zeval.cad`) needs
both prompts to be continued by the very same token prefix, and the few-shot continuation ("the text after
``Answer:`` up to the next ``Question:``") is the format the responses and the stop rule (O12) are defined in; a
chat template would add model-specific system turns and end-of-turn markers. Kept apart from :mod:`.prompts` (the
evaluator's prompt, whose inputs are escaped as untrusted): these texts are fed raw to the generator.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = (
    "DEMONSTRATIONS",
    "Demonstration",
    "encode_prompts",
    "with_passage_prompt",
    "without_passage_prompt",
)


class Demonstration(BaseModel):
    """One few-shot example of the synthesis prompts."""

    model_config = ConfigDict(frozen=True)

    question: str
    passage: str
    answer: str


DEMONSTRATIONS: tuple[Demonstration, ...] = (
    Demonstration(
        question="who designed the first ferris wheel",
        passage=(
            "The first Ferris Wheel was the centrepiece of the Midway at the 1893 World's Columbian Exposition in "
            "Chicago. It was designed and built by George Washington Gale Ferris Jr., a bridge engineer from "
            "Pittsburgh, who wanted a structure that would outdo the Eiffel Tower of the 1889 Paris exposition. "
            "The wheel was 80 metres tall and carried 36 passenger cars."
        ),
        answer=(
            "The first Ferris Wheel was designed by George Washington Gale Ferris Jr., a Pittsburgh bridge "
            "engineer, for the 1893 World's Columbian Exposition in Chicago."
        ),
    ),
    Demonstration(
        question="where does the river shannon begin and end",
        passage=(
            "The River Shannon is the longest river in Ireland, at about 360 km. It rises at the Shannon Pot, a "
            "small pool on the slopes of Cuilcagh mountain in County Cavan, and flows southwards through Lough "
            "Ree and Lough Derg. Below Limerick it widens into the Shannon Estuary, through which it reaches the "
            "Atlantic Ocean."
        ),
        answer=(
            "The River Shannon begins at the Shannon Pot in County Cavan and ends in the Atlantic Ocean, which it "
            "reaches through the Shannon Estuary below Limerick."
        ),
    ),
)
"""Our two NQ-style demonstrations (lower-case question, Wikipedia-like passage, one-sentence answer)."""

WITH_PASSAGE_INSTRUCTION = (
    "Each question below comes with a passage. Answer the question using the information in its passage, "
    "in one or two complete sentences."
)
WITHOUT_PASSAGE_INSTRUCTION = "Answer each question below in one or two complete sentences."


def with_passage_prompt(question: str, passage: str) -> str:
    """The with-context prompt: instruction, the demonstrations with passages, then the target (``Answer:``
    last, no trailing space)."""
    blocks = [WITH_PASSAGE_INSTRUCTION]
    for demo in DEMONSTRATIONS:
        blocks.append(f"Question: {demo.question}\nPassage: {demo.passage}\nAnswer: {demo.answer}")
    blocks.append(f"Question: {question.strip()}\nPassage: {passage.strip()}\nAnswer:")
    return "\n\n".join(blocks)


def without_passage_prompt(question: str) -> str:
    """The no-context prompt: the same demonstrations without passages, then the target question."""
    blocks = [WITHOUT_PASSAGE_INSTRUCTION]
    for demo in DEMONSTRATIONS:
        blocks.append(f"Question: {demo.question}\nAnswer: {demo.answer}")
    blocks.append(f"Question: {question.strip()}\nAnswer:")
    return "\n\n".join(blocks)


def encode_prompts(tokenizer: Any, question: str, passage: str) -> tuple[list[int], list[int]]:
    """Token ids of the with-passage and the no-passage prompt (the tokenizer's usual special tokens, e.g. a
    BOS, included)."""
    with_ids = tokenizer(with_passage_prompt(question, passage))["input_ids"]
    without_ids = tokenizer(without_passage_prompt(question))["input_ids"]
    return list(with_ids), list(without_ids)
