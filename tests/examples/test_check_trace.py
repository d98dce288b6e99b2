"""examples/check_trace.py on its bundled trace: with a scripted judge and a rule NLI the answer that names the
replacement year is a contradicted claim (CC -> retract); through ``main`` with a scripted file, the stages the
judge alone decides."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from evigraph.agents.stepgap.schemas import Trace
from tests.agents.stepgap.doubles import CONTRADICT, ENTAIL, judge_by_step, judgement
from tests.examples.loading import load_example

QUOTE = "The first tower on the island was lit in 1852"


class YearNLI:
    """Contradiction for a hypothesis naming 1896, entailment otherwise."""

    def batch_classify(self, pairs: list[tuple[str, str]]) -> list[object]:
        return [CONTRADICT if "1896" in hypothesis else ENTAIL for _, hypothesis in pairs]


def test_the_wrong_year_is_a_contradicted_claim(capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example("check_trace")
    trace = Trace.model_validate_json(example.TRACE.read_text(encoding="utf-8"))
    judge = judge_by_step(
        {"history of the lighthouse": judgement(found=True, quote=QUOTE), "1896": judgement(found=True, quote=QUOTE)}
    )
    checks = asyncio.run(example.check(trace, judge, YearNLI()))
    example.show(trace, checks)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Q: In which year was the first tower on Hog Island lit?"
    assert lines[1] == "step 1 (inference) search 'Hog Island Light first tower lit'"
    assert lines[2].startswith("    label no-gap -> none, confidence ")
    assert lines[4] == f"    quote: {QUOTE!r}"
    assert lines[5] == "step 2 (conclusion) answer '1896'"
    assert lines[6].startswith("    label CC -> retract, confidence ")
    assert "stageD:contradiction" in lines[7]
    assert lines[-1] == "judge: scripted (single); NLI: fake-nli"  # the engine each verdict names


def test_main_reads_the_trace_file_and_prints_every_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Step 1: the passage is about another entity (IE, Stage C); step 2: an off-target answer (CC, Stage A).
    replies = tmp_path / "judge.json"
    replies.write_text(json.dumps([judgement(match=False), judgement(off=True, drift="entity_drift")]), "utf-8")
    load_example("check_trace").main(["--model", f"scripted:{replies}"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("    label IE -> re-search") and "stageC:" in lines[3]
    assert lines[5].startswith("    label CC -> retract") and lines[6].strip().startswith("stageA:")
    assert lines[-2] == "judge: scripted:judge.json (single); NLI: not needed"
    assert lines[-1].startswith("checked 2 steps in ")
