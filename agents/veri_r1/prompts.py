"""Veri-R1 prompts and environment notes, in our own words (spec §2.2–§2.3 list what they must say).

Every piece of untrusted text (the claim, retrieved entries, given evidence) is escaped before it is placed
into a prompt, so it can never open or close a protocol tag.
"""

from __future__ import annotations

from collections.abc import Sequence

from evigraph.agents.veri_r1.actions import ActionKind
from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL
from evigraph.tools.search import render_information
from evigraph.trajectory import Evidence

__all__ = (
    "ANSWER_FORMAT",
    "BUDGET_SPENT_NOTE",
    "DEMONSTRATION",
    "INVALID_ACTION_NOTE",
    "LABEL_DEFINITIONS",
    "NO_ENTRIES",
    "answer_now_note",
    "correction_note",
    "duplicate_query_note",
    "forged_information_note",
    "information_turn",
    "offline_prompt",
    "online_prompt",
)

LABEL_DEFINITIONS = """\
What the labels mean:
- SUPPORT: the cited entries agree with the claim and are enough to show it is true.
- REFUTE: the cited entries conflict with the claim and are enough to show it is false.
- NOT ENOUGH INFO: what you found does not settle the claim one way or the other."""

ANSWER_FORMAT = """\
The answer block holds exactly two lines and nothing else:
<answer>
Label: SUPPORT or REFUTE or NOT ENOUGH INFO
Evidence: [[id]], [[id]]
</answer>
Write each cited id in double square brackets, copied exactly from a line of an information block, and \
separate ids with commas. Cite only ids you were shown. Leave the list empty (`Evidence:`) when nothing \
you saw bears on the claim."""

_ONLINE = """\
You check whether a claim is true by searching a fixed collection of text entries. Follow this protocol \
to the letter.

1. Begin with one <plan>...</plan> block: how you will break the claim down and which names or facts to \
look up. Write it once, before anything else.
2. To look something up, write a short query naming the entity or fact you need between <search> and \
</search>, then stop. Each search should ask for something new: never repeat a query. You have at most \
{max_searches} searches.
3. After each search the system replies with an <information> block. Every line in it has the form \
[[id]]: text, where id names one entry. You never write <information> yourself.
4. Reason inside <think>...</think>. Right after every new information block, start with a <think> block \
that weighs what came back. Do not announce your verdict inside <think>.
5. Finish with exactly one <answer>...</answer> block and write nothing after it.

{answer_format}

{labels}

Order: plan, then any number of rounds of search, information and think (up to {max_searches}), then the \
answer. Write nothing outside these tags.

Claim to verify: {claim}"""

_BRIEF = """\
Verify the claim: plan, search up to {max_searches} times, think after each result, then answer \
with a Label line (SUPPORT, REFUTE or NOT ENOUGH INFO) and an Evidence line of [[id]] entries.
Claim to verify: {claim}"""

_OFFLINE = """\
You check whether a claim is true using the entries given below. Every line of the information block has \
the form [[id]]: text, where id names one entry.

First reason step by step inside one <think>...</think> block, checking each part of the claim against the \
entries. Then write exactly one <answer>...</answer> block and nothing after it. Write nothing outside \
these two blocks.

{answer_format}

{labels}

Claim to verify: {claim}
<information>
{evidence}
</information>"""

# Notes name tags in words, never as literal tags: environment text must not contain protocol tags, so a
# flattened transcript parses the same as the segments did (and no evaluator mistakes a note for an answer).
INVALID_ACTION_NOTE = (
    "That turn had no valid action. Either put a query between search tags to look something up, or write "
    "your final answer block. Follow the protocol exactly."
)
BUDGET_SPENT_NOTE = "No searches are left, so nothing was searched. Your next turn must be the final answer block."
_ANSWER_NOW = "That was your last search. Think about what you found, then write the final answer block."
_LAST_TURN = "Your next turn is the last one: write the final answer block."


def _escaped(text: str) -> str:
    return VERI_R1_PROTOCOL.escape(text).text


DEMONSTRATION = """Here is a complete run for a different claim, to show the form:
Claim to verify: The Eiffel Tower stands in Rome.
<plan>Look up Eiffel Tower and check the claim.</plan>
<search>Eiffel Tower</search>
<information>
[[Eiffel Tower_sentence_0]]: The Eiffel Tower is a wrought-iron tower in Paris, France.
</information>
<think>[[Eiffel Tower_sentence_0]] places the tower in Paris, not in Rome, so the claim is false.</think>
<answer>
Label: REFUTE
Evidence: [[Eiffel Tower_sentence_0]]
</answer>
Now do the same for the claim below. Search for its own names and facts, not for the example's."""
"""A worked run for small models (weak-model mode), which follow an example far better than instructions. It
never enters training prompts unless a config asks for it."""


def online_prompt(claim: str, *, max_searches: int = 3, demonstration: bool = False, brief: bool = False) -> str:
    """The single user message of an online run (spec §2.2): protocol, answer format, labels, then the claim;
    with ``demonstration``, a worked run right before the claim; ``brief``: the protocol in two lines."""
    if brief:
        return _BRIEF.format(max_searches=max_searches, claim=_escaped(claim))
    prompt = _ONLINE.format(
        max_searches=max_searches, answer_format=ANSWER_FORMAT, labels=LABEL_DEFINITIONS, claim=_escaped(claim)
    )
    if demonstration:
        head, _, claim_line = prompt.rpartition("\n\nClaim to verify: ")
        prompt = f"{head}\n\n{DEMONSTRATION}\n\nClaim to verify: {claim_line}"
    return prompt


def offline_prompt(claim: str, evidence: Sequence[Evidence]) -> str:
    """The offline (OffCV) prompt (spec §2.3): the evidence is given as an information block, no search."""
    return _OFFLINE.format(
        answer_format=ANSWER_FORMAT,
        labels=LABEL_DEFINITIONS,
        claim=_escaped(claim),
        evidence=render_information(evidence),
    )


NO_ENTRIES = "No entries matched this query."


def answer_now_note(*, after_search: bool = True) -> str:
    """Tells the model its next turn is the answer turn (spec §9 #10): after the last allowed retrieval, or
    after any other observation that leaves one turn."""
    return _ANSWER_NOW if after_search else _LAST_TURN


def duplicate_query_note(first_search: int) -> str:
    """Appended when a query repeats an earlier one (it still runs and still counts)."""
    return f"This query repeats search {first_search}; the same entries came back. Ask for something new next time."


def forged_information_note() -> str:
    """The corrective note for a turn in which the model wrote an <information> block itself."""
    return (
        "Only the system writes information blocks, so that turn was not accepted and nothing was searched. "
        "Put a query between search tags to look something up, or write your final answer block."
    )


def correction_note(kind: ActionKind, *, last_turn: bool) -> str:
    """The environment's reply to a turn that asked for no search: a search over budget, a forged
    information block, or no valid action; ``last_turn`` adds that the next turn must answer."""
    if kind == "over_budget":
        return BUDGET_SPENT_NOTE
    note = forged_information_note() if kind == "forged_information" else INVALID_ACTION_NOTE
    return f"{note} {answer_now_note(after_search=False)}" if last_turn else note


def information_turn(entries: str, notes: Sequence[str]) -> str:
    """The environment turn after a search: the information block of rendered (escaped) entries, then notes."""
    block = VERI_R1_PROTOCOL.render_block("information", f"\n{entries or NO_ENTRIES}\n")
    return f"\n{block}\n" + "".join(f"{note}\n" for note in notes)
