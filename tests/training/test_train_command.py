"""`evigraph train --dry-run`: every shipped config's command line parses with OpenRLHF 0.11.2's real argparse
and passes its post-parse checks; the prompt data and rollout config it writes are what the executor reads;
overrides and refusals."""

from __future__ import annotations

import json
import shlex
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from evigraph.errors import ConfigError
from evigraph.training.config import builtin_configs, load_train_config
from evigraph.training.executor import RolloutConfig
from tests.training.openrlhf_real import parse_train_ppo_ray

FIXTURE = Path(str(files("evigraph.agents.rlseek.fixtures")))


def _veri_r1_data(tmp_path: Path) -> Path:
    rows = [
        {"id": "c1", "claim": "Hog Island Light was first lit in 1853.", "label": "REFUTES",
         "evidence": ["Hog Island Light_sentence_3"]},
        {"id": "c2", "claim": "Hog Island is in Virginia.", "label": "SUPPORTS", "evidence": ["Hog Island_sentence_0"]},
    ]  # fmt: skip
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _questions(tmp_path: Path) -> Path:
    rows = [{"id": "q1", "question": "Who directed Whiplash?", "golds": ["Damien Chazelle"]},
            {"id": "q2", "question": "Where was Chazelle born?", "golds": ["Providence"]}]  # fmt: skip
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _pairs(tmp_path: Path) -> Path:
    source = "It opened in March 1932."
    rows = [{"id": "p1", "claim": "It opened in 1932.", "source": source, "label": "Attributable"},
            {"id": "p2", "claim": "It opened in 1931.", "source": source, "label": False}]  # fmt: skip
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


JUDGE = "openai:teacher@http://127.0.0.1:8001/v1"


def _ranked_sets(tmp_path: Path) -> Path:
    reference = "The bridge opened in 1932 and is 503 metres long."
    answers = ["It opened in 1932.", "It opened in the 1930s.", "It opened in 1950.", "It is a famous tunnel."]
    rows = [{"id": f"r{k}", "question": "When did the bridge open?", "reference": reference,
             "candidates": [{"text": t, "alpha": a} for t, a in zip(answers, (0, -0.5, -1, -1.4), strict=True)]}
            for k in range(3)]  # fmt: skip
    path = tmp_path / "ranked.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _plan(tmp_path: Path, config: str, **kwargs: Any) -> tuple[list[str], dict[str, str], int]:
    """The first stage's argv, environment and prompt count."""
    from evigraph.cli.train import training_plan

    data = {
        "rlseek": FIXTURE,
        "stepgap-generator": _questions(tmp_path),
        "seva": _pairs(tmp_path),
        "rag-zeval": _ranked_sets(tmp_path),
    }.get(config) or _veri_r1_data(tmp_path)
    url = None if config in {"rlseek", "seva", "rag-zeval"} else "http://127.0.0.1:8000/retrieve"
    overrides = [f"judge={JUDGE}"] if config == "stepgap-generator" else []
    defaults = {"model": "/models/Qwen2.5-7B-Instruct", "data": data, "out": tmp_path / "run", "retriever_url": url,
                "overrides": overrides}  # fmt: skip
    stage = training_plan(config, **{**defaults, **kwargs})[0]
    return stage.argv, stage.env, stage.n_prompts


@pytest.mark.parametrize("config", sorted(builtin_configs()))
def test_every_shipped_config_parses_with_openrlhf_0_11_2(config: str, tmp_path: Path, monkeypatch: Any) -> None:
    argv, env, n_prompts = _plan(tmp_path, config)
    assert argv[1:4] == ["-m", "evigraph.training.launch", "--"]
    args = parse_train_ppo_ray(monkeypatch, argv[4:])
    assert args.train.agent_func_path.endswith("training/agent_func.py")
    assert args.reward.remote_url == ["agent"]  # OpenRLHF's own switch to the agent path
    assert args.algo.advantage.estimator == "group_norm" and args.rollout.n_samples_per_prompt > 1
    shipped = load_train_config(config)
    assert args.rollout.n_samples_per_prompt == shipped.openrlhf["rollout.n_samples_per_prompt"]
    assert args.actor.adam.lr == shipped.openrlhf["actor.adam.lr"]
    rollout = RolloutConfig.model_validate_json(Path(env["EVIGRAPH_ROLLOUT_CONFIG"]).read_text())
    assert rollout.agent == shipped.agent and rollout.agent_config == shipped.agent_config
    assert (rollout.outcome, rollout.step_value) == (shipped.outcome, shipped.step_value)
    lines = [json.loads(x) for x in Path(args.data.prompt_dataset).read_text().splitlines()]
    assert len(lines) == n_prompts > 0 and all(json.loads(x["label"])["gold"] for x in lines)


def test_a_curriculum_runs_stages_in_order_each_from_the_last_checkpoint(tmp_path: Path, monkeypatch: Any) -> None:
    from evigraph.cli.train import training_plan

    stages = training_plan(
        "rag-zeval", model="/models/qwen", data=_ranked_sets(tmp_path), out=tmp_path / "run", retriever_url=None,
        overrides=[],
    )  # fmt: skip
    assert [s.name for s in stages] == ["three", "four"] and [s.n_prompts for s in stages] == [3, 3]
    first, second = (parse_train_ppo_ray(monkeypatch, s.argv[4:]) for s in stages)
    assert first.actor.model_name_or_path == "/models/qwen"
    assert second.actor.model_name_or_path == first.ckpt.output_dir == str(stages[0].out / "ckpt")
    for stage, size in zip(stages, (3, 4), strict=True):
        labels = [json.loads(json.loads(x)["label"]) for x in (stage.out / "prompts.jsonl").read_text().splitlines()]
        assert all(len(x["input"]["candidates"]) == len(x["gold"]["alphas"]) == size for x in labels)
        # Kept candidates stay best first, so the gold order is still the alphas' order.
        assert all(x["gold"]["alphas"] == sorted(x["gold"]["alphas"], reverse=True) for x in labels)
    again = training_plan(
        "rag-zeval", model="m", data=_ranked_sets(tmp_path), out=tmp_path / "again", retriever_url=None, overrides=[]
    )
    assert (again[0].out / "prompts.jsonl").read_text() == (stages[0].out / "prompts.jsonl").read_text()
    with pytest.raises(ConfigError, match="stage 'three': unknown option"):
        training_plan(
            "rag-zeval", model="m", data=_ranked_sets(tmp_path), out=tmp_path / "bad", retriever_url=None,
            overrides=['curriculum=[{"name": "three", "options": {"size": 3}}]'],
        )  # fmt: skip
    with pytest.raises(ConfigError, match="has no curriculum"):
        _plan(tmp_path, "rlseek", overrides=['curriculum=[{"name": "x", "options": {}}]'])


def test_overrides_reach_the_command_line(tmp_path: Path, monkeypatch: Any) -> None:
    overrides = ["openrlhf.actor.adam.lr=5e-7", "advantage.mode=capo", "openrlhf.rollout.n_samples_per_prompt=8"]
    argv, env, _ = _plan(tmp_path, "rlseek", overrides=overrides)
    args = parse_train_ppo_ray(monkeypatch, argv[4:])
    assert args.actor.adam.lr == 5e-7 and args.rollout.n_samples_per_prompt == 8
    assert json.loads(env["EVIGRAPH_ADVANTAGE_CONFIG"])["mode"] == "capo"


def test_refusals_name_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--retriever-url"):
        _plan(tmp_path, "veri-r1", retriever_url=None)
    with pytest.raises(ConfigError, match="must not grade itself"):
        _plan(tmp_path, "stepgap-generator", overrides=[])
    with pytest.raises(ConfigError, match="set step_value"):
        _plan(tmp_path, "veri-r1", overrides=["advantage.mode=process_additive"])
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        _plan(tmp_path, "rlseek", overrides=["nonsense"])
    with pytest.raises(ConfigError, match="no training config 'nope'"):
        _plan(tmp_path, "nope")
    no_gold = tmp_path / "nogold.jsonl"
    no_gold.write_text('{"id": "x", "claim": "A claim."}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="training needs gold answers"):
        _plan(tmp_path, "veri-r1", data=no_gold)


def test_the_cli_prints_a_runnable_line_and_refuses_without_the_train_extra(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "run"
    base = [sys.executable, "-m", "evigraph.cli.app", "train", "rlseek", "--model", "m", "--data", str(FIXTURE),
            "--out", str(out)]  # fmt: skip
    done = subprocess.run([*base, "--dry-run"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    words = shlex.split(done.stdout.strip())
    assert words[0].startswith("EVIGRAPH_ROLLOUT_CONFIG=") and "--train.agent_func_path" in words
    assert (out / "command.sh").read_text().strip().endswith(done.stdout.strip())
    done = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "evigraph[train]" in done.stderr


@pytest.mark.parametrize(
    ("config", "data", "n"),
    [
        ("veri-r1", "veri-r1-claim-verification/eval_fever.jsonl", None),
        ("stepgap-generator", "hotpotqa-dev-ircot500/dev_subsampled.jsonl", 500),
        ("rlseek", "faithbench", 750),
    ],
)
def test_the_shared_data_converts_to_openrlhf_prompts(config: str, data: str, n: int | None, tmp_path: Path) -> None:
    from tests.markers import shared_data

    source = shared_data(data.split("/")[0])
    if not source.is_dir():
        pytest.skip("shared data is not here")
    path = source / data.split("/", 1)[1] if "/" in data else source
    _, _, count = _plan(tmp_path, config, data=path)
    lines = [json.loads(x) for x in (tmp_path / "run" / "prompts.jsonl").read_text().splitlines()]
    assert len(lines) == count and (n is None or count == n)
    assert all(json.loads(x["label"])["gold"] and x["datasource"] for x in lines)


def test_docs_list_every_shipped_configs_current_flags() -> None:
    from evigraph.training.config import load_sft_config, openrlhf_argv, shell_line

    doc = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text(encoding="utf-8")
    flat = " ".join(doc.replace("\\\n", " ").split())
    for name in builtin_configs():
        assert shell_line(openrlhf_argv(load_train_config(name).openrlhf)) in flat, f"docs/training.md: {name}"
    for name in builtin_configs("sft"):
        assert shell_line(openrlhf_argv(load_sft_config(name).openrlhf)) in flat, f"docs/training.md: sft {name}"
