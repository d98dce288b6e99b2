"""The example plug-in agent (examples/plugin_agent), registered through the entry-point group only, runs through
``evigraph eval``, ``score`` and ``reward`` -- commands it gets from its declaration, with no CLI code -- and its
graph takes a generator per run."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evigraph.generators.scripted import ScriptedGenerator
from evigraph.graphs.kit.context import RunContext
from tests.plugins import PLUGIN_ROOT, install_plugin_agent

RECORDS = [
    {"id": "a", "claim": "The light was lit in 1854.", "passage": "It was first lit in 1854.", "supported": True},
    {"id": "b", "claim": "The tower is 60 feet tall.", "passage": "The tower rose 40 feet.", "supported": False},
    {"id": "c", "claim": "It stood in Virginia.", "passage": "It stood on Hog Island, Virginia.", "supported": True},
    {"id": "d", "claim": "It still stands.", "passage": "The tower was demolished in 1948.", "supported": False},
]  # fmt: skip
REPLIES = [
    "<answer>yes</answer>",  # a: right
    "<answer>yes</answer>",  # b: wrong
    "I believe <answer>yes</answer>",  # c: right verdict, text outside the tag
    "<answer>maybe</answer>",  # d: no verdict
]


def _cli(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*install_plugin_agent(site), os.environ.get("PYTHONPATH", "")]),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "evigraph", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_eval_score_and_reward_through_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "claims.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(REPLIES), encoding="utf-8")
    out = tmp_path / "run"
    site = tmp_path / "site"

    run = _cli(
        site, "eval", "passage-check", "--data", str(data), "--out", str(out), "--concurrency", "1",
        "--model", f"scripted:{replies}", "--lenient", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    # a and c right (c is read leniently), b wrong, d unreadable; c alone has text outside its block.
    assert (report["n"], report["accuracy"], report["format_rate"]) == (4, 0.5, 0.75)
    assert json.loads(run.stdout) == {"n": 4, "accuracy": 0.5, "format_rate": 0.75, "n_failed_runs": 0}
    pinned = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert pinned["agent"] == "passage-check" and pinned["config"] == {
        "max_new_tokens": 64,
        "lenient": True,
        "constrained": None,
    }

    scored = _cli(
        site, "score", "passage-check", "--pred", str(out / "predictions.jsonl"), "--gold", str(data), cwd=tmp_path
    )
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout) == {"n": 4, "accuracy": 0.5, "format_rate": 0.75, "n_gold": 4, "n_missing": 0}

    rewarded = _cli(site, "reward", "passage-check", "--input", str(out / "predictions.jsonl"), cwd=tmp_path)
    assert rewarded.returncode == 0, rewarded.stderr
    lines = [json.loads(line) for line in rewarded.stdout.splitlines()]
    assert [(r["id"], r["correct"], r["well_formed"], r["scalar"]) for r in lines] == [
        ("a", 1.0, 1.0, "correct"),
        ("b", 0.0, 1.0, "correct"),
        ("c", 1.0, 0.0, "correct"),
        ("d", 0.0, 1.0, "correct"),  # one well-formed block, but "maybe" is no verdict
    ]

    info = _cli(site, "info", "--json", cwd=tmp_path)
    agents = {a["name"]: a for a in json.loads(info.stdout)["agents"]}
    assert agents["passage-check"]["commands"] == ["eval", "reward", "score"]


def test_agent_settings_come_from_the_config_file_and_environment(tmp_path: Path) -> None:
    data = tmp_path / "claims.jsonl"
    data.write_text(json.dumps(RECORDS[0]) + "\n", encoding="utf-8")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(REPLIES[:1]), encoding="utf-8")
    (tmp_path / "evigraph.toml").write_text(
        "[generator]\nmax_new_tokens = 20\n[agents.passage-check]\nlenient = true\n", encoding="utf-8"
    )
    run = _cli(
        tmp_path / "site", "eval", "passage-check", "--data", str(data), "--out", str(tmp_path / "run"),
        "--model", f"scripted:{replies}", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    pinned = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert pinned["config"] == {"max_new_tokens": 20, "lenient": True, "constrained": None}


@pytest.fixture
def plugin_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN_ROOT))


def test_one_compiled_graph_serves_runs_with_their_own_generators(plugin_on_path: None) -> None:
    from passage_check.graph import build_passage_check_graph

    graph = build_passage_check_graph(None)  # compiled once, no generator bound
    yes, no = (
        ScriptedGenerator(lambda t, p: "<answer>yes</answer>"),
        ScriptedGenerator(lambda t, p: "<answer>no</answer>"),
    )
    inputs = {"claim": "c", "passage": "p", "gold": {"supported": True}}

    async def both() -> list[dict]:
        return await asyncio.gather(
            graph.ainvoke(inputs, context=RunContext(generator=yes)),
            graph.ainvoke(inputs, context=RunContext(generator=no)),
        )

    first, second = asyncio.run(both())
    assert first["output"].verdict == "yes" and second["output"].verdict == "no"
    assert first["trajectory"].reward("correct") == 1.0 and second["trajectory"].reward("correct") == 0.0
    assert first["trajectory"].reward_scalar == "correct"
    assert len(yes.calls) == len(no.calls) == 1


def test_the_bundled_claims_run_as_the_readme_shows(tmp_path: Path) -> None:
    data = PLUGIN_ROOT / "claims.jsonl"
    gold = [json.loads(line)["supported"] for line in data.read_text(encoding="utf-8").splitlines()]
    assert gold == [True, False, True, False]
    replies = tmp_path / "replies.json"  # right, right, wrong, no verdict
    replies.write_text(json.dumps(["<answer>yes</answer>", "<answer>no</answer>", "<answer>no</answer>", "?"]))
    out = tmp_path / "run"
    run = _cli(
        tmp_path / "site", "eval", "passage-check", "--data", str(data), "--out", str(out), "--concurrency", "1",
        "--model", f"scripted:{replies}", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"n": 4, "accuracy": 0.5, "format_rate": 0.75, "n_failed_runs": 0}


class RegexGuided(ScriptedGenerator):
    """A scripted backend in weak-model mode that enforces regex guides, as the embedded model's does."""

    supported_guides = frozenset({"regex"})
    constrained = True


def test_weak_model_mode_admits_only_the_answer_block(plugin_on_path: None, qwen2_style_tokenizer: Any) -> None:
    from passage_check.graph import ANSWER_GUIDE, build_passage_check_graph
    from passage_check.schemas import PassageCheckConfig

    inputs = {"claim": "c", "passage": "p"}
    guided = RegexGuided(["<answer>no</answer>"])
    assert asyncio.run(build_passage_check_graph(guided).ainvoke(inputs))["output"].verdict == "no"
    assert guided.calls[0].params.guide == ANSWER_GUIDE and ANSWER_GUIDE.regex == "<answer>(yes|no)</answer>"
    plain = ScriptedGenerator(["<answer>no</answer>"])  # not in weak-model mode: no guide
    asyncio.run(build_passage_check_graph(plain).ainvoke(inputs))
    assert plain.calls[0].params.guide is None
    off = RegexGuided(["<answer>no</answer>"])  # switched off in the config
    asyncio.run(build_passage_check_graph(off, config=PassageCheckConfig(constrained=False)).ainvoke(inputs))
    assert off.calls[0].params.guide is None
    strict = RegexGuided(["<answer>no</answer>"], tokenizer=qwen2_style_tokenizer)  # a training run: never guided
    asyncio.run(build_passage_check_graph(strict).ainvoke(inputs, context=RunContext(strict_tokens=True)))
    assert strict.calls[0].params.guide is None
