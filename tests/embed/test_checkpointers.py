"""The embedding forms on real SQLite savers, each step of a host run in a process of its own
(``_checkpointer_run.py``), as a server that pauses a run and resumes it later does.

- A synchronous host on ``SqliteSaver`` (sync methods only) and an async host on ``AsyncSqliteSaver`` (async
  methods only) run each form, pause at an interrupt inside the verifier, and resume in a second process with the
  verdict an uninterrupted run gives.
- A fresh process loads evigraph's types from a checkpoint another process wrote -- the paused verifier's state on
  resume, the verdict when reading the host's state -- without LangGraph's "unregistered type" warning, in its
  default and its strict deserialisation mode, when the saver uses :func:`evigraph.embed.checkpoint_serializer`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evigraph.embed import VERIFICATION_TYPES, Verification, checkpoint_serializer, checkpoint_types, verifier_node
from tests.embed import hosts

ROOT = Path(__file__).resolve().parents[2]


def step(form: str, agent: str, saver: str, name: str, db: Path, *, serde: bool = False, strict: bool = False) -> Any:
    """One step of ``_checkpointer_run.py`` in a fresh process: its JSON report."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("LANGGRAPH_STRICT_MSGPACK", None)
    if strict:
        env["LANGGRAPH_STRICT_MSGPACK"] = "true"
    command = [sys.executable, "-m", "tests.embed._checkpointer_run", form, agent, saver, name, str(db)]
    done = subprocess.run(
        [*command, *(["--serde"] if serde else [])], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


# -- sync-only and async-only savers, an interrupt, a resume in a second process ------------------------------------
@pytest.mark.parametrize(
    ("form", "agent", "saver"),
    [
        ("node", "veri-r1", "sqlite"),
        ("node", "stepgap", "sqlite"),
        ("tool", "veri-r1", "sqlite"),
        ("middleware", "veri-r1", "sqlite"),
        ("node", "veri-r1", "aiosqlite"),
        ("tool", "veri-r1", "aiosqlite"),
        ("middleware", "veri-r1", "aiosqlite"),
    ],
)
def test_an_interrupt_inside_the_verifier_resumes_in_a_second_process(
    form: str, agent: str, saver: str, tmp_path: Path
) -> None:
    db = tmp_path / "host.sqlite"
    started = step(form, agent, saver, "start", db)
    baseline = started["baseline"]  # the uninterrupted run on the same saver
    assert isinstance(baseline, dict), baseline  # a verdict, not the error a tool reports
    assert baseline["agent"] == agent and baseline["error"] is None
    assert baseline["passed"] is (form == "tool")  # the tool checks the right answer, the others the wrong one
    assert started["paused"] and started["verdict"] is None  # stopped inside the verifier, no verdict yet

    resumed = step(form, agent, saver, "resume", db)
    assert not resumed["paused"] and resumed["verdict_type"] == "Verification"
    assert resumed["verdict"] == baseline


# -- evigraph's types in a checkpoint read by a fresh process ----------------------------------------------------
@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize("form", ["node", "untyped-node", "tool", "middleware"])
def test_a_fresh_process_loads_evigraph_types_from_a_checkpoint_without_warnings(
    form: str, strict: bool, tmp_path: Path
) -> None:
    db = tmp_path / "host.sqlite"
    started = step(form, "veri-r1", "sqlite", "start", db, serde=True, strict=strict)
    resumed = step(form, "veri-r1", "sqlite", "resume", db, serde=True, strict=strict)  # loads the paused verifier
    read = step(form, "veri-r1", "sqlite", "read", db, serde=True, strict=strict)  # loads the host's state
    assert started["warnings"] == resumed["warnings"] == read["warnings"] == []
    assert read["verdict"] == resumed["verdict"] == started["baseline"]
    # A tool message's artifact is stored dumped with its message (LangChain's model_dump): it comes back a dict.
    assert read["verdict_type"] == ("dict" if form == "tool" else "Verification")


def test_without_the_serializer_langgraph_warns_about_every_evigraph_type(tmp_path: Path) -> None:
    """What the serializer is for: LangGraph's default one names each class it rebuilds unregistered."""
    db = tmp_path / "host.sqlite"
    step("node", "veri-r1", "sqlite", "start", db)
    resumed = step("node", "veri-r1", "sqlite", "resume", db)
    read = step("node", "veri-r1", "sqlite", "read", db)
    assert any("unregistered type evigraph.graphs.kit.search_loop.Progress" in w for w in resumed["warnings"])
    assert any("unregistered type evigraph.verification.Verification" in w for w in read["warnings"])


def test_checkpoint_types_names_the_verdict_the_verifier_graph_and_the_host_classes() -> None:
    case = hosts.case("veri-r1")
    node = verifier_node("veri-r1", model=case.generator_pass, **case.extra)
    types = checkpoint_types(node, Verification, ("my_host.models", "Note"))
    assert {(t.__module__, t.__name__) for t in VERIFICATION_TYPES} <= types
    assert {("evigraph.graphs.kit.search_loop", "Progress"), ("evigraph.trajectory", "Segment")} <= types
    assert ("my_host.models", "Note") in types
    assert checkpoint_types() == {(t.__module__, t.__name__) for t in VERIFICATION_TYPES}
    verdict = Verification(agent="veri-r1", passed=True, label="SUPPORT")
    serializer = checkpoint_serializer(node)
    assert serializer.loads_typed(serializer.dumps_typed(verdict)) == verdict
    with pytest.raises(TypeError, match="cannot allow str"):
        checkpoint_types("veri-r1")
