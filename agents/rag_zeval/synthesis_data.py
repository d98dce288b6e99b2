"""Inputs of RAG-Zeval's response synthesis (specs/rag-zeval.md §2.4, §6): questions with a grounding passage.

:func:`load_items` recognises the format per line (unknown keys ignored):

- ours: ``{"id", "question", "passage", "dataset"?}`` (``dataset`` defaults to the file's stem);
- HotpotQA in IRCoT's processed form (``question_id``, ``question_text``, ``contexts``): the passage is the
  ``is_supporting`` paragraphs in file order, one per line, runs of whitespace collapsed (the release joins
  sentences with two spaces); dataset ``hotpotqa``.

Veri-R1's claim-verification files are refused with an explanation: their ``question`` field is a claim (a
statement to verify), not a question, and "Answer:" continuations of a claim are not answers whose grounding
could be ranked. Convert such data into our form with real questions instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evigraph.errors import ConfigError, InputDataError
from evigraph.jsonl import format_validation_error, iter_json_objects

__all__ = ("SynthesisItem", "item_from_mapping", "load_items")


class SynthesisItem(BaseModel):
    """A question with its grounding passage."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    passage: str = Field(min_length=1)
    dataset: str = "items"

    @field_validator("question", "passage")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("is blank")
        return text

    @property
    def source(self) -> str:
        return f"{self.dataset}:{self.id}"


def _hotpotqa(data: dict[str, Any]) -> SynthesisItem:
    identifier, question, contexts = data["question_id"], data["question_text"], data["contexts"]
    if not isinstance(contexts, list):
        raise ValueError("field contexts: expected a list of paragraphs")
    paragraphs = []
    for position, context in enumerate(contexts):
        if not isinstance(context, dict) or not isinstance(context.get("paragraph_text"), str):
            raise ValueError(f"field contexts.{position}.paragraph_text: missing or not a string")
        if context.get("is_supporting") is True:
            paragraphs.append(" ".join(context["paragraph_text"].split()))
    if not any(paragraphs):
        raise ValueError("field contexts: no paragraph has is_supporting = true")
    return SynthesisItem(id=identifier, question=question, passage="\n".join(paragraphs), dataset="hotpotqa")


def item_from_mapping(data: dict[str, Any], *, dataset: str = "items") -> SynthesisItem:
    """One input line as an item (see the module docstring); ``dataset`` names our lines without one.

    Raises:
        ValueError / KeyError / ValidationError: naming the bad or missing field.
    """
    if "golden_answers" in data:
        raise ValueError(
            "a Veri-R1 claim-verification record: its 'question' is a claim to verify, not a question, so it "
            "cannot seed question answering; convert it to {id, question, passage} with a real question"
        )
    if "question_text" in data or "contexts" in data:
        return _hotpotqa(data)
    return SynthesisItem.model_validate({"dataset": dataset, **data})


def load_items(path: str | Path) -> list[SynthesisItem]:
    """Every item of the JSONL file ``path``.

    Raises:
        ConfigError: ``path`` is not a file.
        InputDataError: ``file:line`` and the bad field, a duplicate id, or an empty file.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such input file: {path}" if not path.exists() else f"not a file: {path}")
    items: list[SynthesisItem] = []
    first_line: dict[str, int] = {}
    for number, data in iter_json_objects(path):
        try:
            item = item_from_mapping(data, dataset=path.stem)
        except ValidationError as error:
            raise InputDataError(str(path), number, format_validation_error(error)) from None
        except KeyError as error:
            raise InputDataError(str(path), number, f"field {error.args[0]}: missing") from None
        except (ValueError, TypeError) as error:
            raise InputDataError(str(path), number, str(error)) from None
        if item.id in first_line:
            raise InputDataError(str(path), number, f"field id: duplicate id {item.id!r} (line {first_line[item.id]})")
        first_line[item.id] = number
        items.append(item)
    if not items:
        raise InputDataError(str(path), 1, "no item in the file")
    return items
