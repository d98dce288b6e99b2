"""``python -m evigraph.training.launch -- FLAGS`` (what ``evigraph train`` runs): Ray's ``runtime_env`` carries the
run's settings and OpenRLHF's own defaults to every worker, with the setup hook that installs the advantage mode;
Ray is initialised once, and OpenRLHF's stock CLI module runs as ``__main__`` on exactly the flags after ``--``
-- which its real argparse accepts. Ray itself is a stub here (no cluster on CPU CI)."""

from __future__ import annotations

import importlib
import json
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

from evigraph.training import advantage_patch, executor, launch
from evigraph.training.advantages import AdvantageConfig
from evigraph.training.config import OPENRLHF_MODULE
from tests.training.openrlhf_real import parse_train_ppo_ray, stub_modules
from tests.training.test_train_command import _plan

OPENRLHF_DEFAULTS = {"TOKENIZERS_PARALLELISM": "true", "NCCL_DEBUG": "WARN", "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS": "1"}


def test_runtime_env_carries_the_run_settings_and_openrlhfs_defaults() -> None:
    advantage = AdvantageConfig(mode="stepgap_dense", lam=0.4).model_dump_json()
    environ = {
        executor.CONFIG_ENV: "/run/rollout.json",
        advantage_patch.CONFIG_ENV: advantage,
        "NCCL_DEBUG": "INFO",  # the user's own setting wins over OpenRLHF's default
        "HOME": "/home/someone",  # nothing else of this process leaks into the workers
    }
    env = launch.runtime_env(environ)
    assert env["env_vars"] == {
        **OPENRLHF_DEFAULTS,
        "NCCL_DEBUG": "INFO",
        "EVIGRAPH_ROLLOUT_CONFIG": "/run/rollout.json",
        "EVIGRAPH_ADVANTAGE_CONFIG": advantage,
    }
    # The hook names a real function: Ray imports it by this dotted path in every worker.
    module, _, name = str(env["worker_process_setup_hook"]).rpartition(".")
    assert getattr(importlib.import_module(module), name) is advantage_patch.setup_hook


def test_runtime_env_skips_unset_settings_and_reads_this_process_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert launch.runtime_env({executor.CONFIG_ENV: ""})["env_vars"] == OPENRLHF_DEFAULTS
    for key in OPENRLHF_DEFAULTS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv(executor.CONFIG_ENV, "/from/environ.json")
    monkeypatch.delenv(advantage_patch.CONFIG_ENV, raising=False)
    assert launch.runtime_env()["env_vars"] == {**OPENRLHF_DEFAULTS, executor.CONFIG_ENV: "/from/environ.json"}


def _fake_ray(monkeypatch: pytest.MonkeyPatch, *, running: bool) -> list[dict[str, Any]]:
    inits: list[dict[str, Any]] = []
    stub_modules(monkeypatch, {"ray": {"is_initialized": lambda: running, "init": lambda **k: inits.append(k)}}, {})
    return inits


def _capture_run_module(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str], dict[str, Any]]]:
    runs: list[tuple[str, list[str], dict[str, Any]]] = []
    monkeypatch.setattr(runpy, "run_module", lambda name, **kw: runs.append((name, list(sys.argv), kw)))
    monkeypatch.setattr(sys, "argv", ["launch"])
    return runs


def test_main_starts_ray_with_the_plans_env_then_runs_openrlhf_on_the_plans_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv, env, _ = _plan(tmp_path, "rlseek", overrides=["advantage.mode=capo"])
    assert argv[1:3] == ["-m", launch.__name__]
    for key in OPENRLHF_DEFAULTS:
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():  # `evigraph train` runs the launcher with the plan's env on top of its own
        monkeypatch.setenv(key, value)
    inits = _fake_ray(monkeypatch, running=False)
    runs = _capture_run_module(monkeypatch)
    launch.main(argv[3:])
    assert inits == [{"runtime_env": launch.runtime_env(env)}]
    env_vars = inits[0]["runtime_env"]["env_vars"]
    assert AdvantageConfig.model_validate_json(env_vars[advantage_patch.CONFIG_ENV]).mode == "capo"
    assert json.loads(Path(env_vars[executor.CONFIG_ENV]).read_text())["agent"] == "rlseek"
    [(module, module_argv, options)] = runs
    assert (module, options) == (OPENRLHF_MODULE, {"run_name": "__main__", "alter_sys": True})
    assert module_argv == [OPENRLHF_MODULE, *argv[4:]]  # "--" dropped, every flag kept in order
    args = parse_train_ppo_ray(monkeypatch, module_argv[1:])  # what OpenRLHF's real main block does with them
    assert args.train.agent_func_path.endswith("training/agent_func.py") and args.reward.remote_url == ["agent"]


def test_main_leaves_a_running_ray_alone_and_takes_flags_without_a_separator(monkeypatch: pytest.MonkeyPatch) -> None:
    inits = _fake_ray(monkeypatch, running=True)
    runs = _capture_run_module(monkeypatch)
    launch.main(["--train.batch_size", "8"])
    assert inits == [] and [argv for _, argv, _ in runs] == [[OPENRLHF_MODULE, "--train.batch_size", "8"]]
    monkeypatch.setattr(sys, "argv", ["launch", "--", "--ckpt.output_dir", "/run/ckpt"])
    launch.main()  # the command line of this process by default
    assert runs[-1][1] == [OPENRLHF_MODULE, "--ckpt.output_dir", "/run/ckpt"]
