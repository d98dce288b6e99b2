"""RLSeek's verdict when its final list flags a span no reasoning step names (issue 30 point 8): the span records
the steps that name it, and the ``Verification`` carries one line saying the two disagree. Offsets are counted by
hand."""

from __future__ import annotations

from types import SimpleNamespace

from evigraph.agents.rlseek.schemas import DetectedSpan, RLSeekOutput
from evigraph.agents.rlseek.verdict import detect
from evigraph.agents.rlseek.verification import disagreement, to_verification

T = "The Eiffel Tower is 330 metres tall and was completed in 1899."
D = "The Eiffel Tower was completed in 1889. It is 330 metres tall."
# Step 1 checks the year; "330 metres tall" ([20, 35) of T) is listed without any step discussing it.
REPLY = (
    '## Step 1: Check "completed in 1899"\n- Evidence: <quote>completed in 1889</quote>\n- Evaluation: 1889.\n'
    '## Final Output\n```json\n{"hallucination list": ["1899", "330 metres tall"]}\n```'
)


def test_a_flagged_span_no_step_names_is_said_in_one_line() -> None:
    output = detect(REPLY, task="summary", source=D, response=T)
    assert [(s.start, s.end, s.steps) for s in output.spans] == [(57, 61, (0,)), (20, 35, ())]
    trajectory = SimpleNamespace(error=None, input={"response": T})
    verdict = to_verification({"output": output, "trajectory": trajectory})
    assert verdict.disagreement == (
        'the verdict disagrees with its own reasoning: it flags [20, 35) "330 metres tall", which no reasoning step '
        "names"
    )
    assert "the verdict disagrees with its own reasoning" in verdict.summary()


def test_spans_every_step_names_and_spans_of_older_outputs_raise_nothing() -> None:
    named = REPLY.replace('"330 metres tall"]', '"1899"]')
    assert to_verification({"output": detect(named, task="summary", source=D, response=T)}).disagreement is None
    # Written before the steps were recorded: nothing is known, so nothing is claimed.
    older = RLSeekOutput(task="summary", spans=(DetectedSpan(start=20, end=35, text="330 metres tall"),), parse_ok=True)
    assert disagreement(older) is None
