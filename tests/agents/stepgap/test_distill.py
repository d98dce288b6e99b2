"""Distillation data for a student checker: one example per checked step, the judge's own prompt (plus the NLI
stages' results as text) in, the teacher's whole A-C JSON, pipeline path and label out; unchecked steps and
binary checks give none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evigraph.agents.stepgap.distill import student_examples
from evigraph.agents.stepgap.judge import single_prompt, step_views
from evigraph.agents.stepgap.schemas import StepGapConfig
from evigraph.generators.scripted import ScriptedGenerator
from tests.agents.stepgap.doubles import ENTAIL, FakeNLI
from tests.agents.stepgap.test_graph import run
from tests.graphs.test_search_r1 import TURNS


def test_every_checked_step_becomes_one_student_example() -> None:
    result = run(ScriptedGenerator(TURNS), FakeNLI({"Rhode Island": ENTAIL}))
    output = result["output"]
    examples = student_examples(output.trace, output.checks)
    assert [e["step"] for e in examples] == [c.index for c in output.checks.steps]
    views = step_views(output.trace, StepGapConfig())
    for example, check in zip(examples, output.checks.steps, strict=True):
        user, assistant = example["messages"]
        assert user["content"].startswith(single_prompt(views[check.index], max_chars=600))
        reply, path, label = assistant["content"].split("\n")
        assert json.loads(reply) == check.judgement and set(check.judgement) == {
            "step_minus1_alignment", "step_0_abstention_check", "step_1_quote_search"}  # fmt: skip
        assert path == f"pipeline_path: {check.pipeline_path}" and label == f"label: {check.label}"
    nli_steps = [e for e, c in zip(examples, output.checks.steps, strict=True) if "stageE" in c.pipeline_path]
    assert nli_steps and all("NLI results for this step:\n- stage E:" in e["messages"][0]["content"] for e in nli_steps)


def test_unchecked_steps_and_binary_checks_give_no_example() -> None:
    result = run(ScriptedGenerator(TURNS), FakeNLI())
    output = result["output"]
    failed = output.checks.model_copy(
        update={"steps": [output.checks.steps[0].model_copy(update={"label": None}), *output.checks.steps[1:]]}
    )
    assert [e["step"] for e in student_examples(output.trace, failed)] == [1, 2]
    assert student_examples(output.trace, output.checks.model_copy(update={"binary": True})) == []


def test_export_sft_student_reads_stored_stepgap_runs(tmp_path: Any) -> None:
    from evigraph.cli.train import _sft_lines
    from evigraph.registry import get_agent

    result = run(ScriptedGenerator(TURNS), FakeNLI())
    distill = get_agent("stepgap").load().require("distill")  # declared by the agent, found by the trainer
    lines = _sft_lines(result["trajectory"], distill=distill, min_reward=None)
    assert [line["step"] for line in lines] == [0, 1, 2]
    assert lines[0]["messages"][1]["content"].endswith(f"label: {result['output'].checks.steps[0].label}")


def test_export_sft_student_is_refused_for_an_agent_without_a_distillation_export(tmp_path: Any) -> None:
    from evigraph.cli.train import export_sft_command
    from evigraph.errors import ConfigError

    runs = tmp_path / "predictions.jsonl"
    runs.write_text("")
    with pytest.raises(ConfigError, match="declares no distill"):
        export_sft_command("rlseek", trajectories=runs, out=tmp_path / "sft.jsonl", student=True)
    assert not (tmp_path / "sft.jsonl").exists()
