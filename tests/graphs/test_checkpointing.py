"""Every graph we ship runs as a subgraph of a host with a checkpointer in LangGraph's strict deserialisation
mode: interrupted inside the subgraph (a human-in-the-loop ``interrupt``), resumed, and finished with the same
result as an uninterrupted run, with no serializer warning. LangGraph reads ``LANGGRAPH_STRICT_MSGPACK`` at
import, so each case runs in a fresh process (``_checkpoint_run.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugins import PLUGIN_ROOT

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("agent", ["veri-r1", "passage-check", "rlseek", "seva", "rag-zeval"])
@pytest.mark.parametrize("strict", ["true", "false"])
def test_interrupt_inside_the_subgraph_and_resume(agent: str, strict: str) -> None:
    env = {
        **os.environ,
        "LANGGRAPH_STRICT_MSGPACK": strict,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(PLUGIN_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("_checkpoint_run.py")), agent],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["paused"]  # the first call stopped inside the subgraph's generate node
    assert result["resumed"] == result["baseline"]  # same verdict, same transcript, no error
    assert result["resumed"]["error"] is None and result["checkpoints"] >= 3
    if strict == "true":
        assert result["warnings"] == []  # nothing blocked, nothing "unregistered"
