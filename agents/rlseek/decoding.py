"""RLSeek's turn grammar for weak models (inference only), built from the shared pieces of
:mod:`evigraph.protocol.guides`.

Everything the model writes that names a text is taken from that text: a step's header checks one of the
response's clauses, its quote is one of the source's sentences, and a listed span is one of the response's
clauses; the evaluation is one of three fixed verdicts. A 135M model given free headers and evaluations copied the
worked example's ("Check "330 metres tall"", "The source says 330 metres") into every detection.
"""

from __future__ import annotations

from evigraph.agents.rlseek.parsing import FINAL_KEY
from evigraph.agents.rlseek.schemas import TaskType
from evigraph.protocol.guides import JSON_UNQUOTABLE, TEXT, choice_regex, clause_choices, sentence_choices

__all__ = ("BACKED", "CONTRADICTED", "EVALUATIONS", "UNSUPPORTED", "detection_guide", "header_choices")

BACKED = "The source backs this part up."
CONTRADICTED = "The source contradicts this part, so it is a hallucination."
UNSUPPORTED = "The source does not say this, so it is a hallucination."
EVALUATIONS = (BACKED, CONTRADICTED, UNSUPPORTED)
"""The verdicts a guided step may end with: what the model still decides is which one applies."""

_STRING = r'"[ !#-\[\]-~]{1,80}"'
"""A JSON string of printable ASCII without quote marks or backslashes (a response with no usable clause)."""


def header_choices(response: str) -> list[str]:
    """The response's clauses a step may check (and list): at most 80 characters, no quote marks, backslashes
    or tag brackets, so each fits inside ``Check "..."`` and a JSON string as written."""
    return clause_choices(response, max_chars=80, banned=JSON_UNQUOTABLE)


def detection_guide(
    task: TaskType, *, source: str | None = None, response: str | None = None, max_steps: int = 4, max_spans: int = 8
) -> str:
    """The turn's regex in weak-model mode: 1 to ``max_steps`` ``## Step N`` blocks, then the final list.

    Given the rendered texts, step N reads ``## Step N: Check "<clause>"`` where the clause is the response's N-th
    or a later one (a greedy model otherwise checks the first clause in every step; so there are at most as many
    steps as clauses), quotes one source sentence and ends with one of :data:`EVALUATIONS`; listed spans are
    response clauses. Without usable pieces, headers, quotes and spans are free printable text. Step numbers
    count up because later steps nest inside earlier ones."""
    clauses = header_choices(response or "")
    quote = choice_regex(sentence_choices(source or "", max_chars=200, banned="<>"), f"{TEXT}+")
    evaluation = choice_regex(EVALUATIONS, "")
    string = f'"{choice_regex(clauses, "")}"' if clauses else _STRING

    def step(n: int) -> str:
        header = f'Check "{choice_regex(clauses[n - 1 :], "")}"' if clauses else f"{TEXT}+"
        return f"## Step {n}: {header}\\n- Evidence: <quote>{quote}</quote>\\n- Evaluation: {evaluation}\\n"

    steps = ""
    for n in range(min(max_steps, len(clauses) or max_steps), 1, -1):
        steps = f"({step(n)}{steps})?"
    items = f"({string}(, {string}){{0,{max_spans - 1}}})?"
    if task == "claim":
        ending = f"<answer>\\[{items}\\]</answer>"
    else:
        ending = f'## Final Output\\n```json\\n\\{{"{FINAL_KEY}": \\[{items}\\]\\}}\\n```'
    return f"{step(1)}{steps}{ending}"
