"""RLSeek's prompts (specs/rlseek.md §2.1), written for this project, and the texts they render.

One instruction block serves the four task variants; only the nouns, the slots and (for the claim variant) the
answer form change. The ``seek`` variant adds the quoting instruction; ``cot`` is the baseline without it.

Every untrusted text (source, response, question) is escaped before rendering (P6: ``<`` becomes ``‹``), so it
can neither forge ``<quote>``/``<answer>`` nor close the tag-delimited slot it sits in; the escaped texts are
what the model quotes from and what quotes and spans are located in (escaping preserves offsets).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from evigraph.agents.rlseek.decoding import BACKED, CONTRADICTED
from evigraph.agents.rlseek.parsing import FINAL_KEY
from evigraph.agents.rlseek.protocol import QUOTE_PROTOCOL
from evigraph.agents.rlseek.schemas import PromptVariant, TaskType
from evigraph.wording import with_article

__all__ = (
    "DEMONSTRATION_RESPONSE",
    "DEMONSTRATION_SOURCE",
    "Rendered",
    "demonstration_reply",
    "detection_prompt",
    "render",
    "render_source",
    "requote_note",
)


class _Nouns(NamedTuple):
    source: str
    response: str
    source_tag: str
    response_tag: str


_NOUNS: dict[TaskType, _Nouns] = {
    "summary": _Nouns("original document", "summary", "document", "summary"),
    "qa": _Nouns("related passages", "answer", "passages", "answer_text"),
    "data-to-text": _Nouns("structured data", "article", "data", "article"),
    "claim": _Nouns("source material", "claim", "begin_of_content", "begin_of_claim"),
}


class Rendered(NamedTuple):
    """The texts as the model sees them (escaped); offsets into them are offsets into the originals."""

    source: str
    response: str
    question: str | None


def render_source(task: TaskType, source: str | dict[str, Any]) -> str:
    """The source text ``D`` (spec O5): data-to-text JSON as ``json.dumps(data, ensure_ascii=False)`` (key order
    as given, so one record always renders the same); text as it is.

    Raises:
        TypeError: a JSON object for a text task, or anything but a ``str``/``dict``.
    """
    if isinstance(source, dict):
        if task != "data-to-text":
            raise TypeError(f"{with_article(task)} source must be text; only data-to-text takes a JSON object")
        return json.dumps(source, ensure_ascii=False)
    if not isinstance(source, str):
        raise TypeError(f"the source must be text or (data-to-text) a JSON object, got {type(source).__name__}")
    return source


def render(task: TaskType, source: str | dict[str, Any], response: str, question: str | None = None) -> Rendered:
    """Escape the untrusted texts of one detection."""
    escape = QUOTE_PROTOCOL.escape
    shown_question = escape(question).text if question else None
    return Rendered(escape(render_source(task, source)).text, escape(response).text, shown_question)


_INTRO = """\
Check the {response} below against the {source} it was written from. Find every part of the {response} that \
the {source} contradicts, or that the {source} does not back up (a hallucination).
{question}
<{source_tag}>
{source_text}
</{source_tag}>

<{response_tag}>
{response_text}
</{response_tag}>

Work in steps. Start every step on a line of its own with "## Step N:" (N = 1, 2, 3 ...) followed by a few \
words on the part of the {response} it checks. Use as many steps as you need, all in this form.
"""

_SEEK = """\
In every step that checks a part of the {response}:
- first copy the passage of the {source} that bears most directly on that part, character for character, \
between <quote> and </quote>; copy only from the {source}, as short as you can while it still makes sense on \
its own (several quotes per step are fine);
- then argue from the quoted text whether the part is backed up, contradicted or unsupported; when the \
{source} lacks what would be needed, say what is missing and why that makes the part a hallucination;
- when the part is a hallucination, name each hallucinated piece of the {response} exactly as it is written.
"""

_COT = """\
In every step, check one part of the {response} and name each hallucinated piece exactly as it is written.
"""

_JSON_END = """\
Finish with a line "## Final Output" and a ```json block holding one object whose only key is \
"hallucination list": the list of hallucinated pieces, each copied exactly from the {response} (an empty list \
when there are none). Begin your reply with "##".
"""

_ANSWER_END = """\
Finish with <answer>[...]</answer>: a JSON list of the hallucinated pieces, each copied exactly from the \
{response} (an empty list, <answer>[]</answer>, when there are none). Begin your reply with "##".
"""

DEMONSTRATION_SOURCE = "The Eiffel Tower was completed in 1889. It is 330 metres tall."
DEMONSTRATION_RESPONSE = "The Eiffel Tower is 330 metres tall and was completed in 1899."
_DEMONSTRATION_STEPS = (
    ("The Eiffel Tower is 330 metres tall", "It is 330 metres tall.", BACKED),
    ("and was completed in 1899.", "The Eiffel Tower was completed in 1889.", CONTRADICTED),
)


def demonstration_reply(task: TaskType) -> str:
    """The worked example's reply: what the weak-model guide of the example's own texts admits (a header names a
    clause of the text, the evidence is a sentence of the source, the evaluation one of the fixed verdicts)."""
    steps = "".join(
        f'## Step {n}: Check "{clause}"\n- Evidence: <quote>{quote}</quote>\n- Evaluation: {verdict}\n'
        for n, (clause, quote, verdict) in enumerate(_DEMONSTRATION_STEPS, 1)
    )
    return steps + _demonstration_ending(task)


def detection_prompt(
    task: TaskType, texts: Rendered, *, variant: PromptVariant = "seek", demonstration: bool = False
) -> str:
    """The detector's prompt for one (already rendered) detection."""
    nouns = _NOUNS[task]
    question = f"\n<question>\n{texts.question}\n</question>\n" if task == "qa" and texts.question else ""
    fields = {"source": nouns.source, "response": nouns.response}
    parts = [
        _INTRO.format(
            **fields,
            question=question,
            source_tag=nouns.source_tag,
            response_tag=nouns.response_tag,
            source_text=texts.source,
            response_text=texts.response,
        ),
        (_SEEK if variant == "seek" else _COT).format(**fields),
        (_ANSWER_END if task == "claim" else _JSON_END).format(**fields),
    ]
    if demonstration:
        parts.append(
            f'\nFor example, with the source "{DEMONSTRATION_SOURCE}" and the text "{DEMONSTRATION_RESPONSE}", a '
            f"good reply is:\n{demonstration_reply(task)}\nNow check the text above the same way.\n"
        )
    return "".join(parts)


def requote_note(missing: list[str]) -> str:
    """The re-quote turn (``--requote``): which quotes the source does not contain verbatim."""
    shown = "\n".join(f"- {QUOTE_PROTOCOL.escape(q).text}" for q in missing)
    return (
        "These quotes are not in the source word for word:\n"
        f"{shown}\n"
        "Write your whole check again. Copy every quote character for character from the source, then give the "
        "final list as before."
    )


def _demonstration_ending(task: TaskType) -> str:
    if task == "claim":
        return '<answer>["and was completed in 1899."]</answer>'
    return f'## Final Output\n```json\n{{"{FINAL_KEY}": ["and was completed in 1899."]}}\n```'
