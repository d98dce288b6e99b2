"""Does GRPO make a policy better? The synthetic world on 2 CPU cores, outcome-only against a typed process reward.

The world (:mod:`evigraph.corpora.world`): made-up people, firms and towns, one document each, built into a real
BM25 corpus; claims that need one search (where a person lives) or two (where the firm a person works for is
based), balanced SUPPORT / REFUTE, held-out claims about people no training claim mentions. The rollout is
Veri-R1's online graph (brief prompt, two searches at most, one entry per search) through the TRL engine
(:func:`evigraph.agents.veri_r1.world_job.grpo`), the policy a small random Llama warm-started on demonstrations
(:func:`evigraph.agents.veri_r1.world_job.warm_started`: the comparing final turns first, then whole runs) that
check every 1-hop claim and show every 2-hop claim both ways, the decision to take the second search weighted to
``--second-hop-share``: greedy decoding never takes it, sampling sometimes does, and then it pays. Per seed, from
the same warm start and for the same number of steps:

- ``outcome``: ``advantage.mode=grpo`` on Veri-R1's reward (label x validity + evidence + format);
- ``typed``: ``process_additive`` with StepGap's typed reward (``typed_shape``) from the world's rule checker
  (a query naming nothing on the claim's path or repeating one is IE, an answer before the second hop MB, a think
  contradicting the world CC) as per-step values.

Before any GRPO the warm start is probed: its P(SUPPORT) after reading a true and a false 1-hop claim's entry must
differ, or there is nothing for RL to sharpen (the run stops and says so). Held-out greedy accuracy and reward are
measured before, every ``--eval-every`` steps and after; ``after - before`` gets a 95% t-interval over seeds.

    python benchmarks/learning_world.py [--seeds 3] [--steps 40] [--eval-claims 400] [--out DIR] [--plot FILE]

Prints a table and ends with ``RESULT acc_before=… acc_after=… typed_acc_after=… steps=… s_per_step=…``;
everything (curves, per-seed numbers, timings) goes to ``OUT/result.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

MODES = ("outcome", "typed")


def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and a 95% t-interval (the mean twice for one value)."""
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half


def steps_to(curve: list[tuple[int, float]], threshold: float) -> int | None:
    """The first evaluated step whose held-out accuracy reaches ``threshold`` (``None``: never)."""
    return next((step for step, value in curve if value >= threshold), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--eval-claims", type=int, default=400)
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--beta", type=float, default=0.0)
    parser.add_argument("--warm-steps", type=int, default=None, help="warm-start steps on whole episodes")
    parser.add_argument("--final-turn-steps", type=int, default=None, help="warm-start steps on final turns, first")
    parser.add_argument("--second-hop-share", type=float, default=None)
    parser.add_argument("--threshold", type=float, default=None, help="default: halfway from before to 1.0")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="run only these seeds (comma-separated); others are read if kept")
    parser.add_argument(
        "--jobs", type=int, default=1, help="seeds run at once, each in its own process (--threads each); 2 on 2 cores"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # a --jobs child: keep, then stop
    parser.add_argument("--out", type=Path, default=Path("runs/learning-world"))
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--small", action="store_true", help="a smaller world (400 people, 300 warm-start steps)")
    parser.add_argument(
        "--train-anyway", action="store_true", help="run GRPO even when the probe finds the label ignores the entry"
    )
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from evigraph.agents.veri_r1 import learning_job, world_job

    modes = [m for m in args.modes.split(",") if m]
    run = world_job.SMALL if args.small else world_job.WorldRun()
    updates = {
        "warm_steps": args.warm_steps,
        "final_turn_steps": args.final_turn_steps,
        "second_hop_share": args.second_hop_share,
    }
    run = run.model_copy(update={k: v for k, v in updates.items() if v is not None})
    started = time.perf_counter()
    prepared = world_job.prepare(args.out / "world", run)
    heldout = prepared.heldout[: args.eval_claims]
    print(
        f"world: {len(prepared.world.people)} people, {len(prepared.train)} training claims, {len(heldout)} held-out "
        f"claims, {len(prepared.demonstrations)} demonstrations ({time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
    )
    settings = learning_job.GrpoSettings(
        prompts_per_step=args.prompts_per_step,
        generations=args.generations,
        lr=args.lr,
        temperature=args.temperature,
        beta=args.beta,
    )
    # A finished seed is kept in OUT/seed-K/result.json with what produced it, and reused by a rerun with the same
    # settings: seeds can be added later (--seeds 4 after 3) or run in two processes (--only 1).
    fingerprint = json.dumps(
        [run.model_dump(mode="json"), settings.model_dump(), args.steps, args.eval_every, len(heldout), modes,
         args.threads, args.train_anyway],
    )  # fmt: skip
    only = {int(s) for s in args.only.split(",")} if args.only else None
    if args.jobs > 1 and only is None:
        run_in_processes(argv if argv is not None else sys.argv[1:], args, fingerprint)
    seeds: list[dict[str, Any]] = []
    for seed in range(args.seeds):
        kept = args.out / f"seed-{seed}" / "result.json"
        if kept.is_file() and json.loads(kept.read_text(encoding="utf-8")).get("fingerprint") == fingerprint:
            print(f"seed {seed}: kept in {kept}", file=sys.stderr)
            seeds.append(json.loads(kept.read_text(encoding="utf-8"))["result"])
            continue
        if only is not None and seed not in only:
            continue
        result = learning_job.compare(
            prepared,
            heldout,
            seed=seed,
            modes=modes,
            steps=args.steps,
            eval_every=args.eval_every,
            settings=settings,
            out=args.out / f"seed-{seed}",
            log=lambda line, seed=seed: print(f"[seed {seed}] {line}", file=sys.stderr, flush=True),
            require_probe=not args.train_anyway,
        )
        seeds.append(result)
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps({"fingerprint": fingerprint, "result": result}) + "\n", encoding="utf-8")
        if not result["probe_ok"]:
            print(f"seed {seed}: the warm start's label ignores the entry it read ({result['probe']})", file=sys.stderr)
    if args.child:
        return 0
    summary = summarize(seeds, modes, args.threshold)
    summary.update(
        args={k: str(v) for k, v in vars(args).items()},
        run=run.model_dump(),
        seconds=round(time.perf_counter() - started, 1),
        seeds=seeds,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "result.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(table(summary, modes))
    if args.plot is not None:
        plot(seeds, modes, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    outcome, typed = summary.get("outcome", {}), summary.get("typed", {})
    print(
        "RESULT "
        f"acc_before={summary['acc_before']:.4f} acc_after={outcome.get('acc_after', float('nan')):.4f} "
        f"typed_acc_after={typed.get('acc_after', float('nan')):.4f} steps={args.steps} "
        f"s_per_step={outcome.get('s_per_step', float('nan')):.2f} "
        f"typed_s_per_step={typed.get('s_per_step', float('nan')):.2f} seeds={args.seeds} "
        f"gain_low={outcome.get('gain_ci', [float('nan')] * 2)[0]:.4f} "
        f"typed_gain_low={typed.get('gain_ci', [float('nan')] * 2)[0]:.4f}"
    )
    return 0


def run_in_processes(argv: list[str], args: argparse.Namespace, fingerprint: str) -> None:
    """Run the seeds not yet kept as ``--only K`` children of this script, ``args.jobs`` at a time; each keeps its
    result in ``OUT/seed-K/result.json``, which the caller then reads like any kept seed. The world is prepared
    (its corpus built) by the caller first, so the children only reuse it. A child that fails stops the run."""
    import subprocess

    def kept(seed: int) -> bool:
        path = args.out / f"seed-{seed}" / "result.json"
        return path.is_file() and json.loads(path.read_text(encoding="utf-8")).get("fingerprint") == fingerprint

    pending = [seed for seed in range(args.seeds) if not kept(seed)]
    running: list[tuple[int, subprocess.Popen[bytes]]] = []
    while pending or running:
        while pending and len(running) < args.jobs:
            seed = pending.pop(0)
            command = [sys.executable, __file__, *argv, "--only", str(seed), "--jobs", "1", "--child"]
            print(f"seed {seed}: started in its own process", file=sys.stderr, flush=True)
            running.append((seed, subprocess.Popen(command, stdout=subprocess.DEVNULL)))
        time.sleep(1.0)
        for seed, process in list(running):
            if process.poll() is None:
                continue
            running.remove((seed, process))
            if process.returncode != 0:
                for _, other in running:
                    other.terminate()
                raise SystemExit(f"seed {seed}: its process exited with {process.returncode}")


def summarize(seeds: list[dict[str, Any]], modes: list[str], threshold: float | None) -> dict[str, Any]:
    """Means and intervals over seeds: accuracy and reward before, after, the gain, steps to the threshold."""
    ran = [s for s in seeds if all(mode in s for mode in modes)]
    if not ran:
        return {"acc_before": float("nan"), "probe_failed": len(seeds)}
    before = [s["before"]["accuracy"] for s in ran]
    summary: dict[str, Any] = {
        "acc_before": statistics.fmean(before),
        "reward_before": statistics.fmean(s["before"]["reward"] for s in ran),
        "n_heldout": ran[0]["before"]["n"],
    }
    goal = threshold if threshold is not None else (summary["acc_before"] + 1.0) / 2
    summary["threshold"] = goal
    for mode in modes:
        after = [s[mode]["after"]["accuracy"] for s in ran]
        gain = [a - b for a, b in zip(after, before, strict=True)]
        mean, low, high = interval(gain)
        reached = [steps_to([tuple(p) for p in s[mode]["curve"]], goal) for s in ran]
        summary[mode] = {
            "acc_after": statistics.fmean(after),
            "reward_after": statistics.fmean(s[mode]["after"]["reward"] for s in ran),
            "gain": mean,
            "gain_ci": [low, high],
            "second_hop_after": statistics.fmean(s[mode]["after"]["second_hop_rate"] for s in ran),
            "steps_to_threshold": reached,
            "s_per_step": statistics.fmean(s[mode]["s_per_step"] for s in ran),
        }
    return summary


def table(summary: dict[str, Any], modes: list[str]) -> str:
    if "probe_failed" in summary:
        return "no seed passed the probe: nothing was trained"
    lines = [
        f"held-out greedy accuracy, {summary['n_heldout']} claims, mean over seeds (95% t-interval of the gain)",
        f"  warm start (before GRPO): {summary['acc_before']:.3f}  reward {summary['reward_before']:.3f}",
    ]
    for mode in modes:
        m = summary[mode]
        lines.append(
            f"  {mode:8s} after: {m['acc_after']:.3f}  reward {m['reward_after']:.3f}  gain {m['gain']:+.3f} "
            f"[{m['gain_ci'][0]:+.3f}, {m['gain_ci'][1]:+.3f}]  second hop {m['second_hop_after']:.2f}  "
            f"steps to {summary['threshold']:.2f}: {m['steps_to_threshold']}  {m['s_per_step']:.2f} s/step"
        )
    return "\n".join(lines)


def plot(seeds: list[dict[str, Any]], modes: list[str], path: Path) -> None:
    """Held-out accuracy against GRPO steps, one line per mode (mean over seeds, band = min..max)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for mode in modes:
        curves = [dict((int(k), v) for k, v in s[mode]["curve"]) for s in seeds if mode in s]
        if not curves:
            continue
        steps = sorted(set.intersection(*(set(c) for c in curves)))
        means = [statistics.fmean(c[k] for c in curves) for k in steps]
        axis.plot(steps, means, marker="o", label=f"{mode} (mean of {len(curves)} seeds)")
        axis.fill_between(steps, [min(c[k] for c in curves) for k in steps], [max(c[k] for c in curves) for k in steps],
                          alpha=0.2)  # fmt: skip
    axis.set_xlabel("GRPO step")
    axis.set_ylabel("held-out greedy accuracy")
    axis.set_title("Veri-R1 in the synthetic world: outcome vs typed process reward")
    axis.grid(alpha=0.3)
    axis.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
