"""The TRL engine: ``evigraph train CONFIG --engine trl`` runs TRL's ``GRPOTrainer`` in this process (CPU, or one
GPU in bf16) with the agent's graph as the rollout (:mod:`.trl_rollout`). OpenRLHF stays the engine for clusters.

- **Config.** :func:`grpo_kwargs` derives ``trl.GRPOConfig`` fields from the shipped config's OpenRLHF flags
  (:data:`FROM_OPENRLHF`; the train batch becomes gradient accumulation, a rollout batch the generation batch),
  then applies the ``trl.args`` section and the command line (``--max-steps``, ``--out``).
- **A first run that trains.** Before a model loads, :func:`stage_args` checks that the stage's prompts fill at
  least one optimiser step (TRL's sampler arithmetic, :mod:`.trl_batches`). Batch sizes that came from the
  OpenRLHF flags are scaled down to fit, with one line saying so; sizes set in ``trl.args`` that cannot fit are
  refused (:class:`~evigraph.errors.ConfigError`). A run that still ends after 0 steps is an error.
- **What a run leaves and says.** One progress line per optimiser step (:mod:`.trl_callbacks`); TRL's
  ``checkpoint-N/`` (``trainer_state.json``) at every ``save_steps`` and always at the last step; the final
  weights in ``ckpt/`` only after at least one step. A run whose directory holds a checkpoint resumes from the
  last one. The first SIGINT or SIGTERM finishes the current step, saves a checkpoint and stops
  (:attr:`StageResult.interrupted`); a second aborts at once.
- **Advantages.** :class:`AgentGRPOTrainer` lets TRL generate and score, then replaces its per-sample advantages
  by the configured mode's per-token ones (:func:`advantage_table`): ``_compute_loss`` takes a ``(B, T)`` tensor
  as it is. Environment tokens are outside TRL's loss mask (``env_mask``).
- **Rewards.** The one reward function returns each sample's outcome (TRL logs ``reward`` and
  ``rewards/outcome/mean``); the reward's components and counters are logged per step as ``rewards/<name>/mean``.
- **LoRA.** ``trl.lora`` (``peft.LoraConfig`` fields) trains an adapter; each stage's final weights are saved
  merged (``ckpt/``), so a curriculum's next stage and ``evigraph`` itself load them as a plain model.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict
from trl import GRPOConfig, GRPOTrainer

from evigraph.errors import ConfigError
from evigraph.training.advantages import AdvantageConfig
from evigraph.training.config import TrainConfig
from evigraph.training.executor import GraphExecutor
from evigraph.training.trl_batches import fit_batch_sizes
from evigraph.training.trl_callbacks import Progress, Report, RunControl, signal_name
from evigraph.training.trl_rollout import LOGS_KEY, OUTCOME_KEY, GraphRollout, TrlSample, per_token_advantages

__all__ = (
    "FROM_OPENRLHF",
    "AgentGRPOTrainer",
    "StageResult",
    "advantage_table",
    "grpo_config",
    "grpo_kwargs",
    "load_policy",
    "outcome",
    "resolved_args",
    "stage_args",
    "stage_config",
    "train_stage",
    "train_stages",
)

logger = logging.getLogger(__name__)

FROM_OPENRLHF: dict[str, str] = {
    "rollout.n_samples_per_prompt": "num_generations",
    "rollout.temperature": "temperature",
    "rollout.top_p": "top_p",
    "actor.adam.lr": "learning_rate",
    "actor.lr_scheduler": "lr_scheduler_type",
    "actor.lr_warmup_ratio": "warmup_steps",  # a float below 1 is a ratio of the run's steps
    "algo.kl.init_coef": "beta",  # TRL's KL is always a loss term with the k3 estimator
    "actor.eps_clip": "epsilon",
    "train.micro_batch_size": "per_device_train_batch_size",
    "train.max_epochs": "num_iterations",
    "train.num_episodes": "num_train_epochs",
    "actor.gradient_checkpointing_enable": "activation_checkpointing",
}
"""OpenRLHF 0.11.2 flag → the ``GRPOConfig`` field with the same meaning."""
_EMBEDDED = ("smollm2", "embedded", "default")


def grpo_kwargs(
    config: TrainConfig, *, out: Path, max_steps: int | None = None, cuda: bool = False, bf16: bool | None = None
) -> dict[str, Any]:
    """The ``GRPOConfig`` arguments of a run (pure; see the module docstring).

    Example:
        >>> from evigraph.training.config import load_train_config
        >>> kwargs = grpo_kwargs(load_train_config("veri-r1", ["trl.args.steps_per_generation=2"]), out=Path("r"))
        >>> kwargs["num_generations"], kwargs["gradient_accumulation_steps"], kwargs["use_cpu"], kwargs["bf16"]
        (3, 12, True, False)
        >>> "generation_batch_size" in kwargs, kwargs["steps_per_generation"]
        (False, 2)
    """
    flags = config.openrlhf
    kwargs: dict[str, Any] = {
        field: flags[flag] for flag, field in FROM_OPENRLHF.items() if flags.get(flag) is not None
    }
    micro, batch = flags.get("train.micro_batch_size"), flags.get("train.batch_size")
    if micro and batch:
        if batch % micro:
            raise ConfigError(f"openrlhf train.batch_size {batch} is not a multiple of train.micro_batch_size {micro}")
        kwargs["gradient_accumulation_steps"] = batch // micro
    if flags.get("rollout.batch_size") and flags.get("rollout.n_samples_per_prompt"):
        kwargs["generation_batch_size"] = flags["rollout.batch_size"] * flags["rollout.n_samples_per_prompt"]
    if (flags.get("ckpt.save_steps") or -1) > 0:
        kwargs["save_steps"] = flags["ckpt.save_steps"]
    bf16 = cuda if bf16 is None else bf16
    kwargs.update(
        output_dir=str(out), logging_steps=1, report_to=[], use_cpu=not cuda, bf16=bf16, seed=config.curriculum_seed
    )
    if "steps_per_generation" in config.trl.args:  # TRL takes one of the two
        kwargs.pop("generation_batch_size", None)
    kwargs.update(config.trl.args)
    if max_steps is not None:
        kwargs["max_steps"] = max_steps
    return kwargs


def grpo_config(config: TrainConfig, *, out: Path, max_steps: int | None = None) -> GRPOConfig:
    """TRL's real ``GRPOConfig`` of a run on this machine (CUDA: bf16 where the GPU has it, else CPU), its batch
    sizes as configured (:func:`stage_args` fits them to a stage's prompts).

    Raises:
        ConfigError: a field TRL does not know or a value it refuses (the message names it).
    """
    return _grpo_config(config, grpo_kwargs(config, out=out, max_steps=max_steps, cuda=_cuda(), bf16=_bf16()))


def _grpo_config(config: TrainConfig, kwargs: dict[str, Any]) -> GRPOConfig:
    try:
        return GRPOConfig(**kwargs)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{config.agent}: trl.args: {error}", source="trl.args") from None


def _cuda() -> bool:
    return torch.cuda.is_available()


def _bf16() -> bool:
    return _cuda() and torch.cuda.is_bf16_supported()


def stage_args(
    config: TrainConfig, *, prompts: int, out: Path, max_steps: int | None = None, report: Report | None = None
) -> GRPOConfig:
    """The stage's ``GRPOConfig`` with batch sizes that fill a step from ``prompts`` prompts (:func:`fit_batch_sizes`;
    a scaling is reported).

    Raises:
        ConfigError: sizes set in ``trl.args`` that cannot fill one step; a field or value TRL refuses.
    """
    kwargs, line = fit_batch_sizes(
        grpo_kwargs(config, out=out, max_steps=max_steps, cuda=_cuda(), bf16=_bf16()),
        prompts=prompts,
        explicit=config.trl.args,
        # On a CPU a scaled step is one prompt group: a first run shows a step in minutes, not in an hour.
        max_prompts_per_step=None if _cuda() else 1,
    )
    if line is not None:
        (report or logger.info)(f"{config.agent}: {line}")
    return _grpo_config(config, kwargs)


def outcome(completions: list[Any], **kwargs: Any) -> list[float]:
    """TRL's reward function: each sample's outcome from the rollout; the reward's components are logged as
    step metrics (``rewards/<name>/mean``)."""
    logs: list[dict[str, float]] = kwargs[LOGS_KEY]
    log_metric = kwargs.get("log_metric")
    if log_metric is not None:
        for name in sorted({name for sample in logs for name in sample}):
            values = [sample[name] for sample in logs if name in sample]
            log_metric(f"rewards/{name}/mean", sum(values) / len(values))
    return [float(value) for value in kwargs[OUTCOME_KEY]]


class AgentGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose advantages are evigraph's per-token advantages of ``advantage``'s mode over the rollout's
    groups (the rollout must be a :class:`~.trl_rollout.GraphRollout`)."""

    def __init__(self, *args: Any, advantage: AdvantageConfig, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.rollout_func, GraphRollout):
            raise ConfigError("AgentGRPOTrainer needs a GraphRollout as its rollout_func")
        if self.accelerator.num_processes > 1:
            raise ConfigError("the TRL engine runs in one process: a prompt's group must stay together")
        self.advantage = advantage

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        samples: list[TrlSample] = self.rollout_func.last
        output["advantages"] = advantage_table(samples, self.advantage, output["completion_ids"])
        return output


def advantage_table(samples: Sequence[TrlSample], config: AdvantageConfig, completion_ids: torch.Tensor) -> Any:
    """The ``(B, T)`` advantages TRL's loss takes: row ``i`` is sample ``i`` (TRL keeps the rollout's order until
    after this point), column ``j`` the advantage of ``completion_ids[i, j]`` (0 on environment and padding).

    Raises:
        ConfigError: the batch and the rollout's samples differ in number.
    """
    if len(samples) != completion_ids.shape[0]:
        raise ConfigError(f"{len(samples)} rollout samples for a batch of {completion_ids.shape[0]}")
    table = torch.zeros(completion_ids.shape, dtype=torch.float32)
    for row, values in enumerate(per_token_advantages(samples, config)):
        table[row, : len(values)] = torch.tensor(values, dtype=torch.float32)
    return table.to(completion_ids.device)


def load_policy(spec: str) -> tuple[Any, Any]:
    """The model to train and its tokenizer: ``smollm2`` (the embedded model's dequantised copy), a directory
    or a Hugging Face name; float32 weights (bf16 on CUDA is autocast)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path: str | Path = spec
    if spec in _EMBEDDED:
        from evigraph.generators.models import ensure_dequantized_copy

        path = ensure_dequantized_copy()
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model, tokenizer


class StageResult(BaseModel):
    """What one TRL stage left behind."""

    model_config = ConfigDict(frozen=True)

    global_step: int
    max_steps: int
    resumed_from: str | None
    checkpoint: str | None
    """The last ``checkpoint-N/`` under the stage's directory."""
    model_dir: str | None
    """The trained weights (merged with the adapter under LoRA): the next stage starts from here; ``None`` when
    the run was interrupted (its checkpoint resumes it)."""
    interrupted: str | None = None
    """The signal that stopped the run after a step (``SIGINT``, ``SIGTERM``), else ``None``."""
    log_history: list[dict[str, Any]]


def train_stage(
    config: TrainConfig,
    executor: GraphExecutor,
    *,
    prompts: Path,
    model: str | tuple[Any, Any],
    out: Path,
    max_steps: int | None = None,
    args: GRPOConfig | None = None,
    report: Report | None = None,
    callbacks: Sequence[Any] = (),
) -> StageResult:
    """Train one stage: the prompt JSONL of :mod:`evigraph.training.data` (its labels are the episodes) run by
    ``executor`` (the stage's :class:`~.executor.GraphExecutor`), from ``model`` (a spec for :func:`load_policy`,
    or a loaded model and tokenizer), checkpoints under ``out`` (resumed from the last one there), final weights
    in ``out/ckpt``. ``args`` (default: :func:`stage_args`) are checked before the model loads; ``report`` gets
    the run's lines (a scaling, resuming, one per step, where an interrupted run stopped); ``callbacks`` are more
    ``TrainerCallback`` objects (e.g. an evaluation every few steps).

    Raises:
        ConfigError: a bad config or prompt file; batch sizes that cannot fill one step; a run that ended
            without a single optimiser step.
    """
    from datasets import Dataset
    from transformers.trainer_utils import get_last_checkpoint

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is "experimental"; trl is pinned <2
    report = report or logger.info
    rows = _episodes(prompts)
    args = args or stage_args(config, prompts=len(rows), out=out, max_steps=max_steps, report=report)
    policy, tokenizer = load_policy(model) if isinstance(model, str) else model
    budget = config.trl.max_length or int(config.openrlhf.get("data.max_len") or 4096)
    graph_rollout = GraphRollout(executor, max_length=budget, num_generations=args.num_generations)
    peft_config = None
    if config.trl.lora is not None:
        from peft import LoraConfig

        peft_config = LoraConfig(**{"task_type": "CAUSAL_LM", **config.trl.lora})
    control = RunControl()
    trainer = AgentGRPOTrainer(
        model=policy,
        reward_funcs=[outcome],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
        rollout_func=graph_rollout,
        advantage=config.advantage,
        callbacks=[Progress(report, agent=config.agent), control, *callbacks],
    )
    resume = get_last_checkpoint(str(out)) if out.is_dir() else None
    if resume is not None:
        report(f"resuming from {Path(resume).name}")
    try:
        with control.installed():
            trainer.train(resume_from_checkpoint=resume)
    finally:
        graph_rollout.close()
    state = trainer.state
    last = get_last_checkpoint(str(out)) if out.is_dir() else None
    result = StageResult(
        global_step=state.global_step,
        max_steps=state.max_steps,
        resumed_from=resume,
        checkpoint=last,
        model_dir=None,
        interrupted=signal_name(control.received) if control.received is not None else None,
        log_history=state.log_history,
    )
    if result.interrupted is not None:
        report(
            f"{result.interrupted}: stopped after step {state.global_step}/{state.max_steps}, saved in {last}; "
            "run the same command to resume"
        )
        return result
    if state.global_step < 1:
        raise ConfigError(
            f"{out}: the run ended after 0 optimiser steps ({len(rows)} prompts, generation_batch_size "
            f"{args.generation_batch_size}, per_device_train_batch_size {args.per_device_train_batch_size}, "
            f"gradient_accumulation_steps {args.gradient_accumulation_steps}): nothing was trained, no model saved"
        )
    model_dir = out / "ckpt"
    trained = trainer.model.merge_and_unload() if peft_config is not None else trainer.model
    trained.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return result.model_copy(update={"model_dir": str(model_dir)})


def _episodes(prompts: Path) -> list[dict[str, str]]:
    """The dataset rows: each line's label JSON as TRL's ``prompt`` (``rollout_func`` receives only prompts)."""
    rows = []
    try:
        lines = prompts.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ConfigError(f"{prompts}: {error}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append({"prompt": str(json.loads(line)["label"])})
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ConfigError(f"{prompts}:{number}: not a prompt line of `evigraph train` ({error})") from None
    if not rows:
        raise ConfigError(f"{prompts}: no prompts")
    return rows


def resolved_args(
    config: TrainConfig,
    *,
    out: Path,
    max_steps: int | None = None,
    prompts: int | None = None,
    report: Report | None = None,
) -> dict[str, Any]:
    """The ``GRPOConfig`` fields a run sets, as TRL resolved them (what ``--dry-run`` prints); with ``prompts``,
    its batch sizes fitted to them as a run would (:func:`stage_args`)."""
    if prompts is None:
        resolved = grpo_config(config, out=out, max_steps=max_steps)
    else:
        resolved = stage_args(config, prompts=prompts, out=out, max_steps=max_steps, report=report)
    args = resolved.to_dict()
    keys = set(grpo_kwargs(config, out=out, max_steps=max_steps)) | {
        "generation_batch_size",
        "steps_per_generation",
        "gradient_accumulation_steps",
        "max_steps",
        "use_cpu",
        "bf16",
    }
    return {key: args[key] for key in sorted(keys) if key in args}


def stage_config(config: TrainConfig, number: int) -> TrainConfig:
    """The config of curriculum stage ``number`` (0-based): its OpenRLHF flag overrides applied."""
    if not config.curriculum:
        return config
    return config.model_copy(update={"openrlhf": {**config.openrlhf, **config.curriculum[number].openrlhf}})


def train_stages(
    config: TrainConfig,
    stage_dirs: list[Path],
    *,
    model: str,
    max_steps: int | None = None,
    corpus: str | None = None,
    report: Report | None = None,
) -> list[StageResult]:
    """Train every stage ``evigraph train`` planned (each directory holds its ``prompts.jsonl`` and
    ``rollout.json``), stage ``k`` from stage ``k - 1``'s ``ckpt``; a stage whose ``ckpt`` exists is done and
    skipped, unless it is the last (it resumes from its last checkpoint). ``corpus`` is searched in process.
    Every stage's batch sizes are checked before the first model loads; an interrupted stage ends the run (its
    result is the last).

    Raises:
        ConfigError: see :func:`train_stage`.
    """
    from evigraph.training.executor import RolloutConfig, load_rollout_config

    planned: list[tuple[int, Path, GRPOConfig]] = []
    for number, where in enumerate(stage_dirs):
        done = where / "ckpt" / "config.json"
        if number < len(stage_dirs) - 1 and done.is_file():
            continue
        prompts = len(_episodes(where / "prompts.jsonl"))
        args = stage_args(stage_config(config, number), prompts=prompts, out=where, max_steps=max_steps, report=report)
        planned.append((number, where, args))
    results: list[StageResult] = []
    start = model
    for number, where in enumerate(stage_dirs):
        args = next((a for n, _, a in planned if n == number), None)
        if args is None:
            start = str(where / "ckpt")
            continue
        rollout = load_rollout_config(where / "rollout.json")
        if corpus is not None:
            rollout = RolloutConfig.model_validate({**rollout.model_dump(), "retriever_url": None, "corpus": corpus})
        result = train_stage(
            stage_config(config, number),
            GraphExecutor(rollout),
            prompts=where / "prompts.jsonl",
            model=start,
            out=where,
            max_steps=max_steps,
            args=args,
            report=report,
        )
        results.append(result)
        if result.model_dir is None:
            break
        start = result.model_dir
    return results
