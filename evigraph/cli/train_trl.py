"""``evigraph train --engine trl``: which engine a run uses, and the TRL engine's run of the planned stages in this
process (:mod:`evigraph.training.trl_engine`); ``--dry-run`` prints each stage's resolved ``GRPOConfig``. The
run's lines go to standard error (a batch scaling, resuming, a progress line per step, where a stopped run
stopped); a run stopped by Ctrl-C or SIGTERM exits 130 or 143 once its checkpoint is saved."""

from __future__ import annotations

import importlib.util
import json
import signal
from collections.abc import Sequence
from typing import Any

import typer
from rich.console import Console

from evigraph.errors import ConfigError, MissingDependencyError

__all__ = ("train_trl", "trl_config")

console = Console()
err_console = Console(stderr=True)


def trl_config(
    config_name: str, overrides: list[str], *, reward: str | None, engine: str | None, max_steps: int | None
) -> Any:
    """The run's config when the TRL engine trains it (``--engine`` over the config's ``engine``), else ``None``.

    Raises:
        ConfigError: an unknown engine, or ``--max-steps`` for OpenRLHF.
    """
    from evigraph.training.config import load_train_config

    if engine not in (None, "openrlhf", "trl"):
        raise ConfigError(f"--engine {engine!r}: expected openrlhf or trl", source="--engine")
    overrides = [*overrides, f"engine={engine}"] if engine else overrides
    loaded = load_train_config(config_name, overrides)
    if loaded.engine != "trl":
        if max_steps is not None:
            raise ConfigError("--max-steps is the TRL engine's (OpenRLHF: --set openrlhf.train.num_episodes=N)")
        return None
    if reward is not None:
        from evigraph.registry import get_agent
        from evigraph.training.catalogue import reward_overrides

        agent = get_agent(loaded.agent).load()
        loaded = load_train_config(config_name, [*reward_overrides(agent, loaded.reward, reward), *overrides])
    return loaded


def train_trl(
    config: Any, stages: Sequence[Any], *, model: str, corpus: str | None, max_steps: int | None, dry_run: bool
) -> None:
    """Train the planned stages with TRL in this process (``--dry-run``: print each stage's GRPOConfig, its batch
    sizes fitted to the stage's prompts). The run's lines (a batch scaling, resuming, one per optimiser step) go
    to standard error.

    Raises:
        typer.Exit: 130 (SIGINT) or 143 (SIGTERM) after a run stopped by a signal saved its checkpoint.
    """
    if importlib.util.find_spec("trl") is None:
        raise MissingDependencyError("trl", "pip install 'evigraph[trl]'")
    from evigraph.training import trl_engine

    for stage in stages:
        err_console.print(f"[dim]{stage.name}: {stage.n_prompts} training prompts in {stage.out / 'prompts.jsonl'}[/]")
    if dry_run:
        resolved = {
            s.name: trl_engine.resolved_args(
                trl_engine.stage_config(config, k), out=s.out, max_steps=max_steps, prompts=s.n_prompts, report=_say
            )
            for k, s in enumerate(stages)
        }
        console.print_json(json.dumps(resolved, default=str))
        return
    results = trl_engine.train_stages(
        config, [s.out for s in stages], model=model, max_steps=max_steps, corpus=corpus, report=_say
    )
    last = results[-1] if results else None
    if last is not None and last.interrupted is not None:
        raise typer.Exit(128 + int(signal.Signals[last.interrupted]))
    summary: dict[str, Any] = {"checkpoints": str(stages[-1].out), "model": str(stages[-1].out / "ckpt")}
    if last is not None:
        summary["global_step"] = last.global_step
        summary["checkpoint"] = last.checkpoint
    console.print_json(json.dumps(summary))


def _say(line: str) -> None:
    err_console.print(line, markup=False, highlight=False, soft_wrap=True)
