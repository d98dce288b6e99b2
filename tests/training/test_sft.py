"""Trajectories as multi-turn SFT data: the messages follow the transcript convention, OpenRLHF 0.11.2's own SFT
dataset trains exactly the assistant turns of an exported Veri-R1 run (search results masked), `export-sft`
filters failed and low-reward runs, and every `train-sft` command line parses with the real SFT argparse."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evigraph.training.config import builtin_configs
from evigraph.training.sft import sft_line, sft_messages
from tests.training.openrlhf_real import import_sft_dataset, parse_train_sft
from tests.training.test_executor import RLSEEK_REPLY


def _veri_r1_run() -> Any:
    from evigraph.generators.scripted import ScriptedGenerator
    from evigraph.graphs.veri_r1 import build_veri_r1_graph
    from tests.agents.veri_r1.test_graph import ANSWER_REFUTE, CLAIM, PLAN, DictSearch

    replies = [
        f"{PLAN}\n<search>Hog Island Light</search>",
        "<think>When was it first lit?</think>\n<search>Hog Island Light first lit</search>",
        ANSWER_REFUTE,
    ]
    graph = build_veri_r1_graph(ScriptedGenerator(replies), DictSearch())
    gold = {"label": "REFUTES", "evidence": ["Hog Island Light_sentence_0", "Hog Island Light_sentence_3"]}
    return asyncio.run(graph.ainvoke({"claim": CLAIM, "gold": gold}))["trajectory"]


def test_openrlhf_multiturn_sft_trains_exactly_the_policy_turns(qwen2_style_tokenizer: Any, monkeypatch: Any) -> None:
    trajectory = _veri_r1_run()
    messages = sft_messages(trajectory)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert all("<information>" in m["content"] for m in messages[2:5:2])
    module = import_sft_dataset(monkeypatch)
    dataset = module.SFTDataset.__new__(module.SFTDataset)
    dataset.__dict__.update(
        multiturn=True, input_key="messages", output_key=None, pretrain_mode=False, input_template=None,
        tokenizer=qwen2_style_tokenizer, max_length=100_000,
        apply_chat_template=qwen2_style_tokenizer.apply_chat_template,
    )  # fmt: skip
    processed = dataset.process_data({"messages": messages})
    full = qwen2_style_tokenizer.apply_chat_template(messages, tokenize=False)
    ids = qwen2_style_tokenizer(full, add_special_tokens=False)["input_ids"]
    trained = [qwen2_style_tokenizer.decode(ids[a : b + 1]) for a, b in processed["response_ranges"]]
    policy = [s.text for s in trajectory.segments if s.origin == "policy"]
    assert len(trained) == 3
    for text, turn in zip(trained, policy, strict=True):
        assert text.startswith(turn) and "<information>" not in text  # environment text is never trained


def test_export_sft_keeps_successful_runs_above_the_reward(tmp_path: Path) -> None:
    from importlib.resources import files

    from evigraph.agents.rlseek.evaluation import EVALUATION
    from evigraph.evaluation.pipeline import evaluate
    from evigraph.generators.scripted import ScriptedGenerator
    from evigraph.graphs.rlseek import build_rlseek_graph

    records = list(EVALUATION.load_records(Path(str(files("evigraph.agents.rlseek.fixtures"))), limit=4, seed=None))
    generator = ScriptedGenerator(lambda _t, _p: RLSEEK_REPLY)
    evaluate(EVALUATION, build_rlseek_graph(generator), records, out_dir=tmp_path / "run", run_config={},
             options=EVALUATION.options(), concurrency=1)  # fmt: skip
    predictions = tmp_path / "run" / "predictions.jsonl"
    rewards = [json.loads(line)["rewards"]["final"] for line in predictions.read_text().splitlines()]
    threshold = sorted(rewards)[len(rewards) // 2]
    out = tmp_path / "sft.jsonl"
    command = [sys.executable, "-m", "evigraph.cli.app", "export-sft", "rlseek", "--trajectories", str(predictions),
               "--out", str(out), "--min-reward", str(threshold)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert json.loads(done.stdout)["kept"] == len(lines) == sum(r >= threshold for r in rewards)
    assert all(x["messages"][-1] == {"role": "assistant", "content": RLSEEK_REPLY} for x in lines)
    assert sft_line(_veri_r1_run())["reward"] is not None


@pytest.mark.parametrize("config", sorted(builtin_configs("sft")))
def test_every_shipped_sft_config_parses_with_openrlhf(config: str, tmp_path: Path, monkeypatch: Any) -> None:
    from evigraph.cli.train import sft_plan

    data = tmp_path / "sft.jsonl"
    data.write_text('{"messages": []}\n')
    argv = sft_plan(config, model="/models/student", data=data, out=tmp_path / "out", overrides=[])
    args = parse_train_sft(monkeypatch, argv[3:])
    assert args.data.multiturn and args.data.input_key == "messages"


def test_train_sft_command_lines_parse_with_openrlhf(tmp_path: Path, monkeypatch: Any) -> None:
    from evigraph.cli.train import sft_plan

    data = tmp_path / "sft.jsonl"
    data.write_text('{"messages": []}\n')
    argv = sft_plan("multiturn", model="/models/student", data=data, out=tmp_path / "out", overrides=[
        "openrlhf.ds.lora.rank=16", "openrlhf.train.max_epochs=2"])  # fmt: skip
    assert argv[:3] == ["deepspeed", "--module", "openrlhf.cli.train_sft"]
    args = parse_train_sft(monkeypatch, argv[3:])
    assert args.data.multiturn and args.data.input_key == "messages" and args.data.apply_chat_template
    assert args.ds.lora.rank == 16 and args.train.max_epochs == 2 and args.model.model_name_or_path == "/models/student"
