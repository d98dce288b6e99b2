"""The learning comparison in the synthetic world, one seed at a time: from one warm start, outcome-only GRPO against
StepGap's typed per-step reward at equal steps, with a held-out curve (:func:`compare`). The benchmark
(``benchmarks/learning_world.py``) runs it over seeds; the pieces it calls are in
:mod:`evigraph.agents.veri_r1.world_job`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.agents.veri_r1.world_job import Prepared, evaluate, grpo, probe, warm_started
from evigraph.corpora.world import Claim

__all__ = ("GrpoSettings", "compare")


class GrpoSettings(BaseModel):
    """The GRPO knobs a world run varies (everything else is Veri-R1's shipped TRL config)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompts_per_step: int = 8
    generations: int = 8
    lr: float = 3e-4
    temperature: float = 1.0
    beta: float = 0.0

    def overrides(self) -> list[str]:
        batch = self.prompts_per_step * self.generations
        return [
            f"trl.args.num_generations={self.generations}",
            f"trl.args.per_device_train_batch_size={batch}",
            "trl.args.gradient_accumulation_steps=1",
            "trl.args.steps_per_generation=1",
            f"trl.args.learning_rate={self.lr}",
            f"trl.args.temperature={self.temperature}",
            f"trl.args.beta={self.beta}",
            "trl.args.lr_scheduler_type=constant",
            "trl.args.warmup_steps=0",
            "trl.args.disable_tqdm=true",
            "trl.args.loss_type=dapo",
        ]


def compare(
    prepared: Prepared,
    heldout: list[Claim],
    *,
    seed: int,
    modes: list[str],
    steps: int,
    eval_every: int,
    settings: GrpoSettings,
    out: Path,
    log: Any = print,
    require_probe: bool = True,
) -> dict[str, Any]:
    """One seed of the learning comparison: warm start, probe, held-out score before, then each mode's GRPO run
    from a copy of the same warm start with a held-out curve every ``eval_every`` steps, and the score after. With
    ``require_probe`` a warm start whose label ignores what it read is not trained (``probe_ok`` false)."""
    import copy
    import shutil
    import time

    warm, done = warm_started(prepared, seed=seed)
    tokenizer = prepared.tokenizer
    probed = probe(warm, tokenizer, prepared, heldout)
    gap = probed.get("p_support_given_support", 0.0) - probed.get("p_support_given_refute", 0.0)
    before = evaluate(warm, tokenizer, prepared, heldout)
    log(f"seed {seed}: warm start loss {done.first_loss:.2f} -> {done.last_loss:.2f} in {done.seconds:.0f} s; "
        f"probe {probed}; before {before.accuracy:.3f} (1-hop {before.accuracy_1hop:.3f}, 2-hop "
        f"{before.accuracy_2hop:.3f}, second hop {before.second_hop_rate:.2f})")  # fmt: skip
    result: dict[str, Any] = {
        "seed": seed,
        "warm_start": done.model_dump(),
        "probe": probed,
        "probe_ok": gap > 0.2,
        "before": before.model_dump(),
    }
    if not result["probe_ok"] and require_probe:
        return result
    for mode in modes:
        # A fresh folder: train_stage resumes from a checkpoint it finds there, which would be another warm
        # start's run (met: an earlier benchmark's checkpoint-30 was "resumed" and reported as this seed's result).
        shutil.rmtree(out / mode, ignore_errors=True)
        model = copy.deepcopy(warm)
        curve: list[tuple[int, float]] = [(0, before.accuracy)]

        started = time.perf_counter()
        stage = grpo(
            mode,  # type: ignore[arg-type]
            prepared,
            model,
            out=out / mode,
            steps=steps,
            seed=seed,
            overrides=settings.overrides(),
            callbacks=[_curve(model, prepared, heldout, curve, every=eval_every, last=steps)],
        )
        seconds = time.perf_counter() - started
        model.eval()
        after = evaluate(model, tokenizer, prepared, heldout)
        curve.append((steps, after.accuracy))
        rewards = [entry["reward"] for entry in stage.log_history if "reward" in entry]
        log(f"seed {seed} {mode}: after {after.accuracy:.3f} (1-hop {after.accuracy_1hop:.3f}, 2-hop "
            f"{after.accuracy_2hop:.3f}, second hop {after.second_hop_rate:.2f}); train reward "
            f"{rewards[0] if rewards else float('nan'):.2f} -> {rewards[-1] if rewards else float('nan'):.2f}; "
            f"{seconds / max(1, stage.global_step):.2f} s/step")  # fmt: skip
        result[mode] = {
            "after": after.model_dump(),
            "curve": curve,
            "train_reward": rewards,
            "global_step": stage.global_step,
            "s_per_step": seconds / max(1, stage.global_step),
        }
    return result


def _curve(model: Any, prepared: Prepared, heldout: list[Claim], curve: list[tuple[int, float]], *, every: int,
           last: int) -> Any:  # fmt: skip
    """A trainer callback appending ``(step, held-out accuracy)`` to ``curve`` every ``every`` steps."""
    from transformers import TrainerCallback

    class Curve(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step % every == 0 and state.global_step < last:
                was_training = model.training
                model.eval()
                curve.append((state.global_step, evaluate(model, prepared.tokenizer, prepared, heldout).accuracy))
                model.train(was_training)

    return Curve()
