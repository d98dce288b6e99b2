"""examples/repair_loop.py over the real demo corpus: a scripted policy answers with the replacement year, the
checker finds the answer contradicted (CC), the note makes the policy retract, and the final answer changes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evigraph.generators.scripted import ScriptedGenerator
from tests.agents.stepgap.doubles import CONTRADICT, ENTAIL, judge_by_step, judgement
from tests.examples.loading import load_example
from tests.markers import requires_pyserini

QUOTE = "The first tower on the island was lit in 1852"


def policy() -> ScriptedGenerator:
    """Searches, answers 1896; after a note asking for a retraction it answers 1852."""

    def reply(transcript: list[Any], params: Any) -> str:
        if len(transcript) == 1:
            return (
                "<think>I need the history of the lighthouse on Hog Island.</think>\n"
                "<search>Hog Island Light first tower lit</search>"
            )
        if '"Actually,"' in transcript[-1].text:
            return "<think>Actually, the first tower was lit in 1852.</think>\n<answer>1852</answer>"
        return "<think>The tower on Hog Island was lit in 1896.</think>\n<answer>1896</answer>"

    return ScriptedGenerator(reply)


class YearNLI:
    def batch_classify(self, pairs: list[tuple[str, str]]) -> list[object]:
        return [CONTRADICT if "1896" in hypothesis else ENTAIL for _, hypothesis in pairs]


@pytest.mark.java
@requires_pyserini
def test_the_repair_changes_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    from evigraph.corpora.registry import resolve_corpus
    from evigraph.tools.search import BM25Search

    example = load_example("repair_loop")
    judge = judge_by_step(
        {
            "history of the lighthouse": judgement(found=True, quote=QUOTE),
            "lit in 1896": judgement(found=True, quote=QUOTE),
            "Actually": judgement(found=True, quote=QUOTE),
        }
    )
    search = BM25Search(resolve_corpus("demo"), name="demo")
    output = asyncio.run(example.repair(example.QUESTION, example.GOLDS, policy(), search, judge=judge, nli=YearNLI()))
    example.show(output)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "Q: In which year was the first tower on Hog Island lit?",
        "step 1 search 'Hog Island Light first tower lit' -> Hog Island Light_sentence_0",
        "    no-gap -> none  (stageA:on_target, stageB:not_abstention, stageC:quote_found, stageD:entailment)",
        "step 2 answer '1896'",
        "    CC -> retract  (stageA:on_target, stageB:not_abstention, stageC:quote_found, stageD:contradiction)",
        "step 3 answer '1852'",
        "    no-gap -> none  (stageA:on_target, stageB:not_abstention, stageC:quote_found, stageD:entailment)",
        "answers given: '1896' -> '1852'",
        "final answer '1852' (EM 1), 1 repair note(s)",
    ]
