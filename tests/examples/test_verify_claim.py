"""examples/verify_claim.py with scripted replies over the real demo corpus: the turns and the verdict it prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.examples.loading import load_example
from tests.markers import requires_pyserini

REPLIES = [
    "<plan>Find when the first tower was lit.</plan>\n<search>Hog Island Light first lit</search>",
    "<think>The first tower was lit in 1852, not 1853.</think>\n"
    "<answer>\nLabel: REFUTE\nEvidence: [[Hog Island Light_sentence_0]]\n</answer>",
]


@pytest.mark.java
@requires_pyserini
def test_the_example_prints_each_turn_and_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(REPLIES), encoding="utf-8")
    load_example("verify_claim").main(["Hog Island Light was first lit in 1853.", "--model", f"scripted:{replies}"])
    printed = capsys.readouterr().out
    policy, environment, answer = printed.split("--- ")[1:]
    assert policy.startswith("policy\n<plan>") and "<search>Hog Island Light first lit</search>" in policy
    # The search really ran over the demo corpus: the retrieved entry's text is in the environment turn.
    assert environment.startswith("environment\n") and "lit in 1852" in environment
    assert "Label: REFUTE" in answer
    assert "label=REFUTE evidence=['Hog Island Light_sentence_0'] format_ok=True" in printed
    assert "1 searches" in printed
