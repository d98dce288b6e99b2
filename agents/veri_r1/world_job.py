"""Veri-R1 learning in the synthetic world: everything a learning run needs, from the world to the held-out score.

:func:`prepare` writes a world (:mod:`evigraph.corpora.world`), builds its documents into a real BM25 corpus,
trains a tokenizer on the world's texts and renders the warm start's demonstration episodes through Veri-R1's
own online graph (brief prompt, at most two searches, one entry per search) with scripted replies
(:func:`evigraph.agents.veri_r1.world.demonstration`), so every token of a demonstration is exactly what a
rollout of that graph would hold. :func:`warm_started` trains a small random policy on them
(:mod:`evigraph.training.tiny_policy`): every 1-hop claim checked, most 2-hop claims answered lazily after one
search. :func:`probe` checks that the warm start's answer depends on what it read; :func:`evaluate` runs the graph
greedily on held-out claims; :func:`grpo` trains through the TRL engine with outcome-only GRPO or with StepGap's
typed per-step reward from :class:`~evigraph.agents.veri_r1.world.WorldChecker`.

A job module (``docs/architecture.md``): it builds graphs and calls the trainer. ``benchmarks/learning_world.py``
and the CI learning test drive it.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evigraph.agents.veri_r1.world import demonstration
from evigraph.corpora.world import Claim, World, WorldConfig, build_world, write_world

__all__ = (
    "AGENT_CONFIG",
    "Prepared",
    "Score",
    "WorldRun",
    "evaluate",
    "grpo",
    "prepare",
    "probe",
    "train_config",
    "warm_started",
)

AGENT_CONFIG: dict[str, Any] = {
    "prompt": "brief",
    "max_searches": 2,
    "top_k": 1,
    "max_new_tokens": 40,
    "max_information_tokens": 64,
    "constrained": False,
    "demonstration": False,
    "logprobs": False,
}
"""Veri-R1's online graph as the world runs it: two searches at most, one entry each, short turns."""
MAX_LENGTH = 512


class WorldRun(BaseModel):
    """The sizes of one world experiment (the benchmark's and the CI test's differ only here)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    world: WorldConfig = WorldConfig()
    heldout_people: int = 200
    train_claims_per_person: int = 4
    heldout_claims_per_person: int = 4
    second_hop_share: float = Field(0.15, ge=0, le=1)
    """Share of 2-hop demonstrations that take the second search (the rest answer lazily)."""
    warm_steps: int = 400
    warm_lr: float = 3e-3
    warm_batch: int = 16
    label_weight: float = 10.0
    """Loss weight of the label words in the warm start (one token among dozens of copied ones)."""
    vocab_size: int = 1024


class Prepared(BaseModel):
    """A prepared world: its files, its corpus and its demonstration episodes."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run: WorldRun
    world: World
    paths: dict[str, Path]
    corpus: Path
    train: list[Claim]
    heldout: list[Claim]
    tokenizer: Any
    demonstrations: list[tuple[list[int], list[int]]]


def _claims(path: Path) -> list[Claim]:
    return [Claim.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _graph(search: Any) -> Any:
    from evigraph.agents.veri_r1.schemas import VeriR1Config
    from evigraph.graphs.veri_r1 import build_veri_r1_graph

    return build_veri_r1_graph(None, search, VeriR1Config.model_validate(AGENT_CONFIG))


def _search(corpus: Path) -> Any:
    from evigraph.tools.search import open_search

    return open_search(corpus=str(corpus))


def _texts(world: World, claims: list[Claim]) -> list[str]:
    """What the tokenizer is trained on: documents, the prompt, demonstrations and the environment's notes."""
    from evigraph.agents.veri_r1.prompts import answer_now_note, duplicate_query_note, online_prompt

    texts = [d["text"] for d in world.documents()]
    rng = random.Random(0)
    for claim in claims:
        texts.append(online_prompt(claim.claim, max_searches=2, brief=True))
        texts.extend(demonstration(claim, world, second_hop=rng.random() < 0.5))
    texts += [answer_now_note(), duplicate_query_note(1), "<information>\n[[Name]]: text\n</information>"]
    return texts * 2


async def _demonstration_episodes(
    prepared_world: World, claims: list[Claim], tokenizer: Any, search: Any, *, share: float, seed: int
) -> list[tuple[list[int], list[int]] | None]:
    """Each claim's demonstration episode ``(token_ids, policy_mask)``, in order; ``None`` where the search did not
    return what the replies assume."""
    from evigraph.generators.scripted import ScriptedGenerator
    from evigraph.graphs.context import RunContext

    graph = _graph(search)
    rng = random.Random(seed)

    async def one(claim: Claim, second_hop: bool) -> tuple[list[int], list[int]] | None:
        replies = demonstration(claim, prepared_world, second_hop=second_hop)
        generator = ScriptedGenerator(replies, tokenizer=tokenizer, name="demonstration")
        context = RunContext(generator=generator, strict_tokens=True, max_sequence_tokens=MAX_LENGTH)
        state = await graph.ainvoke({"claim": claim.claim, "id": claim.id}, context=context)
        trajectory = state["trajectory"]
        shown = state["output"].retrieved_ids
        if trajectory.error is not None or shown != claim.path[: len(shown)] or generator.remaining:
            return None  # the search did not return what the replies assume: not a clean demonstration
        ids, ranges = trajectory.token_ids(), trajectory.action_ranges()
        mask = [0] * len(ids)
        for start, end in ranges:
            mask[start:end] = [1] * (end - start)
        return ids, mask

    return list(await asyncio.gather(*(one(c, c.hops == 1 or rng.random() < share) for c in claims)))


def prepare(out: Path, run: WorldRun | None = None) -> Prepared:
    """Write the world, build its corpus, train its tokenizer and render the demonstrations (see the module
    docstring). Reuses the corpus when ``out`` already holds an up-to-date build."""
    from evigraph.corpora.build import build_corpus
    from evigraph.training.tiny_policy import train_tokenizer

    run = run or WorldRun()
    world = build_world(run.world)
    paths = write_world(
        world,
        out,
        heldout_people=run.heldout_people,
        train_claims_per_person=run.train_claims_per_person,
        heldout_claims_per_person=run.heldout_claims_per_person,
    )
    corpus = out / "corpus"
    build_corpus(paths["documents"], corpus)
    train, heldout = _claims(paths["train"]), _claims(paths["heldout"])
    tokenizer = train_tokenizer(_texts(world, train), vocab_size=run.vocab_size)
    search = _search(corpus)
    rendered = asyncio.run(
        _demonstration_episodes(world, train, tokenizer, search, share=run.second_hop_share, seed=run.world.seed)
    )
    demos = [episode for episode in rendered if episode is not None]
    return Prepared(
        run=run,
        world=world,
        paths=paths,
        corpus=corpus,
        train=train,
        heldout=heldout,
        tokenizer=tokenizer,
        demonstrations=demos,
    )


def warm_started(prepared: Prepared, *, seed: int, size: Any = None, on_step: Any = None) -> tuple[Any, Any]:
    """A fresh random policy (``seed``) trained on the demonstrations: ``(model, WarmStart)``."""
    from evigraph.training.tiny_policy import tiny_policy, warm_start

    model = tiny_policy(prepared.tokenizer, size, seed=seed)
    tokenizer = prepared.tokenizer
    labels = {tokenizer.encode(f" {word}", add_special_tokens=False)[0] for word in ("SUPPORT", "REFUTE", "NOT")}
    done = warm_start(
        model,
        prepared.demonstrations,
        steps=prepared.run.warm_steps,
        lr=prepared.run.warm_lr,
        batch_size=prepared.run.warm_batch,
        seed=seed,
        pad_id=tokenizer.pad_token_id,
        weights=dict.fromkeys(labels, prepared.run.label_weight),
        on_step=on_step,
    )
    return model, done


class Score(BaseModel):
    """Greedy results on a set of claims."""

    n: int
    accuracy: float
    reward: float
    accuracy_1hop: float
    accuracy_2hop: float
    second_hop_rate: float
    """Share of 2-hop claims on which the run searched the firm."""
    searches: float
    """Mean searches per run."""


def evaluate(model: Any, tokenizer: Any, prepared: Prepared, claims: list[Claim]) -> Score:
    """Run the graph greedily (temperature 0) on ``claims`` with ``model``; Veri-R1's ``final`` reward."""
    from evigraph.generators.transformers import TransformersGenerator
    from evigraph.generators.types import SamplingParams
    from evigraph.graphs.context import RunContext
    from evigraph.registry import get_agent

    reward = get_agent("veri-r1").load().reward(None)
    graph = _graph(_search(prepared.corpus))
    generator = TransformersGenerator.from_model(model, tokenizer, max_batch_size=128, name="policy")
    context = RunContext(
        generator=generator,
        sampling=SamplingParams(temperature=0.0),
        strict_tokens=True,
        max_sequence_tokens=MAX_LENGTH,
    )

    async def all_runs() -> list[Any]:
        inputs = [{"claim": c.claim, "id": c.id, "gold": {"label": c.label, "evidence": c.evidence}} for c in claims]
        return await asyncio.gather(*(graph.ainvoke(i, context=context) for i in inputs))

    try:
        states = asyncio.run(all_runs())
    finally:
        generator.close()
    right, rewards, hops2, searched = [], [], [], []
    for claim, state in zip(claims, states, strict=True):
        output = state["output"]
        right.append(output.label == claim.label)
        target = reward.gold_schema.model_validate({"label": claim.label, "evidence": claim.evidence})
        rewards.append(reward(state["trajectory"], target).value)
        searched.append(output.n_searches)
        if claim.hops == 2:
            hops2.append(claim.path[1] in output.retrieved_ids)

    def share(values: list[bool]) -> float:
        return sum(values) / len(values) if values else float("nan")

    return Score(
        n=len(claims),
        accuracy=share(right),
        reward=sum(rewards) / len(rewards),
        accuracy_1hop=share([r for r, c in zip(right, claims, strict=False) if c.hops == 1]),
        accuracy_2hop=share([r for r, c in zip(right, claims, strict=False) if c.hops == 2]),
        second_hop_rate=share(hops2),
        searches=sum(searched) / len(searched),
    )


def probe(model: Any, tokenizer: Any, prepared: Prepared, claims: list[Claim]) -> dict[str, float]:
    """Does the answer depend on what was read? On 1-hop claims, the gold run's tokens up to its label (rendered by
    the graph itself, so exactly what a rollout holds), then the model's probability of ``SUPPORT`` against
    ``REFUTE`` as the label, averaged over true and over false claims: a policy that ignores the retrieved text
    gives the same number for both."""
    import torch

    support = tokenizer.encode(" SUPPORT", add_special_tokens=False)
    refute = tokenizer.encode(" REFUTE", add_special_tokens=False)
    if len(support) != 1 or len(refute) != 1:
        raise ValueError("the probe needs SUPPORT and REFUTE to be one token each")
    one_hop = [c for c in claims if c.hops == 1][:100]
    episodes = asyncio.run(
        _demonstration_episodes(prepared.world, one_hop, tokenizer, _search(prepared.corpus), share=1.0, seed=0)
    )
    sums: dict[str, list[float]] = {"SUPPORT": [], "REFUTE": []}
    for claim, episode in zip(one_hop, episodes, strict=True):
        if episode is None:
            continue
        ids, mask = episode
        labels = [i for i, (t, m) in enumerate(zip(ids, mask, strict=True)) if m and t in (support[0], refute[0])]
        if not labels:
            continue
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids[: labels[-1]]])).logits[0, -1]
        pair = torch.softmax(logits[[support[0], refute[0]]], dim=-1)
        sums[claim.label].append(float(pair[0]))
    return {f"p_support_given_{k.lower()}": sum(v) / len(v) for k, v in sums.items() if v}


def train_config(mode: Literal["outcome", "typed"], prepared: Prepared, overrides: list[str]) -> Any:
    """The TRL run's training config: Veri-R1's shipped config with the world's graph settings, and for
    ``typed`` StepGap's typed reward from the world's rule checker as a per-step process term."""
    from evigraph.training.config import load_train_config

    sets = [
        "engine=trl",
        f"agent_config={json.dumps(AGENT_CONFIG)}",
        f"trl.max_length={MAX_LENGTH}",
    ]
    if mode == "typed":
        term = {
            "name": "gap",
            "adapter": "veri-r1->stepgap",
            "reward": "typed",
            "options": {"preset": "typed_shape", "lam": 1.0},
            "value": "bracket",
            "em_from": "label",
            "weight": 1.0,
            "checker": "evigraph.agents.veri_r1.world:world_checker",
            "checker_options": {"world": str(prepared.paths["world"])},
        }
        sets += [
            f"mix={json.dumps({'outcome_weight': 1.0, 'process': [term]})}",
            "advantage.mode=process_additive",
        ]
    return load_train_config("veri-r1", [*sets, *overrides])


def grpo(
    mode: Literal["outcome", "typed"],
    prepared: Prepared,
    model: Any,
    *,
    out: Path,
    steps: int,
    seed: int,
    overrides: Sequence[str] = (),
    callbacks: Sequence[Any] = (),
) -> Any:
    """Train ``model`` in place with GRPO through the TRL engine for ``steps`` optimiser steps; returns the stage
    result (its ``log_history`` holds the per-step rewards)."""
    from evigraph.config import settings_for
    from evigraph.training.data import write_prompt_dataset
    from evigraph.training.executor import GraphExecutor, RolloutConfig
    from evigraph.training.trl_engine import train_stage

    config = train_config(mode, prepared, [f"curriculum_seed={seed}", *overrides])
    out.mkdir(parents=True, exist_ok=True)
    prompts = out / "prompts.jsonl"
    inputs = [
        {"claim": c.claim, "id": c.id, "gold": {"label": c.label, "evidence": c.evidence}} for c in prepared.train
    ]
    random.Random(seed).shuffle(inputs)
    write_prompt_dataset("veri-r1", inputs, prompts)
    rollout = settings_for(RolloutConfig, config).model_copy(update={"corpus": str(prepared.corpus)})
    return train_stage(
        config,
        GraphExecutor(rollout),
        prompts=prompts,
        model=(model, prepared.tokenizer),
        out=out,
        max_steps=steps,
        callbacks=list(callbacks),
    )


SMALL = WorldRun(
    world=WorldConfig(people=400, firms=12, towns=6),
    heldout_people=60,
    train_claims_per_person=4,
    warm_steps=300,
)
"""The CI learning test's world: smaller, the same shape."""


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
