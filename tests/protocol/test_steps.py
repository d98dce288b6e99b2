"""``## Step N`` blocks: headers, sections, quotes with offsets, and numbering issues."""

from __future__ import annotations

import pytest

from evigraph.agents.rlseek.protocol import QUOTE_PROTOCOL
from evigraph.agents.search_r1.protocol import SEARCH_R1_PROTOCOL
from evigraph.protocol import ParsedSteps
from evigraph.protocol import parse_steps as parse_with

RLSEEK_2_2 = (
    "Let me check the summary.\n"
    '## Step 1: Verify the statement "built in 1889"\n'
    "- Evidence: <quote>completed in 1889</quote><quote>It is 330 metres tall.</quote>\n"
    "- Evaluation: supported.\n"
    "## Step 2: Verify the height\n"
    "- Evidence: <quote>330 metres</quote>\n"
    "- Evaluation: supported.\n"
    "## Final Output\n"
    "<quote>ignored</quote>\n"
    '```json\n{"hallucination list": []}\n```\n'
)


def parse_steps(text: str) -> ParsedSteps:
    return parse_with(text, protocol=QUOTE_PROTOCOL)


def quotes(parsed: ParsedSteps) -> list[list[str]]:
    return [[q.content for q in step.quotes] for step in parsed.steps]


def test_rlseek_2_2_output_grammar() -> None:
    parsed = parse_steps(RLSEEK_2_2)
    assert [(s.index, s.number, s.number_text) for s in parsed.steps] == [(0, 1, "1"), (1, 2, "2")]
    assert parsed.steps[0].header == '## Step 1: Verify the statement "built in 1889"'
    assert parsed.steps[1].body == "- Evidence: <quote>330 metres</quote>\n- Evaluation: supported.\n"
    assert quotes(parsed) == [["completed in 1889", "It is 330 metres tall."], ["330 metres"]]
    (section,) = parsed.sections
    assert section.header == "## Final Output" and section.body.startswith("<quote>ignored</quote>")
    assert RLSEEK_2_2[: parsed.preamble_end] == "Let me check the summary.\n"
    assert not parsed.issues and not parsed.implicit


def test_offsets_point_into_the_whole_text() -> None:
    parsed = parse_steps(RLSEEK_2_2)
    for step in parsed.steps:
        assert RLSEEK_2_2[step.start : step.end].startswith(step.header)
        assert RLSEEK_2_2[step.body_start : step.end] == step.body
        for quote in step.quotes:
            assert step.start <= quote.start < quote.end <= step.end
            assert RLSEEK_2_2[quote.content_start : quote.content_end] == quote.content
            assert RLSEEK_2_2[quote.start : quote.end] == f"<quote>{quote.content}</quote>"
    assert parsed.steps[0].end == parsed.steps[1].start
    assert parsed.steps[1].end == parsed.sections[0].start


def test_no_header_means_one_implicit_step() -> None:
    # RLSeek P3: L = 1; spec Q4 (no step, no quote) then has one step with no quote.
    parsed = parse_steps("The summary says <quote>x</quote>.\n## Final Output\n[]")
    (step,) = parsed.steps
    assert step.implicit and parsed.implicit
    assert (step.start, step.end, step.number, step.header) == (0, len(parsed.text), None, "")
    assert [q.content for q in step.quotes] == ["x"]
    assert parsed.sections == ()
    (empty,) = parse_steps("").steps
    assert empty.implicit and empty.quotes == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("## Step 1: a <quote>x\n", ["unclosed_tag"]),  # unmatched opening quote
        ("## Step 1: a x</quote>\n", ["stray_close"]),  # unmatched closing quote
        ("## Step 1: <quote><quote>x</quote></quote>\n", ["nested_tag", "stray_close"]),  # quote in quote
    ],
)
def test_unmatched_quote_is_an_issue_on_its_step(text: str, expected: list[str]) -> None:
    parsed = parse_steps(text + "## Step 2: fine <quote>y</quote>\n")
    first, second = parsed.steps
    assert [i.code for i in first.issues] == expected
    assert all(first.start <= i.position < first.end for i in first.issues)
    assert second.issues == ()


@pytest.mark.parametrize(
    ("numbers", "expected"),
    [
        ("1 2 3", []),  # in order
        ("1 3", ["step_number_gap"]),  # a skipped number
        ("2 3", ["step_number_gap"]),  # does not start at 1
        ("1 2 2 3", ["duplicate_step_number"]),  # a repeat, then back in order
        ("1 3 2", ["step_number_gap", "step_number_gap"]),  # out of order
    ],
)
def test_numbering_issues(numbers: str, expected: list[str]) -> None:
    text = "".join(f"## Step {n}: x\n" for n in numbers.split())
    assert [i.code for i in parse_steps(text).issues] == expected


@pytest.mark.parametrize(
    ("line", "is_step"),
    [
        ("## Step 1: x", True),
        ("##Step1", True),
        ("## Step\t7 check", True),
        ("##   Step 12abc", True),
        ("### Step 1", False),  # a deeper heading stays inside the step above
        ("## step 1", False),  # case-sensitive, as the spec's regex
        ("## Stepping back", False),  # a non-step section
        ("text ## Step 1", False),  # not at a line start
    ],
)
def test_header_variants(line: str, is_step: bool) -> None:
    parsed = parse_steps("## Step 1: first\n" + line + "\nbody\n")
    assert len(parsed.steps) == (2 if is_step else 1)


def test_header_does_not_span_lines_and_sections_end_steps() -> None:
    parsed = parse_steps("## Step 1: a\n##\nStep 2\n## Notes\nn\n## Step 2: b\n")
    assert [s.number for s in parsed.steps] == [1, 2]
    assert [s.header for s in parsed.sections] == ["## Notes"]
    assert parsed.steps[0].body == "##\nStep 2\n"


def test_absurd_step_number_is_kept_as_text() -> None:
    digits = "9" * 5000  # int() of this many digits would raise
    (step,) = parse_steps(f"## Step {digits}: x").steps
    assert step.number is None and step.number_text == digits
    assert [i.code for i in step.issues] == ["step_number_gap"]


def test_other_protocols_can_be_read_inside_steps() -> None:
    (step,) = parse_with("## Step 1\n<think>t</think>", protocol=SEARCH_R1_PROTOCOL).steps
    assert [b.tag for b in step.blocks] == ["think"] and step.quotes == ()
