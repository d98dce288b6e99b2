"""The repair loop: the checker's label of each step routes the generator (IE → re-search, MB → bridging search,
CC → retraction, a gapped answer reopened), within the repair budget. The scripted policy reacts to the notes the
way an instruction-following model would, so these runs show the loop changing behaviour."""

from __future__ import annotations

import asyncio
from typing import Any

from evigraph.agents.stepgap.schemas import StepGapConfig
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.graphs.kit.context import RunContext
from evigraph.graphs.stepgap import build_stepgap_graph
from evigraph.graphs.stepgap_repair import build_repair_graph
from evigraph.trajectory import Evidence
from tests.agents.stepgap.doubles import CONTRADICT, ENTAIL, FakeNLI, judge_by_step, judgement
from tests.graphs.test_search_r1 import DictSearch

QUESTION = "Where was the director of Whiplash born?"
PASSAGES = {
    "chazelle": [
        Evidence(id="c0", title="Damien Chazelle", text="Damien Chazelle was born in Providence, Rhode Island.")
    ],
    "whiplash": [
        Evidence(id="w0", title="J. K. Simmons", text="J. K. Simmons starred in Whiplash as a band conductor.")
    ],
}


def policy(tokenizer: Any = None) -> ScriptedGenerator:
    """Searches the film; after a re-search note it searches the director; answers from what it has."""

    def reply(transcript: list[Any], params: Any) -> str:
        last = transcript[-1].text
        if len(transcript) == 1:
            return "<think>I need the director of Whiplash.</think>\n<search>Whiplash director</search>"
        if "reformulated query" in last:
            return "<think>The page was about an actor.</think>\n<search>Damien Chazelle</search>"
        if "Providence" in last:
            return "<think>Chazelle was born in Providence.</think>\n<answer>Providence</answer>"
        return "<think>The conductor is the director.</think>\n<answer>New York</answer>"

    return ScriptedGenerator(reply, tokenizer=tokenizer)


JUDGE = {
    "I need the director": judgement(match=False),  # the film search found an actor's page: IE
    "about an actor": judgement(found=True, quote="Damien Chazelle was born in Providence, Rhode Island."),
    "born in Providence": judgement(),
    "conductor is the director": judgement(),
}


def test_an_irrelevant_evidence_gap_makes_the_generator_search_again() -> None:
    nli = FakeNLI({"Providence": ENTAIL})
    graph = build_repair_graph(policy(), search=DictSearch(PASSAGES), nli=nli, judge=judge_by_step(JUDGE))
    output = asyncio.run(graph.ainvoke({"question": QUESTION, "golds": ["Providence"]}))["output"]
    assert output.answer == "Providence" and output.em == 1 and output.repairs == 1
    assert [s.query for s in output.trace.steps] == ["Whiplash director", "Damien Chazelle", None]
    assert output.labels == ["IE", "no-gap", "no-gap"]
    # The same policy and checker without the loop: the gap is found, but nothing acts on it.
    plain = build_stepgap_graph(policy(), search=DictSearch(PASSAGES), nli=nli, judge=judge_by_step(JUDGE))
    unrepaired = asyncio.run(plain.ainvoke({"question": QUESTION, "golds": ["Providence"]}))["output"]
    assert unrepaired.answer == "New York" and unrepaired.em == 0 and unrepaired.labels[0] == "IE"


def test_the_repair_budget_bounds_the_notes() -> None:
    graph = build_repair_graph(
        policy(),
        search=DictSearch(PASSAGES),
        nli=FakeNLI(),
        judge=judge_by_step(JUDGE),
        config=StepGapConfig(repair_budget=0),
    )
    output = asyncio.run(graph.ainvoke({"question": QUESTION}))["output"]
    assert output.repairs == 0 and output.answer == "New York"


def test_a_contradicted_answer_is_reopened_and_retracted() -> None:
    def reply(transcript: list[Any], params: Any) -> str:
        last = transcript[-1].text
        if len(transcript) == 1:
            return "<think>Chazelle is the director.</think>\n<search>Damien Chazelle</search>"
        if "Actually" in last:
            return "<think>Actually, he was born in Providence.</think>\n<answer>Providence</answer>"
        return "<think>He was born in Boston.</think>\n<answer>Boston</answer>"

    judge = judge_by_step(
        {
            "Chazelle is the director": judgement(),
            "born in Boston": judgement(found=True, quote="Damien Chazelle was born in Providence, Rhode Island."),
            "Actually": judgement(found=True, quote="Damien Chazelle was born in Providence, Rhode Island."),
        }
    )

    class BostonIsContradicted(FakeNLI):
        def batch_classify(self, pairs: list[tuple[str, str]]) -> list[Any]:
            return [CONTRADICT if "Boston" in hypothesis else ENTAIL for _, hypothesis in pairs]

    nli = BostonIsContradicted()
    graph = build_repair_graph(ScriptedGenerator(reply), search=DictSearch(PASSAGES), nli=nli, judge=judge)
    result = asyncio.run(graph.ainvoke({"question": QUESTION, "golds": ["Providence"]}))
    output = result["output"]
    assert output.labels == ["no-gap", "CC", "no-gap"] and output.repairs == 1
    assert output.answer == "Providence"
    notes = [s.text for s in result["trajectory"].segments if s.origin == "environment"]
    assert any('"Actually,"' in n for n in notes) and all("<answer>" not in n for n in notes)


def test_a_note_after_a_search_is_counted_on_a_token_backend(qwen2_style_tokenizer: Any) -> None:
    """The note joins the search's information turn; on a token backend with a sequence budget its tokens are
    the merged turn's less the information's (counting the note alone after the information failed)."""
    nli = FakeNLI({"Providence": ENTAIL})
    graph = build_repair_graph(
        policy(qwen2_style_tokenizer), search=DictSearch(PASSAGES), nli=nli, judge=judge_by_step(JUDGE)
    )
    result = asyncio.run(
        graph.ainvoke({"question": QUESTION, "golds": ["Providence"]}, context=RunContext(max_sequence_tokens=4096))
    )
    output, trajectory = result["output"], result["trajectory"]
    assert trajectory.error is None and output.answer == "Providence" and output.repairs == 1
    assert output.labels == ["IE", "no-gap", "no-gap"]
