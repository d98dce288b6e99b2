"""examples/guarded_rag_agent.py over the real demo corpus: the host's chat model answers wrong, SEVA (scripted)
fails the answer, the repair instruction goes back to the host's model, and the corrected answer passes."""

from __future__ import annotations

import asyncio
import json

import pytest

from evigraph.embed import EvigraphChatModel
from evigraph.generators.scripted import ScriptedGenerator
from tests.examples.loading import load_example
from tests.markers import requires_pyserini

WRONG = "The first tower on Hog Island was lit in 1896."
RIGHT = "The first tower on Hog Island was lit in 1852."


def verdict(label: str, error_type: str | None) -> str:
    chain = [
        {"claim_part": "first tower", "source_evidence": "The first tower on the island", "judgment": "supported",
         "explanation": "The source names the first tower."},
        {"claim_part": "lit in the year", "source_evidence": "was lit in 1852", "judgment": "supported"
         if error_type is None else "not_supported", "explanation": "The year is compared with the source."},
    ]  # fmt: skip
    return json.dumps(
        {
            "evidence_alignment": [{"claim_span": "lit in", "source_span": "was lit in 1852", "status": "match"}],
            "reasoning_chain": chain,
            "label": label,
            "confidence": 0.9,
            "error_type": error_type,
        }
    )


@pytest.mark.java
@requires_pyserini
def test_a_failed_check_sends_the_answer_back_and_the_repair_passes(capsys: pytest.CaptureFixture[str]) -> None:
    from evigraph.corpora.registry import resolve_corpus
    from evigraph.tools.search import BM25Search

    example = load_example("guarded_rag_agent")
    host = ScriptedGenerator([WRONG, RIGHT])
    verifier = ScriptedGenerator([verdict("Not Attributable", "temporal_shift"), verdict("Attributable", None)])
    search = BM25Search(resolve_corpus("demo"), name="demo")
    agent = example.build_agent(EvigraphChatModel(generator=host), search, verifier_model=verifier)
    state = asyncio.run(example.ask(agent, example.QUESTION, search))
    example.show(state)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Q: {example.QUESTION}"
    assert lines[1].startswith("retrieved: Hog Island Light_sentence_0")
    assert lines[2] == f"answer: {WRONG!r}"
    assert lines[3].startswith("seva: Not Attributable, confidence 0.90 -> failed; repair: The source does not back")
    assert lines[4:] == [
        f"answer: {RIGHT!r}",
        "seva: Attributable, confidence 0.90 -> passed",
        f"final answer: {RIGHT!r} (passed after 2 checks)",
    ]
    # The host's model saw the retrieved passage, and on the second call its answer and the repair instruction.
    first, second = (call.transcript[-1].text for call in host.calls)
    assert "lit in 1852" in first and "Your previous answer was" not in first
    assert f"Your previous answer was: {WRONG}" in second and "a date or time differs" in second
    # SEVA checked each answer against the passages.
    claims = [call.transcript[-1].text for call in verifier.calls]
    assert WRONG in claims[0] and RIGHT in claims[1] and "lit in 1852" in claims[0]


@pytest.mark.java
@requires_pyserini
def test_after_the_repair_budget_the_answer_leaves_with_its_failed_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    from evigraph.corpora.registry import resolve_corpus
    from evigraph.tools.search import BM25Search

    example = load_example("guarded_rag_agent")
    failing = verdict("Not Attributable", "temporal_shift")
    search = BM25Search(resolve_corpus("demo"), name="demo")
    agent = example.build_agent(
        EvigraphChatModel(generator=ScriptedGenerator([WRONG, WRONG])),
        search,
        verifier_model=ScriptedGenerator([failing, failing]),
    )
    example.show(asyncio.run(example.ask(agent, example.QUESTION, search)))
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"final answer: {WRONG!r} (failed, sent with its verdict after 2 checks)"
    )
