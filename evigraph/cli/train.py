"""``evigraph train CONFIG`` (an agent's GRPO run on OpenRLHF), ``evigraph export-sft`` and ``evigraph train-sft``.

The command converts ``--data`` with the agent's evaluation adapter into OpenRLHF prompt JSONL, writes the
rollout config every rollout actor reads, and starts :mod:`evigraph.training.launch` with OpenRLHF's flags from
the config. ``--dry-run`` stops before starting and prints the exact command line (also written to
``OUT/command.sh``). Training needs the ``[train]`` extra on a GPU machine; on any other machine the command
says what is missing. ``--corpus NAME|PATH`` serves the corpus for the run from ``command.sh`` (bound to
``$RAY_HEAD_IP``, stopped with the job; :mod:`evigraph.training.launch`), searched by ``--retrieval``
(``bm25``, ``dense`` or ``hybrid``; the TRL engine searches it in process the same way); ``--retriever-url``
names a server the user runs. Training data keeps repeated ids and exact repeats
(:mod:`evigraph.training.data`); the counts are printed.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer
from rich.console import Console
from typer.core import TyperCommand

from evigraph.errors import ConfigError, MissingDependencyError

if TYPE_CHECKING:
    from evigraph.training.data import DataSummary

__all__ = (
    "StagePlan",
    "TrainHelp",
    "command_lines",
    "export_sft_command",
    "sft_plan",
    "train_command",
    "train_sft_command",
    "training_plan",
)

console = Console()
err_console = Console(stderr=True)

_DENSE_MODES = ("stepgap_dense", "stepgap_sequence", "process_additive")
_TRAIN_HINT = "pip install 'evigraph[train]' in its own environment on a GPU machine (README: Training)"


class ServedCorpus(NamedTuple):
    """The corpus ``command.sh`` serves for a run (``--corpus``)."""

    corpus: str
    """A corpus name, ``pyserini:NAME`` (or ``prebuilt:NAME``) or an absolute directory."""
    port: int
    retrieval: str | None = None
    """``corpus serve --retrieval`` (``None``: the server's default, BM25)."""


class StagePlan(NamedTuple):
    """One OpenRLHF launch of a training run (the whole run, or one curriculum stage)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    n_prompts: int
    out: Path
    """The stage's directory: its prompts, rollout config and ``ckpt/`` (the next stage starts from it)."""
    data: DataSummary | None = None
    """The training file's repeated ids and exact repeats (all kept)."""
    served: ServedCorpus | None = None
    """The corpus ``command.sh`` serves for the run (``--corpus``)."""


class TrainHelp(TyperCommand):
    """``evigraph train --help`` with the shipped configs and their rewards and presets, read from the configs and
    the registry only when help is shown (loading every agent would slow every other command)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from evigraph.training.catalogue import catalogue, render_catalogue

        self.epilog = render_catalogue(catalogue())
        super().format_help(ctx, formatter)


def training_plan(
    config_name: str,
    *,
    model: str,
    data: Path,
    out: Path,
    retriever_url: str | None,
    overrides: list[str],
    corpus: str | None = None,
    corpus_port: int = 8000,
    reward: str | None = None,
    retrieval: str | None = None,
) -> list[StagePlan]:
    """Write the prompt data and rollout config of every stage under ``out``; return each stage's launcher argv,
    its extra environment and its number of training prompts. A config without a curriculum is one stage
    in ``out`` itself; stage ``k`` of a curriculum lives in ``out/stage-k-NAME`` and starts from stage ``k-1``'s
    checkpoint. ``corpus`` is served by ``command.sh`` on ``corpus_port`` (see :func:`command_lines`); the
    rollout config gets its URL on ``$RAY_HEAD_IP`` (as set now, default 127.0.0.1), which the launcher rewrites
    with the address the job serves it on. ``reward`` is ``--reward``: a reward name or preset of the agent.
    ``retrieval`` is how ``corpus`` is searched (``bm25``, ``dense``, ``hybrid``): the served line's
    ``--retrieval`` and the rollout config's ``retrieval`` (what the TRL engine searches in process with).

    Raises:
        ConfigError: a bad config or override, records without gold, a mode the config cannot run, a curriculum
            the agent cannot reshape its records for, a corpus for an agent that does not search (or with a
            retriever URL), an unknown corpus; an unknown retrieval, dense/hybrid with a retriever URL or on a
            corpus without a dense index.
    """
    from evigraph.registry import get_agent
    from evigraph.training.config import load_train_config

    _check_retrieval(corpus, retrieval, retriever_url)
    config = load_train_config(config_name, overrides)
    agent = get_agent(config.agent).load()
    if reward is not None:
        from evigraph.training.catalogue import reward_overrides

        config = load_train_config(config_name, [*reward_overrides(agent, config.reward, reward), *overrides])
    adapter = agent.require("evaluation")
    if config.advantage.mode in _DENSE_MODES and config.step_value is None:
        raise ConfigError(f"advantage mode {config.advantage.mode} reads per-step values: set step_value")
    if "judge" in inspect.signature(agent.require("graph_builder")).parameters and config.judge is None:
        raise ConfigError(
            f"{config.agent} grades its own steps: give a frozen judge (--set judge=openai:MODEL@URL, e.g. a "
            "`vllm serve` of the teacher); the policy being trained must not grade itself"
        )
    if config.advantage.mode != "grpo" and config.openrlhf.get("algo.advantage.estimator") != "group_norm":
        raise ConfigError(f"advantage mode {config.advantage.mode} builds on algo.advantage.estimator: group_norm")
    served = None
    if corpus is not None:
        served = _served(agent, corpus, corpus_port, retriever_url)._replace(retrieval=retrieval)
        retriever_url = _planned_url(corpus_port)
    if "search" in agent.spec.resources and retriever_url is None and not config.agent_config.get("offline"):
        raise ConfigError(
            f"{config.agent} searches while it trains: give --corpus NAME|DIR (served for the run), or start "
            "`evigraph corpus serve CORPUS` yourself and pass its address with --retriever-url"
        )
    reshape = getattr(adapter, "curriculum_input", None)
    if config.curriculum and reshape is None:
        raise ConfigError(f"{config.agent} has no curriculum: its evaluation adapter defines no curriculum_input")
    from evigraph.training.data import read_training_records, summarize

    records = read_training_records(adapter, data)
    inputs = [adapter.graph_input(r) for r in records]
    summary = summarize([str(r.id) for r in records], inputs)
    missing = [str(r.id) for r, i in zip(records, inputs, strict=True) if not i.get("gold")]
    if missing:
        raise ConfigError(
            f"{data}: training needs gold answers; {len(missing)} record(s) have none, e.g. {missing[0]!r}"
        )
    if not config.curriculum:
        stage = _stage_plan(
            config, "main", inputs, model=model, out=out, retriever_url=retriever_url, retrieval=retrieval, flags={}
        )
        return [stage._replace(data=summary, served=served)]
    stages = []
    for number, stage in enumerate(config.curriculum, start=1):
        try:
            shaped = [reshape(r, stage.options, config.curriculum_seed) for r in records]
        except ValueError as error:
            raise ConfigError(f"curriculum stage {stage.name!r}: {error}", source="curriculum") from None
        where = out / f"stage-{number}-{stage.name}"
        start = model if number == 1 else str((stages[-1].out / "ckpt").resolve())
        planned = _stage_plan(
            config,
            stage.name,
            shaped,
            model=start,
            out=where,
            retriever_url=retriever_url,
            retrieval=retrieval,
            flags=stage.openrlhf,
        )
        stages.append(planned._replace(data=summary, served=served))
    return stages


def _served(agent: Any, corpus: str, port: int, retriever_url: str | None) -> ServedCorpus:
    """The corpus ``command.sh`` serves (checked to exist, not built or opened here; a directory made absolute).

    Raises:
        ConfigError: a retriever URL too, an agent that does not search, an unknown corpus.
    """
    from evigraph.corpora.registry import resolve_corpus

    if retriever_url is not None:
        raise ConfigError("give --corpus (served for the run) or --retriever-url (your server), not both")
    if "search" not in agent.spec.resources:
        raise ConfigError(f"{agent.name} does not search: --corpus is for agents that search")
    if corpus.startswith(("prebuilt:", "pyserini:")):
        return ServedCorpus(corpus, port)
    location = resolve_corpus(corpus, build_bundled=False)  # an unknown name fails here, not on the cluster
    return ServedCorpus(corpus if location.resolve() != Path(corpus).resolve() else str(location.resolve()), port)


def _check_retrieval(corpus: str | None, retrieval: str | None, retriever_url: str | None) -> None:
    """Refuse a ``--retrieval`` the run cannot search by, before anything loads (the config, the agent, a model).

    Raises:
        ConfigError: an unknown retrieval; dense/hybrid with ``--retriever-url`` (its server searches the way it
            was started), without ``--corpus``, on a Pyserini prebuilt index or on a corpus without a dense index.
    """
    from evigraph.tools.search import check_retrieval

    check_retrieval(corpus=corpus, retriever_url=retriever_url, retrieval=retrieval)


def _planned_url(port: int) -> str:
    """The served corpus's URL as planned (``$RAY_HEAD_IP`` now, default 127.0.0.1); the launcher rewrites it
    with the address the job serves it on."""
    import os

    from evigraph.training.launch import HEAD_ENV, served_url

    return served_url(port, os.environ.get(HEAD_ENV) or "127.0.0.1")


def command_lines(stages: list[StagePlan]) -> list[str]:
    """``command.sh``'s lines after ``set -e``: for a served corpus, the lines that serve it for the job
    (:func:`~evigraph.training.launch.serve_lines`), each stage's launcher waiting for it and handing its URL on
    ``$RAY_HEAD_IP`` to the rollout actors; one line per stage."""
    from evigraph.training.config import shell_line
    from evigraph.training.launch import serve_lines, served_url

    served = stages[0].served if stages else None
    lines = serve_lines(served.corpus, served.port, served.retrieval) if served is not None else []
    for stage in stages:
        env = " ".join(f"{k}={shell_line([v])}" for k, v in stage.env.items())
        argv = shell_line(stage.argv)
        if served is not None:
            head, tail = stage.argv[:3], stage.argv[3:]  # python -m evigraph.training.launch | -- flags
            handed = f'--retriever-url "{served_url(served.port)}" --server-pid "$EVIGRAPH_CORPUS_PID"'
            argv = f"{shell_line(head)} {handed} {shell_line(tail)}"
        lines.append(f"{env} {argv}")
    return lines


def _stage_plan(
    config: Any,
    name: str,
    inputs: list[dict[str, Any]],
    *,
    model: str,
    out: Path,
    retriever_url: str | None,
    retrieval: str | None = None,
    flags: dict[str, Any],
) -> StagePlan:
    from evigraph.config import settings_for
    from evigraph.files import atomic_write
    from evigraph.training import advantage_patch, executor
    from evigraph.training.config import openrlhf_argv
    from evigraph.training.data import write_prompt_dataset

    out.mkdir(parents=True, exist_ok=True)
    prompts = out / "prompts.jsonl"
    n_prompts = write_prompt_dataset(config.agent, inputs, prompts)
    # The rollout takes every field the training config shares with it, plus where this run searches and logs.
    rollout = settings_for(executor.RolloutConfig, config).model_copy(
        update={"retriever_url": retriever_url, "retrieval": retrieval, "run_dir": str(out.resolve())}
    )
    atomic_write(out / "rollout.json", rollout.model_dump_json(indent=2) + "\n")
    flags = {
        **config.openrlhf,
        **flags,
        "actor.model_name_or_path": model,
        "data.prompt_dataset": str(prompts.resolve()),
        "train.agent_func_path": str(Path(executor.__file__).with_name("agent_func.py")),
        "ckpt.output_dir": str((out / "ckpt").resolve()),
        "logger.tensorboard_dir": str((out / "tensorboard").resolve()),
    }
    argv = [sys.executable, "-m", "evigraph.training.launch", "--", *openrlhf_argv(flags)]
    env = {
        executor.CONFIG_ENV: str((out / "rollout.json").resolve()),
        advantage_patch.CONFIG_ENV: config.advantage.model_dump_json(),
    }
    return StagePlan(name, argv, env, n_prompts, out)


def train_command(
    config: Annotated[str, typer.Argument(help="A shipped config (listed below) or a YAML file.")],
    model: Annotated[str, typer.Option("--model", help="The policy: a Hugging Face model directory or name.")],
    data: Annotated[
        Path,
        typer.Option(
            "--data", help="Training records, any format `evigraph eval` reads (repeated ids and repeats kept)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Run directory: prompts, rollout config, checkpoints.")],
    retriever_url: Annotated[
        str | None,
        typer.Option("--retriever-url", help="A running `evigraph corpus serve` address (searching agents)."),
    ] = None,
    corpus: Annotated[
        str | None,
        typer.Option(
            "--corpus",
            help="Corpus NAME|DIR the run serves itself (searching agents): command.sh starts `evigraph corpus "
            "serve` on $RAY_HEAD_IP (default 127.0.0.1) and stops it when the job ends.",
        ),
    ] = None,
    corpus_port: Annotated[int, typer.Option("--corpus-port", help="The served corpus's port.")] = 8000,
    retrieval: Annotated[
        str | None,
        typer.Option(
            "--retrieval",
            help="How --corpus is searched: bm25 (default), dense or hybrid (needs the FAISS index `evigraph corpus "
            "embed` builds); the served corpus and the TRL engine's in-process search both use it.",
        ),
    ] = None,
    reward: Annotated[
        str | None,
        typer.Option("--reward", help="One of the agent's rewards or a reward preset (listed below)."),
    ] = None,
    overrides: Annotated[
        list[str] | None, typer.Option("--set", help="Override a config key: openrlhf.actor.adam.lr=5e-7.")
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the OpenRLHF command line (one per curriculum stage; TRL: its GRPOConfig) and stop.",
        ),
    ] = False,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="openrlhf (Ray, vLLM, DeepSpeed: clusters) or trl (TRL's GRPOTrainer in this process: CPU or one "
            "GPU); default: the config's `engine` key.",
        ),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", min=1, help="TRL engine: stop after this many optimizer steps.")
    ] = None,
) -> None:
    """Train an agent with multi-turn GRPO on OpenRLHF or TRL (its own graph is the rollout)."""
    from evigraph.files import atomic_write

    stages = training_plan(
        config,
        model=model,
        data=data,
        out=out,
        retriever_url=retriever_url,
        overrides=list(overrides or []),
        corpus=corpus,
        corpus_port=corpus_port,
        reward=reward,
        retrieval=retrieval,
    )
    if stages and stages[0].data is not None:  # repeats are kept on either engine: say how many
        err_console.print(f"[dim]{data}: {stages[0].data.describe()}[/]")
    from evigraph.cli.train_trl import train_trl, trl_config

    chosen = trl_config(config, list(overrides or []), reward=reward, engine=engine, max_steps=max_steps)
    if chosen is not None:
        train_trl(chosen, stages, model=model, corpus=corpus, max_steps=max_steps, dry_run=dry_run)
        return
    lines = command_lines(stages)
    # Stages run in order and stop at the first failure (set -e): each starts from the previous checkpoint.
    atomic_write(out / "command.sh", "#!/usr/bin/env bash\nset -e\n" + "\n".join(lines) + "\n")
    for stage in stages:
        err_console.print(f"[dim]{stage.name}: {stage.n_prompts} training prompts in {stage.out / 'prompts.jsonl'}[/]")
    if dry_run:
        sys.stdout.write("\n".join(lines) + "\n")
        return
    for module in ("openrlhf", "ray", "vllm", "deepspeed"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(module, _TRAIN_HINT)
    import os

    if stages[0].served is not None:  # command.sh serves the corpus around the stages and stops it after
        done = subprocess.run(["bash", str(out / "command.sh")], check=False)
        if done.returncode:
            err_console.print(f"[red]{out / 'command.sh'} failed (exit {done.returncode})[/]")
            raise typer.Exit(done.returncode)
        console.print_json(json.dumps({"checkpoints": str(stages[-1].out / "ckpt")}))
        return
    for stage in stages:
        done = subprocess.run(stage.argv, env={**os.environ, **stage.env}, check=False)
        if done.returncode:
            err_console.print(f"[red]stage {stage.name} failed (exit {done.returncode})[/]")
            raise typer.Exit(done.returncode)
    console.print_json(json.dumps({"checkpoints": str(stages[-1].out / "ckpt")}))


def export_sft_command(
    agent: Annotated[str, typer.Argument(help="The agent whose stored runs these are.")],
    trajectories: Annotated[
        Path, typer.Option("--trajectories", help="predictions.jsonl of `evigraph eval AGENT` (stored runs).")
    ],
    out: Annotated[Path, typer.Option("--out", help="SFT JSONL to write (one {messages} line per run).")],
    min_reward: Annotated[
        float | None, typer.Option("--min-reward", help="Keep runs whose reward scalar is at least this.")
    ] = None,
    student: Annotated[
        bool,
        typer.Option(
            "--student", help="The agent's distillation examples (AgentSpec.distill: StepGap's checked steps)."
        ),
    ] = False,
) -> None:
    """Stored runs as multi-turn SFT data for OpenRLHF (`--data.multiturn`): failed runs are left out. With
    `--student`, the agent's distillation examples instead (StepGap: one per checked step, the judge's prompt and
    NLI results in, the teacher's JSON, pipeline path and label out); an agent without one refuses it."""
    from evigraph.files import atomic_writer
    from evigraph.registry import get_agent

    loaded = get_agent(agent).load()
    adapter = loaded.require("evaluation")
    distill = loaded.require("distill") if student else None
    kept = skipped = 0
    with atomic_writer(out) as writer:
        for prediction in adapter.read_predictions(trajectories):
            trajectory = getattr(prediction, "trajectory", None)
            lines = _sft_lines(trajectory, distill=distill, min_reward=min_reward)
            skipped += not lines
            for line in lines:
                writer.write(json.dumps(line, ensure_ascii=False) + "\n")
                kept += 1
    console.print_json(json.dumps({"kept": kept, "skipped": skipped, "out": str(out)}))


def _sft_lines(trajectory: Any, *, distill: Any, min_reward: float | None) -> list[dict[str, Any]]:
    """The SFT lines of one stored run (none for a failed run or one below ``min_reward``); with ``distill``
    (the agent's ``AgentSpec.distill``), its student examples."""
    from evigraph.training.sft import sft_line

    if trajectory is None or trajectory.error is not None:
        return []
    if distill is not None:
        return distill(trajectory)
    line = sft_line(trajectory)
    if min_reward is not None and (line["reward"] is None or line["reward"] < min_reward):
        return []
    return [line]


def sft_plan(config_name: str, *, model: str, data: Path, out: Path, overrides: list[str]) -> list[str]:
    """The ``deepspeed`` command line of an OpenRLHF SFT run."""
    from evigraph.training.config import load_sft_config, openrlhf_argv
    from evigraph.training.sft import SFT_MODULE

    config = load_sft_config(config_name, overrides)
    if not data.is_file():
        raise ConfigError(f"--data {data}: no such file (write it with `evigraph export-sft`)")
    flags = {
        **config.openrlhf,
        "model.model_name_or_path": model,
        "data.dataset": str(data.resolve()),
        "ckpt.output_dir": str((out / "ckpt").resolve()),
        "logger.tensorboard_dir": str((out / "tensorboard").resolve()),
    }
    return ["deepspeed", "--module", SFT_MODULE, *openrlhf_argv(flags)]


def train_sft_command(
    config: Annotated[str, typer.Argument(help="A shipped SFT config (multiturn) or a YAML file.")],
    model: Annotated[str, typer.Option("--model", help="The model to fine-tune.")],
    data: Annotated[Path, typer.Option("--data", help="SFT JSONL (from `evigraph export-sft`).")],
    out: Annotated[Path, typer.Option("--out", help="Run directory: checkpoints and logs.")],
    overrides: Annotated[list[str] | None, typer.Option("--set", help="Override a config key.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the command line and stop.")] = False,
) -> None:
    """Supervised fine-tuning with OpenRLHF's SFT trainer (0.11.2 dotted flags)."""
    from evigraph.files import atomic_write
    from evigraph.training.config import shell_line

    argv = sft_plan(config, model=model, data=data, out=out, overrides=list(overrides or []))
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "command.sh", "#!/usr/bin/env bash\n" + shell_line(argv) + "\n")
    if dry_run:
        sys.stdout.write(shell_line(argv) + "\n")
        return
    for module in ("openrlhf", "deepspeed"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(module, _TRAIN_HINT)
    done = subprocess.run(argv, check=False)
    if done.returncode:
        raise typer.Exit(done.returncode)
