"""examples/detect_spans.py with a scripted detector: the marked response, the spans' offsets and their quotes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.examples.loading import load_example

REPLY = (
    "## Step 1: Check the year the tower was completed\n"
    "- Evidence: <quote>The current octagonal iron tower was completed in 1895.</quote>\n"
    '- "completed in 1905" is wrong: the source says 1895.\n'
    "## Step 2: Check the paint\n"
    "- Evidence: <quote>The tower is painted in black and white stripes.</quote>\n"
    '- "painted black and white" is not backed: the source says nothing about paint.\n'
    "## Final Output\n"
    '```json\n{"hallucination list": ["completed in 1905", "painted black and white"]}\n```'
)


def test_the_example_marks_the_spans_and_shows_their_quotes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example("detect_spans")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([REPLY]), encoding="utf-8")
    example.main(["--model", f"scripted:{replies}"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "response: Cape Charles Light stands on Smith Island in Virginia. The current iron tower was "
        "[[completed in 1905]] and is [[painted black and white]]."
    )
    first, second = example.RESPONSE.index("completed in 1905"), example.RESPONSE.index("painted black")
    quote = "The current octagonal iron tower was completed in 1895."
    quoted = example.SOURCE.index(quote)
    assert lines[1:7] == [
        f"span [{first}, {first + 17}) 'completed in 1905' (named in step 1)",
        f"span [{second}, {second + 23}) 'painted black and white' (named in step 2)",
        "Step 1: Check the year the tower was completed",
        f"    quote {quote!r} (source [{quoted}, {quoted + len(quote)}))",
        "Step 2: Check the paint",
        # The second quote is the model's invention: reported with its overlap, not as found.
        "    quote 'The tower is painted in black and white stripes.' (not in the source (15%))",
    ]
    assert lines[7] == "2 step(s), 2 quote(s), 1 found in the source"
    assert lines[8].startswith("took ")


def test_a_clean_response_and_an_unreadable_reply_are_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = load_example("detect_spans")
    clean = (
        "## Step 1: Check the location\n- Evidence: <quote>Cape Charles Light stands on Smith Island</quote>\n"
        '- Backed.\n## Final Output\n```json\n{"hallucination list": []}\n```'
    )
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([clean]), encoding="utf-8")
    example.main(["--model", f"scripted:{replies}"])
    printed = capsys.readouterr().out
    assert "[[" not in printed and "no hallucinated span found" in printed
    replies.write_text(json.dumps(["I think it is all fine."]), encoding="utf-8")
    example.main(["--model", f"scripted:{replies}"])
    assert "no final list could be read" in capsys.readouterr().out
