"""examples/rank_answers.py with a scripted evaluator: claims per answer with their evidence, S(y) and the
ranking, ties marked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evigraph.agents.rag_zeval.prompts import assign_letters, content_key
from evigraph.agents.rag_zeval.schemas import RagZevalOutput, ScoredCandidate
from tests.examples.loading import load_example

BUILT = "The current octagonal iron tower was completed in 1895."
HEIGHT = "At about 191 feet it is one of the tallest lighthouses in the United States."


def _claim(text: str, evidence: str | None) -> dict[str, object]:
    return {
        "claim": text,
        "is_supported": evidence is not None,
        "grounding_evidence": [evidence] if evidence else [],
        "analysis": "compared with the reference",
    }


def _reply(letters: tuple[str, ...]) -> str:
    claims = [
        [_claim("The current tower was completed in 1895", BUILT), _claim("it is about 191 feet tall", HEIGHT)],
        [_claim("The current tower was completed in 1895", BUILT), _claim("it is about 120 feet tall", None)],
        [_claim("The tower was completed in 1828.", None), _claim("It is made of brick.", None)],
    ]
    items = [{"id": letter, "answer": "...", "atomic_claims": claims[i]} for i, letter in enumerate(letters)]
    return json.dumps(sorted(items, key=lambda item: item["id"]))


def test_the_example_prints_claims_scores_and_the_ranking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example("rank_answers")
    letters = assign_letters(3, seed=0, key=content_key(example.QUESTION, example.ANSWERS))
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([_reply(letters)]), encoding="utf-8")
    example.main(["--model", f"scripted:{replies}"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Q: {example.QUESTION}"
    assert lines[1:6] == [
        f"answer 1 (shown as {letters[0]}): S = 2/2",
        "  + 'The current tower was completed in 1895'",
        f"      evidence: {BUILT!r}",
        "  + 'it is about 191 feet tall'",
        f"      evidence: {HEIGHT!r}",
    ]
    assert f"answer 2 (shown as {letters[1]}): S = 1/2" in lines and "  - 'it is about 120 feet tall'" in lines
    assert f"answer 3 (shown as {letters[2]}): S = 0/2" in lines
    assert "ranking: 1 > 2 > 3" in lines


def test_equal_scores_are_shown_as_ties() -> None:
    example = load_example("rank_answers")
    output = RagZevalOutput(
        letters=("A", "B", "C"),
        candidates=(
            ScoredCandidate(id="A", index=0, supported=1, total=3),
            ScoredCandidate(id="B", index=1, supported=1, total=1),
            ScoredCandidate(id="C", index=2, supported=2, total=6),  # 2/6 ties 1/3 exactly
        ),
        parse_mode="strict",
    )
    assert example.ranking_line(output) == "2 > 1 = 3 (tied: equal scores)"
