"""examples/stepgap_hotpotqa.py on one HotpotQA-format question with a scripted model as policy and judge: the
paragraphs become a BM25 corpus, the Search-R1 run answers, every step is checked, and the report counts them."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from evigraph.generators.scripted import ScriptedGenerator
from tests.agents.stepgap.doubles import judgement
from tests.examples.loading import load_example
from tests.markers import requires_pyserini

QUOTE = "Damien Chazelle was born in Providence, Rhode Island"
LINE = {
    "question_id": "q1",
    "question_text": "Where was the director of Whiplash born?",
    "answers_objects": [{"spans": ["Providence"]}],
    "contexts": [
        {
            "id": 0,
            "title": "Damien Chazelle",
            "paragraph_text": f"{QUOTE}. He directed Whiplash.",
            "is_supporting": True,
        },
        {"id": 1, "title": "J. K. Simmons", "paragraph_text": "Simmons starred in Whiplash.", "is_supporting": False},
    ],
}


def model(transcript: list[Any], params: Any) -> str:
    """Policy turns by position; judge prompts (they carry a CONTEXT block) get a judgement with the quote."""
    if "CONTEXT\n" in transcript[0].text:
        return judgement(found=True, quote=QUOTE)
    if len(transcript) == 1:
        return "<think>Whiplash was directed by Damien Chazelle.</think>\n<search>Damien Chazelle born</search>"
    return "<think>Chazelle was born in Providence.</think>\n<answer>Providence</answer>"


def entailment_first(_transcript: list[Any], words: list[str]) -> list[float]:
    """The NLI fallback's label-word scores: entailment wins."""
    return [0.0 if word == "entailment" else -5.0 for word in words]


@pytest.mark.java
@requires_pyserini
def test_one_question_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setenv("EVIGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    example = load_example("stepgap_hotpotqa")
    monkeypatch.setattr(example, "make_generator", lambda config: ScriptedGenerator(model, scores=entailment_first))
    data = tmp_path / "hotpot.jsonl"
    data.write_text(json.dumps(LINE) + "\n", encoding="utf-8")
    args = argparse.Namespace(
        data=data, questions=1, model="scripted", judge=None, nli=None, max_new_tokens=64,
        judge_max_new_tokens=256, out=tmp_path / "report.json",
    )  # fmt: skip
    report = asyncio.run(example.main(args))
    assert report["questions"] == 1 and report["em"] == 1.0 and report["steps"] == 2
    assert report["distribution"] == {"no-gap": 1.0}
    assert report["runs"][0]["answer"] == "Providence" and report["nli"] == ["generator:scripted"]
    printed = capsys.readouterr().out
    assert "answer='Providence' em=1 labels=['no-gap', 'no-gap']" in printed
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["runs"] == report["runs"]
