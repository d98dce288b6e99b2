"""Weak-model mode (issue 9 §1): the embedded model's runs follow the claim. Queries and the plan are built from
the claim's words, reasoning is at most two sentences, a worked run sits in the prompt; all of it only where the
generator is in weak-model mode (never in RL rollouts)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from evigraph.agents.veri_r1.decoding import claim_words, turn_regex
from evigraph.agents.veri_r1.prompts import DEMONSTRATION, online_prompt
from evigraph.agents.veri_r1.schemas import VeriR1Config
from evigraph.config import GeneratorConfig
from evigraph.errors import ConfigError
from evigraph.generators.factory import make_generator
from evigraph.graphs.veri_r1 import build_veri_r1_graph
from evigraph.trajectory import Segment
from tests.agents.veri_r1.test_graph import DictSearch
from tests.doubles import GuidedScripted

CLAIM = "Hog Island Light was first lit in 1853."
COPIED_INSTRUCTION = "To look something up, write a short query naming the entity"
"""What the 135M model wrote as its query before (issue 9): the prompt's own words."""


@pytest.mark.parametrize(
    ("query", "accepted"),
    [
        ("Hog Island Light", True),  # claim words
        ("first lit 1853", True),
        ("Hog Island Light first lit in", True),  # a function word after a content word is fine
        ("in 1853", False),  # a query must start with a content word
        ("was", False),  # function words alone never make a query
        ("Hog Island Light first lit was in", False),  # at most six words
        (COPIED_INSTRUCTION, False),  # the prompt's words are not the claim's
        ("Eiffel Tower", False),  # nor the demonstration's
        ("", False),
    ],
)
def test_queries_are_built_from_the_claim(query: str, accepted: bool) -> None:
    regex = turn_regex(first=False, may_search=True, seen_ids=[], claim=CLAIM)
    turn = f"<think>The entry says so.</think>\n<search>{query}</search>"
    assert bool(re.fullmatch(regex, turn)) is accepted


def test_the_plan_and_reasoning_have_a_fixed_small_shape() -> None:
    first = turn_regex(first=True, may_search=True, seen_ids=["A_sentence_0"], claim=CLAIM)
    assert re.fullmatch(
        first, "<plan>Look up Hog Island Light and check the claim.</plan>\n<search>Hog Island</search>"
    )
    assert not re.fullmatch(first, "<plan>1. Begin with one</plan>\n<search>Hog Island</search>")
    later = turn_regex(first=False, may_search=False, seen_ids=["A_sentence_0"], claim=CLAIM)
    answer = "<answer>\nLabel: REFUTE\nEvidence: [[A_sentence_0]]\n</answer>"
    assert re.fullmatch(later, f"<think>[[A_sentence_0]] says 1852. So the claim is false.</think>\n{answer}")
    # A small greedy model repeats a sentence until the token cap: a third sentence is refused.
    assert not re.fullmatch(later, f"<think>[[A_sentence_0]] is false. It is false. It is false.</think>\n{answer}")
    assert claim_words("Café Noir opened") == (["Noir", "opened"], ["Noir", "opened"])  # whole ASCII words only


def test_without_content_words_the_grammar_falls_back_to_free_bodies() -> None:
    regex = turn_regex(first=True, may_search=True, seen_ids=[], claim="It was in it.")
    assert re.fullmatch(regex, "<plan>Find it.</plan>\n<search>anything at all</search>")


def policy(transcript: list[Segment], params: Any) -> str:
    if sum(s.origin == "policy" for s in transcript) == 0:
        return "<plan>Look up Hog Island Light and check the claim.</plan>\n<search>Hog Island Light</search>"
    answer = "<answer>\nLabel: REFUTE\nEvidence: [[Hog Island Light_sentence_0]]\n</answer>"
    return f"<think>[[Hog Island Light_sentence_0]] says Virginia. The claim is not shown.</think>\n{answer}"


def test_a_weak_model_generator_gets_the_grammar_and_the_demonstration() -> None:
    weak = GuidedScripted(policy)
    weak.constrained = True
    result = asyncio.run(build_veri_r1_graph(weak, DictSearch()).ainvoke({"claim": CLAIM}))
    assert result["output"].format_ok and result["output"].label == "REFUTE"
    assert DEMONSTRATION in weak.calls[0].transcript[0].text
    assert all(call.params.guide is not None for call in weak.calls)
    assert "Hog|Island|Light" in weak.calls[0].params.guide.regex  # the claim's words

    strong = GuidedScripted(policy)  # not in weak-model mode: a real model, or an RL rollout
    asyncio.run(build_veri_r1_graph(strong, DictSearch()).ainvoke({"claim": CLAIM}))
    assert DEMONSTRATION not in strong.calls[0].transcript[0].text
    assert all(call.params.guide is None for call in strong.calls)

    # The agent's config overrides the generator either way.
    off = GuidedScripted(policy)
    off.constrained = True
    config = VeriR1Config(constrained=False, demonstration=True)
    asyncio.run(build_veri_r1_graph(off, DictSearch(), config).ainvoke({"claim": CLAIM}))
    assert DEMONSTRATION in off.calls[0].transcript[0].text and off.calls[0].params.guide is None


def test_the_demonstration_comes_right_before_the_claim() -> None:
    prompt = online_prompt(CLAIM, demonstration=True)
    assert prompt.endswith(f"{DEMONSTRATION}\n\nClaim to verify: {CLAIM}")
    assert online_prompt(CLAIM).endswith(f"answer. Write nothing outside these tags.\n\nClaim to verify: {CLAIM}")


def test_weak_model_mode_is_the_embedded_default_and_needs_a_regex_backend(tmp_path: Any) -> None:
    replies = tmp_path / "r.json"
    replies.write_text('["x"]', encoding="utf-8")
    scripted = make_generator(GeneratorConfig(model=f"scripted:{replies}"))
    assert scripted.constrained is False  # any model but the embedded one: off unless asked
    with pytest.raises(ConfigError, match="cannot enforce the grammars of weak-model mode"):
        make_generator(GeneratorConfig(model=f"scripted:{replies}", constrained=True))
    served = make_generator(GeneratorConfig(model="openai:m@http://127.0.0.1:9/v1", constrained=True))
    assert served.constrained is True  # an OpenAI-compatible (vLLM) server enforces the regex itself
