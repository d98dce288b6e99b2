"""Does the TRL engine learn? GRPO with LoRA on the embedded SmolLM2, on CPU, on a seeded split of Veri-R1's data.

The data is the shared ``test_offline.jsonl`` (512 claims, each with its ~10 candidate passages in the prompt):
Veri-R1's offline variant (one think-and-answer turn over the given entries, no search, no JVM). A seeded shuffle
puts ``--eval-prompts`` claims aside for evaluation; the rest are the training prompts. The embedded model from its
base never writes a well-formed answer (reward 0 on every sample, so outcome-only GRPO has no signal at all), so
both runs start from one **warm start**: a short full fine-tune (TRL's ``SFTTrainer``) on ``--warm-start`` gold
replies to training claims no GRPO run sees (a one-line think naming the gold entries, then the gold label and
ids): it teaches the answer's form; which label is right stays the model's problem. From that start, with a fresh
LoRA adapter each time, through the real TRL engine (:func:`evigraph.training.trl_engine.train_stage`,
``AgentGRPOTrainer`` with the graph as its rollout):

- ``outcome``: ``advantage.mode=grpo`` on Veri-R1's scalar reward (``final``: label x validity + evidence + format);
- ``typed``: ``advantage.mode=process_additive`` with a typed process reward mixed in: StepGap's ``typed`` reward
  (preset ``typed_shape``) on the run read as a StepGap trace (``mix`` term ``veri-r1->stepgap``). Veri-R1's own
  reward has no per-step values, and StepGap's checker needs a judge: the judge is the same embedded model,
  frozen (``judge=embedded``, a separate copy; NLI falls back to it). The sample's outcome is the same Veri-R1
  scalar; the typed values act per step only (``process_in_scalar`` off).

Greedy evaluation (temperature 0, the same graph, Veri-R1's reward) of every held-out claim: the base model
(``reward_base``), the warm start (``reward_before``), each run's final weights (``reward_after`` for the outcome
run, ``typed_after`` for the typed one). The plot shows the mean training reward (Veri-R1's scalar, sampled at
the config's temperature) per step of both runs.

Stages are kept in OUT and reused by a rerun over the same OUT (the warm start, finished runs, evaluations), so the
two runs can train in two processes at once on a machine with a free core (``--runs typed --no-eval`` beside
``--runs outcome``) and a last run over the same OUT evaluates what is missing and prints the whole result.

``overhead``: one generation batch of the same prompts (the graph's rendered first-turn prompt, decoded back to
text for TRL), same model, same ``max_completion_length`` and sampling, timed through TRL's
``_generate_and_score_completions`` twice: with our graph rollout (``AgentGRPOTrainer``) and with TRL's own
built-in generation (``GRPOTrainer`` without ``rollout_func``), each as seconds per generated token; the ratio
is ours over TRL's (goal ≤ 1.3). One timing each, ours first (it pays the first ``generate``'s warm-up).
``s_per_step`` / ``typed_s_per_step``: the mean step time (TRL's ``step_time``) of each run; the typed run's
includes the frozen judge's checks. Everything else (per-step logs, components, timings) goes to
``OUT/result.json``.

    python benchmarks/learning.py [--steps 12] [--eval-prompts 64] [--batch 2] [--warm-start 64] \
        [--max-new-tokens 128] [--runs outcome,typed] [--skip-base] [--no-eval] [--out DIR] [--plot FILE]

Short smoke run (tens of minutes on a 2-core CPU): ``--steps 1 --eval-prompts 4 --warm-start 32 --skip-base``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "veri-r1-claim-verification" / "test_offline.jsonl"
LORA = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}
JUDGE = "embedded"


def split(path: Path, *, eval_prompts: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The offline claims as graph inputs (given entries, gold), shuffled with ``seed``: (train, held out)."""
    from evigraph.agents.veri_r1.data import claim_record_from_mapping
    from evigraph.jsonl import iter_json_objects

    inputs = []
    for _, data in iter_json_objects(path):
        record = claim_record_from_mapping(data)
        if not record.passages or record.gold is None:
            continue
        inputs.append(
            {
                "id": record.id,
                "claim": record.claim,
                "evidence": [p.model_dump() for p in record.passages],
                "gold": {"label": record.gold.label, "evidence": list(record.gold.evidence)},
            }
        )
    random.Random(seed).shuffle(inputs)
    if eval_prompts >= len(inputs):
        raise SystemExit(f"--eval-prompts {eval_prompts}: {path} has only {len(inputs)} usable claims")
    return inputs[eval_prompts:], inputs[:eval_prompts]


def gold_reply(graph_input: dict[str, Any]) -> str:
    """The warm start's target: a one-sentence think naming the entries checked, then the gold label and the gold
    ids that are among the given entries (the answer format of the offline prompt)."""
    shown = {e["id"] for e in graph_input["evidence"]}
    cited = [i for i in graph_input["gold"]["evidence"] if i in shown]
    checked = ", ".join(f"[[{i}]]" for i in cited) or "the given entries"
    label = {"SUPPORTS": "SUPPORT", "REFUTES": "REFUTE"}.get(graph_input["gold"]["label"], graph_input["gold"]["label"])
    evidence = ", ".join(f"[[{i}]]" for i in cited)
    return (
        f"<think>I compare each part of the claim with {checked}.</think>\n"
        f"<answer>\nLabel: {label}\nEvidence: {evidence}\n</answer>"
    )


def warm_start(args: argparse.Namespace, examples: list[dict[str, Any]], out: Path) -> Path:
    """A short full fine-tune (TRL's ``SFTTrainer``) of the embedded model on gold replies to training claims no
    GRPO run sees: the shared start of both runs. From the base model every sample scores 0 (it never writes a
    well-formed answer), so GRPO on the outcome alone has no signal; the warm start teaches the form only, the
    label is still the model's to get right. Returns the warmed model's directory."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from evigraph.agents.veri_r1.prompts import offline_prompt
    from evigraph.training import trl_engine
    from evigraph.trajectory import Evidence

    model, tokenizer = trl_engine.load_policy("smollm2")
    rows = []
    for graph_input in examples:
        message = offline_prompt(graph_input["claim"], [Evidence.model_validate(e) for e in graph_input["evidence"]])
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        rows.append({"prompt": prompt, "completion": gold_reply(graph_input)})
    target = out / "warm-start"
    trainer = SFTTrainer(
        model=model,
        args=SFTConfig(
            output_dir=str(out / "warm-start-run"),
            max_length=args.max_length,
            per_device_train_batch_size=4,
            num_train_epochs=1,
            learning_rate=args.sft_lr,
            lr_scheduler_type="constant",
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            disable_tqdm=True,
            seed=args.seed,
            use_cpu=not __import__("torch").cuda.is_available(),
        ),
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    trainer.train()
    losses = [round(h["loss"], 3) for h in trainer.state.log_history if "loss" in h]
    print(f"warm start: {len(rows)} gold replies, loss per step {losses}", flush=True)
    trainer.save_model(str(target))
    tokenizer.save_pretrained(str(target))
    return target


def train_config(args: argparse.Namespace, *, typed: bool) -> Any:
    """The shipped veri-r1 config, offline, on the TRL engine, sized for one CPU."""
    from evigraph.training.config import load_train_config

    group = args.num_generations
    overrides = [
        "engine=trl",
        "agent_config.offline=true",
        f"agent_config.offline_max_new_tokens={args.max_new_tokens}",
        f"trl.max_length={args.max_length}",
        f"trl.lora={json.dumps(LORA)}",
        f"trl.args.num_generations={group}",
        f"trl.args.per_device_train_batch_size={args.batch * group}",
        "trl.args.steps_per_generation=1",
        "trl.args.gradient_accumulation_steps=1",
        f"trl.args.learning_rate={args.lr}",
        f"trl.args.temperature={args.temperature}",
        f"trl.args.lr_scheduler_type={args.lr_schedule}",
        "trl.args.warmup_steps=0",
        "trl.args.beta=0.0",  # no reference pass: half the CPU per step (the LoRA start is the reference anyway)
        f"trl.args.save_steps={args.steps}",
        "trl.args.disable_tqdm=true",
        f"trl.args.seed={args.seed}",
    ]
    if typed:
        mix = {
            "outcome_weight": 1.0,
            "process": [
                {
                    "name": "gap",
                    "adapter": "veri-r1->stepgap",
                    "reward": "typed",
                    "options": {"preset": "typed_shape", "lam": 1.0},
                    "value": "bracket",
                    "em_from": "label",
                    "weight": 1.0,
                    "judge": JUDGE,
                    "judge_settings": {"max_new_tokens": args.judge_tokens},
                }
            ],
        }
        overrides += ["advantage.mode=process_additive", "advantage.coef=1.0", f"mix={json.dumps(mix)}"]
    else:
        overrides += ["advantage.mode=grpo"]
    return load_train_config("veri-r1", overrides)


def executor_of(config: Any) -> Any:
    from evigraph.config import settings_for
    from evigraph.training.executor import GraphExecutor, RolloutConfig

    return GraphExecutor(settings_for(RolloutConfig, config), resources={"search": None})


def greedy_eval(
    executor: Any, model: Any, tokenizer: Any, held_out: list[dict[str, Any]], budget: int
) -> tuple[dict[str, float], str]:
    """Means over greedy answers to the held-out claims (one batch of concurrent episodes): ``reward`` (Veri-R1's
    scalar) and each of its components (``veri-r1/label``, ``veri-r1/format`` ...); and the first answer's text."""
    import torch

    from evigraph.event_loop import run_sync
    from evigraph.generators.transformers import TransformersGenerator
    from evigraph.generators.types import SamplingParams
    from evigraph.training.data import prompt_line

    labels = [prompt_line("veri-r1", g)["label"] for g in held_out]
    generator = TransformersGenerator.from_model(model, tokenizer, max_batch_size=64)
    greedy = SamplingParams(temperature=0.0, seed=0)

    async def episodes() -> list[Any]:
        import asyncio

        return await asyncio.gather(
            *(executor.episode(label, generator, max_length=budget, sampling=greedy) for label in labels)
        )

    model.eval()
    try:
        with torch.no_grad():
            responses = run_sync(episodes)
    finally:
        generator.close()
    means = {"reward": statistics.fmean(float(r.outcome) for r in responses)}
    logs = [r.logs for r in responses]
    for name in sorted({k for log in logs for k in log}):
        means[name] = statistics.fmean(float(log.get(name, 0.0)) for log in logs)
    first = responses[0]
    return means, tokenizer.decode(first.token_ids[first.prompt_length :])


def train(
    args: argparse.Namespace, *, start: str, typed: bool, prompts: Path, out: Path
) -> tuple[Any, list[dict[str, Any]]]:
    """One LoRA GRPO run from the embedded model's start: (the merged trained model's dir, its log history)."""
    from evigraph.training import trl_engine

    config = train_config(args, typed=typed)
    result = trl_engine.train_stage(
        config,
        executor_of(config),
        prompts=prompts,
        model=trl_engine.load_policy(start),
        out=out,
        max_steps=args.steps,
    )
    return result.model_dir, result.log_history


def generation_seconds_per_token(trainer: Any, batch: list[dict[str, Any]]) -> tuple[float, list[int]]:
    """Time one ``_generate_and_score_completions`` of ``batch``: (seconds per generated policy token, each
    sample's policy tokens)."""
    start = time.perf_counter()
    output = trainer._generate_and_score_completions(batch)
    seconds = time.perf_counter() - start
    mask = output["completion_mask"]
    if "tool_mask" in output:
        mask = mask * output["tool_mask"]
    lengths = [int(n) for n in mask.sum(dim=1).tolist()]
    return seconds / max(1, sum(lengths)), lengths


def overhead(args: argparse.Namespace, train_inputs: list[dict[str, Any]], work: Path) -> dict[str, Any]:
    """Our graph rollout's generation time per token over TRL's built-in generation's (same model and prompts)."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from evigraph.training import trl_engine
    from evigraph.training.data import write_prompt_dataset
    from evigraph.training.trl_rollout import GraphRollout

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    config = train_config(args, typed=False)
    group = args.num_generations
    inputs = train_inputs[: args.batch]
    prompts = work / "overhead-prompts.jsonl"
    write_prompt_dataset("veri-r1", inputs, prompts)
    rows = trl_engine._episodes(prompts)
    grpo = trl_engine.grpo_config(config, out=work / "overhead-ours", max_steps=1)
    model, tokenizer = trl_engine.load_policy("smollm2")
    rollout = GraphRollout(executor_of(config), max_length=args.max_length, num_generations=group)
    ours = trl_engine.AgentGRPOTrainer(
        model=model,
        reward_funcs=[trl_engine.outcome],
        args=grpo,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        rollout_func=rollout,
        advantage=config.advantage,
    )
    batch = [row for row in rows for _ in range(group)]
    try:
        ours_spt, ours_tokens = generation_seconds_per_token(ours, batch)
        texts = [tokenizer.decode(s.prompt_ids) for s in rollout.last[::group]]
    finally:
        rollout.close()
    # TRL's own generation: the same rendered prompts as plain text, the same cap and sampling, a trivial reward.
    kwargs = trl_engine.grpo_kwargs(config, out=work / "overhead-trl", max_steps=1)
    kwargs["max_completion_length"] = args.max_new_tokens
    from trl import GRPOConfig

    plain_model, _ = trl_engine.load_policy("smollm2")
    theirs = GRPOTrainer(
        model=plain_model,
        reward_funcs=[lambda completions, **_: [0.0] * len(completions)],
        args=GRPOConfig(**kwargs),
        train_dataset=Dataset.from_list([{"prompt": t} for t in texts]),
        processing_class=tokenizer,
    )
    repeated = [{"prompt": text} for text in texts for _ in range(group)]
    theirs_spt, theirs_tokens = generation_seconds_per_token(theirs, repeated)
    return {
        "overhead": ours_spt / theirs_spt,
        "ours_ms_per_token": ours_spt * 1e3,
        "trl_ms_per_token": theirs_spt * 1e3,
        "ours_tokens": ours_tokens,
        "trl_tokens": theirs_tokens,
    }


def step_rewards(history: list[dict[str, Any]]) -> list[tuple[int, float]]:
    return [(int(h["step"]), float(h["reward"])) for h in history if "reward" in h and "step" in h]


def step_seconds(history: list[dict[str, Any]], steps: int) -> float:
    """Mean step time (TRL's ``step_time`` log; else the run's time over its steps)."""
    times = [float(h["step_time"]) for h in history if "step_time" in h]
    if times:
        return statistics.fmean(times)
    runtime = [float(h["train_runtime"]) for h in history if "train_runtime" in h]
    return runtime[-1] / max(1, steps) if runtime else float("nan")


def plot(runs: dict[str, list[tuple[int, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    for name, points in runs.items():
        axes.plot([s for s, _ in points], [r for _, r in points], marker="o", label=name)
    axes.set_xlabel("GRPO step")
    axes.set_ylabel("mean Veri-R1 reward of the step's samples")
    axes.set_title("Veri-R1 offline, SmolLM2-135M + LoRA, TRL engine on CPU")
    axes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=12, help="GRPO steps per run")
    parser.add_argument("--eval-prompts", type=int, default=64, help="held-out claims, greedy, before and after")
    parser.add_argument("--batch", type=int, default=2, help="prompts per step")
    parser.add_argument("--num-generations", type=int, default=3, help="samples per prompt (the config's 3)")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="the offline turn's token cap")
    parser.add_argument("--max-length", type=int, default=2048, help="an episode's sequence budget")
    parser.add_argument("--lr", type=float, default=1e-4, help="LoRA learning rate")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature (the config's 0.8)")
    parser.add_argument("--lr-schedule", default="linear", help="TRL's lr_scheduler_type (the world runs: constant)")
    parser.add_argument("--warm-start", type=int, default=96, help="gold replies to SFT on first (0: none)")
    parser.add_argument("--sft-lr", type=float, default=5e-5, help="the warm start's learning rate")
    parser.add_argument("--judge-tokens", type=int, default=128, help="the typed run's judge token cap")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA, help="Veri-R1's test_offline.jsonl")
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a new temp dir)")
    parser.add_argument("--plot", type=Path, default=None, help="reward-per-step plot (default: OUT/learning.png)")
    parser.add_argument("--skip-overhead", action="store_true", help="do not time the generation overhead")
    parser.add_argument("--runs", default="outcome,typed", help="which GRPO runs (comma-separated)")
    parser.add_argument("--skip-base", action="store_true", help="do not evaluate the base model")
    parser.add_argument("--no-eval", action="store_true", help="train only (finished stages in OUT are reused)")
    parser.add_argument("--overhead-only", action="store_true", help="time the overhead and stop (a quiet machine)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="evigraph-learning-"))
    out.mkdir(parents=True, exist_ok=True)
    plot_path = args.plot or out / "learning.png"

    import torch

    from evigraph.training import trl_engine
    from evigraph.training.data import write_prompt_dataset

    torch.manual_seed(args.seed)
    train_inputs, held_out = split(args.data, eval_prompts=args.eval_prompts, seed=args.seed)
    prompts = out / "prompts.jsonl"
    write_prompt_dataset("veri-r1", train_inputs[: args.steps * args.batch], prompts)
    print(f"{len(held_out)} held-out claims, {args.steps * args.batch} training prompts, work folder {out}", flush=True)
    evaluator = executor_of(train_config(args, typed=False))

    def evaluate(spec: str) -> dict[str, float]:
        # Evaluations are kept in OUT/evals/ by model: a rerun over the same OUT (or a run split over two
        # processes, --runs) evaluates each model once.
        cached = out / "evals" / (Path(spec).name if Path(spec).is_absolute() else spec).replace("/", "_")
        cached = cached.with_name(f"{Path(spec).parent.name}-{cached.name}.json")
        if cached.is_file():
            means = json.loads(cached.read_text())
            print(f"greedy eval of {spec} (kept): {json.dumps(means)}", flush=True)
            return means
        start = time.perf_counter()
        model, tokenizer = trl_engine.load_policy(spec)
        means, example = greedy_eval(evaluator, model, tokenizer, held_out, args.max_length)
        print(f"greedy eval of {spec}: {json.dumps(means)} ({time.perf_counter() - start:.0f} s)", flush=True)
        print(f"  first held-out answer: {example!r}", flush=True)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(means))
        return means

    timings: dict[str, float] = {}
    results: dict[str, Any] = {}
    if not args.skip_overhead:
        start = time.perf_counter()
        results.update(overhead(args, train_inputs, out))
        timings["overhead_s"] = time.perf_counter() - start
        print(f"overhead: {json.dumps(results)} ({timings['overhead_s']:.0f} s)", flush=True)
    if args.overhead_only:
        print(f"RESULT overhead={results['overhead']:.3f}")
        return
    missing = {"reward": float("nan")}
    base = missing
    if not args.skip_base:
        start = time.perf_counter()
        base = evaluate("smollm2")
        timings["eval_s"] = time.perf_counter() - start
    first = "smollm2"
    if args.warm_start:
        used = args.steps * args.batch
        start = time.perf_counter()
        first = str(out / "warm-start")
        if not (out / "warm-start" / "config.json").is_file():  # a finished warm start in OUT is reused
            first = str(warm_start(args, train_inputs[used : used + args.warm_start], out))
        timings["warm_start_s"] = time.perf_counter() - start
    before = missing if args.no_eval else evaluate(first) if args.warm_start or args.skip_base else base
    histories: dict[str, list[dict[str, Any]]] = {}
    after: dict[str, dict[str, float]] = {}
    for name in args.runs.split(","):
        start = time.perf_counter()
        # A run whose checkpoint in OUT has all its steps resumes to nothing: its weights and logs are reused.
        model_dir, histories[name] = train(args, start=first, typed=name == "typed", prompts=prompts, out=out / name)
        timings[f"train_{name}_s"] = time.perf_counter() - start
        print(f"{name}: rewards per step {step_rewards(histories[name])} ({timings[f'train_{name}_s']:.0f} s)")
        after[name] = missing if args.no_eval else evaluate(model_dir)
    for name in ("outcome", "typed"):
        after.setdefault(name, missing)
        histories.setdefault(name, [])
    plot({name: step_rewards(h) for name, h in histories.items()}, plot_path)
    per_step = {name: step_seconds(h, args.steps) if h else float("nan") for name, h in histories.items()}
    (out / "result.json").write_text(
        json.dumps(
            {"base": base, "before": before, "after": after, "timings": timings, **results, "histories": histories},
            indent=1,
        )
    )
    print(f"timings: {json.dumps({k: round(v) for k, v in timings.items()})}; plot {plot_path}")
    print(
        f"RESULT reward_base={base['reward']:.4f} reward_before={before['reward']:.4f} "
        f"reward_after={after['outcome']['reward']:.4f} "
        f"typed_after={after['typed']['reward']:.4f} "
        f"steps={args.steps} s_per_step={per_step['outcome']:.1f} typed_s_per_step={per_step['typed']:.1f} "
        f"overhead={results.get('overhead', float('nan')):.3f}"
    )


if __name__ == "__main__":
    main()
