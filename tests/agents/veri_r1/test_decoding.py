"""Constrained decoding for weak models: the per-turn regex, and a real backend honouring it in the graph."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from evigraph.agents.veri_r1.decoding import turn_regex
from evigraph.agents.veri_r1.format_rules import check_format
from evigraph.agents.veri_r1.schemas import VeriR1Config
from evigraph.graphs.veri_r1 import build_veri_r1_graph
from evigraph.trajectory import Evidence


def test_bounded_bodies_must_close() -> None:
    bounded = turn_regex(first=False, may_search=True, seen_ids=[], max_block_chars=5)
    assert re.fullmatch(bounded, "<think>abcde</think>\n<search>q</search>")
    assert not re.fullmatch(bounded, "<think>abcdef</think>\n<search>q</search>")


def test_turn_regex_accepts_protocol_turns_and_only_seen_ids() -> None:
    first = turn_regex(first=True, may_search=True, seen_ids=[])
    assert re.fullmatch(first, "<plan>Find the tower.</plan>\n<search>Hog Island Light</search>")
    nei = "<plan>p</plan>\n<think>t</think>\n<answer>\nLabel: NOT ENOUGH INFO\nEvidence: \n</answer>"
    assert re.fullmatch(first, nei)
    assert not re.fullmatch(first, "<search>no plan</search>")
    last = turn_regex(first=False, may_search=False, seen_ids=["Hog Island Light_sentence_0", "A.B (c)", "bad]]id"])
    ok = "<think>x</think>\n<answer>\nLabel: REFUTE\nEvidence: [[Hog Island Light_sentence_0]], [[A.B (c)]]\n</answer>"
    assert re.fullmatch(last, ok)
    assert not re.fullmatch(last, ok.replace("A.B (c)", "Guess"))
    assert not re.fullmatch(last, "<think>x</think>\n<search>q</search>")
    assert "bad" not in last  # an id that cannot be written as [[id]] is never offered


def test_reasoning_after_results_opens_on_an_entry_shown() -> None:
    claim = "Hog Island Light was first lit in 1853."
    turn = turn_regex(first=False, may_search=True, seen_ids=["Hog Island Light_sentence_0"], claim=claim)
    answer = "\n<answer>\nLabel: REFUTE\nEvidence: [[Hog Island Light_sentence_0]]\n</answer>"
    assert re.fullmatch(turn, "<think>[[Hog Island Light_sentence_0]] says the tower was lit in 1852.</think>" + answer)
    # Free reasoning -- or the worked example's own entry -- is what a small model copied from the prompt.
    assert not re.fullmatch(turn, "<think>The Eiffel Tower is a wrought-iron tower in Paris, France.</think>" + answer)
    assert not re.fullmatch(turn, "<think>[[Eiffel Tower_sentence_0]] places the tower in Paris.</think>" + answer)
    before = turn_regex(first=True, may_search=True, seen_ids=[], claim=claim)  # nothing shown yet: free reasoning
    assert re.fullmatch(
        before,
        "<plan>Look up Hog Island Light and check the claim.</plan>\n<think>I will search.</think>\n"
        "<search>Hog Island Light</search>",
    )


class OneHitSearch:
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return [Evidence(id="Hog Island Light_sentence_0", text="The first tower was lit in 1852.")]

    def batch_search(self, queries, k: int = 3):
        return [self.search(q, k) for q in queries]


def test_a_random_model_under_the_guide_produces_protocol_valid_runs(tiny_llama_dir: Path) -> None:
    from evigraph.generators.transformers import TransformersGenerator

    generator = TransformersGenerator(tiny_llama_dir, constrained=True)
    # Random weights never close a block on their own: the bounded guide forces every block shut.
    config = VeriR1Config(
        constrained=True,
        guide_max_block_chars=40,
        max_searches=1,
        max_new_tokens=200,
        logprobs=False,
        demonstration=False,  # the guide alone: random weights make the worked example's text irrelevant
    )
    graph = build_veri_r1_graph(generator, OneHitSearch(), config)
    state = asyncio.run(graph.ainvoke({"claim": "Hog Island Light was first lit in 1853."}))
    output, trajectory = state["output"], state["trajectory"]
    assert trajectory.error is None, trajectory.error
    policy = [s for s in trajectory.segments if s.origin == "policy"]
    assert all(s.finish_reason in {"stop", "eos"} for s in policy), [s.text for s in policy]
    assert output.answered and output.label is not None
    assert set(output.evidence) <= {"Hog Island Light_sentence_0"}
    # Random weights, yet every turn has the protocol's shape: what the guide is for.
    assert output.format_ok and output.n_searches == 1
    thinks = [s.text for s in policy if s.text.startswith("<think>")]
    assert thinks and thinks[-1].startswith("<think>[[Hog Island Light_sentence_0]] ")
    assert check_format(trajectory.segments).ok
    # Token backend: exact ids on every segment, and each step's span is its policy turn (the loss mask).
    assert trajectory.token_ids() is not None
    assert [step.token_span for step in trajectory.steps] == trajectory.action_ranges()
