"""Search-R1's prompt and environment turns (specs/stepgap.md §2.1), written for this project.

The instructions follow Search-R1's semantics: reason first, search whenever knowledge is missing, results come
back inside ``<information>``, search as often as needed, and give a short final answer without explanation.
Passages are rendered in Search-R1's ``Doc i (Title: ...) text`` layout, escaped (corpus text is untrusted).
"""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.agents.search_r1.protocol import SEARCH_R1_PROTOCOL
from evigraph.protocol.actions import ActionKind
from evigraph.trajectory import Evidence

__all__ = (
    "DEMONSTRATION",
    "NO_PASSAGES",
    "answer_now_note",
    "correction_note",
    "duplicate_query_note",
    "information_turn",
    "question_prompt",
    "render_passages",
)

_PROMPT = """\
Answer the question below. Work in steps:
- First reason about what you know and what is missing, inside <think> and </think>.
- Whenever a fact is missing, write a search query between <search> and </search> and stop. The system \
then returns the top passages between <information> and </information>; never write that block yourself.
- Search as many times as you need (at most {max_searches} searches), reasoning in a new <think> block after \
each result.
- When you know the answer, write it between <answer> and </answer>: a few words, no explanation.
{demonstration}
Question: {question}"""

DEMONSTRATION = """
For example, for "Who directed the film Jaws?":
<think>I need the director of Jaws.</think>
<search>Jaws film director</search>
<information>
Doc 1 (Title: Jaws (film)) Jaws is a 1975 American thriller film directed by Steven Spielberg.
</information>
<think>The passage says Steven Spielberg directed Jaws.</think>
<answer>Steven Spielberg</answer>
Now answer the question below the same way.
"""
"""A worked run for small models (weak-model mode only; never in training prompts unless configured)."""

NO_PASSAGES = "No passages matched this query."
_INVALID = "That turn had no valid action: put a query between search tags, or write your answer between answer tags."
_FORGED = "Only the system writes information blocks; nothing was searched. Search, or write your answer."
_BUDGET = "No searches are left, so nothing was searched. Write your answer now."
_ANSWER_NOW = "That was your last search. Reason about what you found, then write your answer."
_LAST_TURN = "Your next turn is the last one: write your answer."


def _escaped(text: str) -> str:
    return SEARCH_R1_PROTOCOL.escape(text).text


def question_prompt(question: str, *, max_searches: int, demonstration: bool = False) -> str:
    """The single user message of a run."""
    return _PROMPT.format(
        max_searches=max_searches,
        demonstration=DEMONSTRATION if demonstration else "",
        question=_escaped(" ".join(question.split())),
    )


def render_passages(hits: Sequence[Evidence]) -> str:
    """``Doc i (Title: title) text`` lines (Search-R1's layout), escaped."""
    lines = []
    for i, hit in enumerate(hits, 1):
        title = " ".join((hit.title or hit.id).split())
        lines.append(f"Doc {i} (Title: {_escaped(title)}) {_escaped(' '.join(hit.text.split()))}")
    return "\n".join(lines)


def information_turn(passages: str, notes: Sequence[str]) -> str:
    """The environment turn after a search: the information block, then notes."""
    block = SEARCH_R1_PROTOCOL.render_block("information", f"\n{passages or NO_PASSAGES}\n")
    return f"\n{block}\n" + "".join(f"{note}\n" for note in notes)


def answer_now_note(*, after_search: bool = True) -> str:
    return _ANSWER_NOW if after_search else _LAST_TURN


def duplicate_query_note(first_search: int) -> str:
    return f"This query repeats search {first_search}; the same passages came back. Try another query."


def correction_note(kind: ActionKind, *, last_turn: bool) -> str:
    """The reply to a turn that ran no search: over budget, a forged information block, or no valid action."""
    if kind == "over_budget":
        return _BUDGET
    note = _FORGED if kind == "forged_information" else _INVALID
    return f"{note} {answer_now_note(after_search=False)}" if last_turn else note
