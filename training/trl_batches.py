"""Batch sizes that can train: TRL 1.16's sampler arithmetic over a stage's prompts, and the fitting of sizes that
cannot fill one optimiser step (pure functions; :mod:`.trl_engine` applies them before a model loads).

A newcomer's first run keeps a paper's batch sizes (Veri-R1: a generation batch of 768 samples) against a handful
of prompts; TRL then finds "not a single sample in your epoch_iterator" and ends at step 0. :func:`fit_batch_sizes`
scales sizes that came from the shipped config's OpenRLHF flags down to what the prompts fill, and refuses sizes
the user chose (``trl.args``) that cannot.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from evigraph.errors import ConfigError

__all__ = ("BATCH_FIELDS", "fit_batch_sizes", "steps_per_epoch")

BATCH_FIELDS = ("per_device_train_batch_size", "gradient_accumulation_steps", "generation_batch_size",
                "steps_per_generation")  # fmt: skip
"""The ``GRPOConfig`` fields that decide how many samples one optimiser step takes."""
_TRL_DEFAULTS = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "num_generations": 8,
                 "num_iterations": 1}  # fmt: skip
"""TRL 1.16's ``GRPOConfig`` defaults of the fields :func:`fit_batch_sizes` reads."""


def steps_per_epoch(
    prompts: int,
    *,
    num_generations: int,
    per_device_train_batch_size: int,
    gradient_accumulation_steps: int,
    generation_batch_size: int | None = None,
    steps_per_generation: int | None = None,
    num_iterations: int = 1,
) -> int:
    """Full optimiser steps one pass over ``prompts`` prompts gives in TRL 1.16 (one process).

    ``GRPOConfig`` resolves the generation batch (neither set: ``per_device × gradient_accumulation``; else from
    ``steps_per_generation`` or given). TRL's ``RepeatSampler`` cuts the shuffled prompts into chunks of
    ``generation_batch // num_generations`` distinct prompts, drops a short last chunk, and yields each chunk's
    prompts ``num_generations`` times over ``num_iterations × steps_per_generation`` micro-batches of
    ``per_device`` samples; ``gradient_accumulation_steps`` micro-batches make one optimiser step.

    Example (the shipped Veri-R1 sizes against 10 prompts; the scaled ones; 2 prompts, groups of 4, one each):
        >>> steps_per_epoch(10, num_generations=3, per_device_train_batch_size=16, gradient_accumulation_steps=12,
        ...                 generation_batch_size=768)
        0
        >>> steps_per_epoch(10, num_generations=3, per_device_train_batch_size=15, gradient_accumulation_steps=1,
        ...                 generation_batch_size=15)
        2
        >>> steps_per_epoch(2, num_generations=4, per_device_train_batch_size=4, gradient_accumulation_steps=1,
        ...                 steps_per_generation=1)
        2
    """
    per_device, accumulation = per_device_train_batch_size, gradient_accumulation_steps
    generation = generation_batch_size or per_device * (steps_per_generation or accumulation)
    distinct = generation // num_generations
    if distinct < 1 or per_device < 1 or accumulation < 1:
        return 0
    micro_batches = (prompts // distinct) * (generation // per_device) * num_iterations
    return micro_batches // accumulation


def fit_batch_sizes(
    kwargs: Mapping[str, Any], *, prompts: int, explicit: Collection[str] = (), max_prompts_per_step: int | None = None
) -> tuple[dict[str, Any], str | None]:
    """``kwargs`` (of :func:`grpo_kwargs`) whose batch sizes fill at least one optimiser step from ``prompts``
    prompts (:func:`steps_per_epoch`), and the line saying what changed (``None``: nothing did).

    Sizes that came from the OpenRLHF flags are scaled down: ``num_generations`` kept, as many prompts per step
    as the per-device batch held (at most ``prompts`` and ``max_prompts_per_step``), gradient accumulation 1, one
    step per generation.

    Raises:
        ConfigError: the sizes cannot fill one step and some were set in ``explicit`` (``trl.args``): the message
            names them and the prompt count.

    Example (10 prompts against the shipped Veri-R1 sizes: 5 prompts × 3 generations per step):
        >>> shipped = {"num_generations": 3, "per_device_train_batch_size": 16, "gradient_accumulation_steps": 12,
        ...            "generation_batch_size": 768}
        >>> fitted, line = fit_batch_sizes(shipped, prompts=10)
        >>> [fitted[k] for k in ("per_device_train_batch_size", "gradient_accumulation_steps",
        ...                      "generation_batch_size")]
        [15, 1, 15]
        >>> fit_batch_sizes(shipped, prompts=2)[0]["per_device_train_batch_size"]
        6
        >>> fit_batch_sizes(shipped, prompts=10, max_prompts_per_step=1)[0]["per_device_train_batch_size"]
        3
        >>> fit_batch_sizes(shipped, prompts=10, explicit=["per_device_train_batch_size"])
        Traceback (most recent call last):
        ...
        evigraph.errors.ConfigError: trl.args: 10 prompts × 3 generations cannot fill one optimiser step of ...
    """
    sizes = {**_TRL_DEFAULTS, **{k: v for k, v in kwargs.items() if v is not None}}
    generations = int(sizes["num_generations"])
    if steps_per_epoch(
        prompts,
        num_generations=generations,
        per_device_train_batch_size=int(sizes["per_device_train_batch_size"]),
        gradient_accumulation_steps=int(sizes["gradient_accumulation_steps"]),
        generation_batch_size=sizes.get("generation_batch_size"),
        steps_per_generation=sizes.get("steps_per_generation"),
        num_iterations=int(sizes["num_iterations"]),
    ):
        return dict(kwargs), None
    shown = ", ".join(f"{k} {sizes[k]}" for k in BATCH_FIELDS if k in sizes)
    problem = f"{prompts} prompts × {generations} generations cannot fill one optimiser step of {shown}"
    chosen = sorted(set(BATCH_FIELDS) & set(explicit))
    if chosen:
        raise ConfigError(
            f"{problem} ({', '.join(chosen)} set by you): lower them, or give more prompts", source="trl.args"
        )
    per_step = min(prompts, max(1, int(sizes["per_device_train_batch_size"]) // generations))
    per_step = min(per_step, max_prompts_per_step or per_step)
    batch = generations * per_step
    fitted = {k: v for k, v in kwargs.items() if k != "steps_per_generation"}
    fitted.update(per_device_train_batch_size=batch, gradient_accumulation_steps=1, generation_batch_size=batch)
    line = (
        f"{problem} (the OpenRLHF flags'): training with per_device_train_batch_size {batch}, "
        f"gradient_accumulation_steps 1, generation_batch_size {batch} ({per_step} prompts per step; "
        "--set trl.args.* to choose)"
    )
    return fitted, line
