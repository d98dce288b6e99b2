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
from evigraph.event_loop import run_sync
from evigraph.training.tiny_policy import PolicySize

__all__ = (
    "AGENT_CONFIG",
    "Prepared",
    "Score",
    "WorldRun",
    "evaluate",
    "final_turn",
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

    world: WorldConfig = WorldConfig(people=2000, firms=12, towns=6)
    """Many people, one training claim each: a name seen in one demonstration cannot be memorised, so the warm
    start learns to copy names from the claim into its query (with 400 people and 4 claims each it memorised them
    and searched the wrong person on 56% of held-out 1-hop claims, measured)."""
    heldout_people: int = 60
    train_claims_per_person: int = 1
    heldout_claims_per_person: int = 4
    second_hop_share: float = Field(0.3, ge=0, le=1)
    """How often the warm start takes the second search on a 2-hop claim (the rest answer lazily); every 2-hop claim
    is also demonstrated with the second hop, the decision to take it weighted down to this share (measured: with
    only 15% of 2-hop demonstrations taking it, a sampled second hop searched a wrong firm and ended NOT ENOUGH
    INFO, so it never paid). After the warm start's steps the decision sits below the share (0.15 gave P = 0.06 at
    the decision), and greedy decoding never takes it."""
    final_turn_steps: int = 1500
    """Warm-start steps on the demonstrations' final turns alone (the think that compares and the answer), first
    (with 1,000 one seed in three compared poorly, probe 0.75 / 0.16; with 1,500 all three gave 0.98 or more)."""
    final_turn_batch: int = 128
    warm_steps: int = 450
    """Warm-start steps on whole demonstration episodes, after the final turns (held-out 1-hop accuracy 0.87 after
    300, 0.95 after 450, measured)."""
    warm_lr: float = 1e-3
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
    demonstrations: list[Episode]
    final_turns: list[Episode]
    """The last turn of each run that checks its claim (a think comparing what was read with what the claim says,
    and the label), for the warm start's first phase."""


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


Episode = tuple[list[int], list[float]]
"""A demonstration as the warm start trains on it: token ids and a loss weight per token (0: not the policy's)."""


async def _demonstration_episodes(
    prepared_world: World, claims: list[Claim], tokenizer: Any, search: Any, *, share: float
) -> list[list[Episode]]:
    """Each claim's demonstration episodes, in order, the run that checks the claim first (empty where the search
    did not return what the replies assume). A 1-hop claim gives one. A 2-hop claim gives the full run and the
    lazy one (``share`` 1 or 0: only one of them), their first differing token -- the decision to search again or
    to answer -- weighted ``share`` and ``1 - share``: the warm start takes the second hop with probability
    ``share`` but knows every other token of it, so a second hop taken during GRPO is carried out and can pay."""
    from evigraph.generators.scripted import ScriptedGenerator
    from evigraph.graphs.kit.context import RunContext

    graph = _graph(search)

    async def one(claim: Claim, second_hop: bool) -> Episode | None:
        replies = demonstration(claim, prepared_world, second_hop=second_hop)
        generator = ScriptedGenerator(replies, tokenizer=tokenizer, name="demonstration")
        context = RunContext(generator=generator, strict_tokens=True, max_sequence_tokens=MAX_LENGTH)
        state = await graph.ainvoke({"claim": claim.claim, "id": claim.id}, context=context)
        trajectory = state["trajectory"]
        shown = state["output"].retrieved_ids
        if trajectory.error is not None or shown != claim.path[: len(shown)] or generator.remaining:
            return None  # the search did not return what the replies assume: not a clean demonstration
        ids, ranges = trajectory.token_ids(), trajectory.action_ranges()
        weights = [0.0] * len(ids)
        for start, end in ranges:
            weights[start:end] = [1.0] * (end - start)
        return ids, weights

    async def episodes(claim: Claim) -> list[Episode]:
        full = await one(claim, True) if claim.hops == 1 or share > 0 else None
        lazy = await one(claim, False) if claim.hops == 2 and share < 1 else None
        if full is None or lazy is None:
            return [e for e in (full, lazy) if e is not None]
        decision = next(i for i, (a, b) in enumerate(zip(lazy[0], full[0], strict=False)) if a != b)
        full[1][decision], lazy[1][decision] = share, 1 - share
        return [full, lazy]

    return list(await asyncio.gather(*(episodes(c) for c in claims)))


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
    rendered = run_sync(lambda: _demonstration_episodes(world, train, tokenizer, search, share=run.second_hop_share))
    demos = [episode for episodes in rendered for episode in episodes]
    checks = [final_turn(episodes[0]) for claim, episodes in zip(train, rendered, strict=True) if episodes
              and (claim.hops == 1 or run.second_hop_share > 0)]  # fmt: skip
    return Prepared(
        run=run,
        world=world,
        paths=paths,
        corpus=corpus,
        train=train,
        heldout=heldout,
        tokenizer=tokenizer,
        demonstrations=demos,
        final_turns=checks,
    )


def final_turn(episode: Episode) -> Episode:
    """An episode's last policy turn alone (its last run of policy tokens), every token a target."""
    ids, weights = episode
    end = max((i for i, w in enumerate(weights) if w > 0), default=-1) + 1
    start = end
    while start > 0 and weights[start - 1] > 0:
        start -= 1
    return ids[start:end], [1.0] * (end - start)


def warm_started(prepared: Prepared, *, seed: int, size: Any = None, on_step: Any = None) -> tuple[Any, Any]:
    """A fresh random policy (``seed``) trained on the demonstrations: ``(model, WarmStart)``.

    Two phases. First the final turns alone, in large batches: whether a claim holds depends on two words *together*
    (the value read and the value stated; either alone says nothing about the label), so the gradient has no first
    step towards the comparison and a model trained on whole episodes (a few labels per batch among thousands of
    tokens) sits at chance for thousands of steps, its label independent of what it read (measured: P(SUPPORT)
    0.448 after a true and after a false claim, 600 steps). On final turns, 128 labels a step, the comparison forms
    within about 750 steps. Then whole episodes, where the plan, the searches and the copying are learned and the
    comparison carries over to its place after the retrieved entry (P(SUPPORT) 0.96 / 0.02 after 100 steps).
    """
    from evigraph.training.tiny_policy import WarmStart, tiny_policy, warm_start

    model = tiny_policy(prepared.tokenizer, size, seed=seed)
    tokenizer = prepared.tokenizer
    labels = {tokenizer.encode(f" {word}", add_special_tokens=False)[0] for word in ("SUPPORT", "REFUTE", "NOT")}
    run = prepared.run
    common = {"lr": run.warm_lr, "pad_id": tokenizer.pad_token_id}
    turns = WarmStart(steps=0, first_loss=float("nan"), last_loss=float("nan"), seconds=0.0)
    if run.final_turn_steps:
        turns = warm_start(
            model,
            prepared.final_turns,
            steps=run.final_turn_steps,
            batch_size=run.final_turn_batch,
            seed=seed,
            on_step=on_step,
            **common,
        )
        model.train()
    whole = warm_start(
        model,
        prepared.demonstrations,
        steps=run.warm_steps,
        batch_size=run.warm_batch,
        seed=seed + 1,
        weights=dict.fromkeys(labels, run.label_weight),
        on_step=None if on_step is None else lambda step, loss: on_step(run.final_turn_steps + step, loss),
        **common,
    )
    done = WarmStart(
        steps=turns.steps + whole.steps,
        first_loss=turns.first_loss if run.final_turn_steps else whole.first_loss,
        last_loss=whole.last_loss,
        seconds=round(turns.seconds + whole.seconds, 2),
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


def evaluate(
    model: Any, tokenizer: Any, prepared: Prepared, claims: list[Claim], *, temperature: float = 0.0, samples: int = 1
) -> Score:
    """Run the graph on ``claims`` with ``model``; Veri-R1's ``final`` reward. Greedy by default; with a
    ``temperature`` each claim runs ``samples`` times, run ``k`` of claim ``i`` seeded ``i * samples + k`` (the same
    draws for every model), and the scores are means over all runs."""
    from evigraph.generators.transformers import TransformersGenerator
    from evigraph.generators.types import SamplingParams
    from evigraph.graphs.kit.context import RunContext
    from evigraph.registry import get_agent

    reward = get_agent("veri-r1").load().reward(None)
    graph = _graph(_search(prepared.corpus))
    generator = TransformersGenerator.from_model(model, tokenizer, max_batch_size=128, name="policy")
    runs = [c for c in claims for _ in range(samples if temperature > 0 else 1)]

    def context(seed: int) -> RunContext:
        sampling = SamplingParams(temperature=temperature, seed=seed)
        return RunContext(generator=generator, sampling=sampling, strict_tokens=True, max_sequence_tokens=MAX_LENGTH)

    async def all_runs() -> list[Any]:
        inputs = [{"claim": c.claim, "id": c.id, "gold": {"label": c.label, "evidence": c.evidence}} for c in runs]
        return await asyncio.gather(*(graph.ainvoke(x, context=context(i)) for i, x in enumerate(inputs)))

    try:
        states = run_sync(all_runs)
    finally:
        generator.close()
    right, rewards, hops2, searched = [], [], [], []
    for claim, state in zip(runs, states, strict=True):
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
        n=len(runs),
        accuracy=share(right),
        reward=sum(rewards) / len(rewards),
        accuracy_1hop=share([r for r, c in zip(right, runs, strict=False) if c.hops == 1]),
        accuracy_2hop=share([r for r, c in zip(right, runs, strict=False) if c.hops == 2]),
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
    episodes = run_sync(
        lambda: _demonstration_episodes(prepared.world, one_hop, tokenizer, _search(prepared.corpus), share=1.0)
    )
    sums: dict[str, list[float]] = {"SUPPORT": [], "REFUTE": []}
    for claim, rendered in zip(one_hop, episodes, strict=True):
        if not rendered:
            continue
        ids, mask = rendered[0]
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
        # The shipped config checkpoints activations (a 135M+ model's memory); a world policy has nothing to save
        # and recomputing its forward costs ~10% a step (the weights after 3 steps are identical either way).
        "trl.args.activation_checkpointing=false",
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
    world=WorldConfig(people=430, firms=8, towns=4),
    heldout_people=30,
    train_claims_per_person=1,
    final_turn_steps=0,
    second_hop_share=0.45,
    warm_steps=400,
    warm_lr=3e-3,
)
"""The learning test's world (``tests/training/test_learning.py``): the same shape, smaller, and a warm start without
the final-turn phase (400 whole-run steps, about 50 s on one thread; the test keeps it built): it knows the protocol
but samples sloppily (held-out reward 0.72 at temperature 1), which is what 8 GRPO steps can measurably improve."""
SMALL_POLICY = PolicySize(hidden=64, layers=2, heads=4, intermediate=192)
"""The learning test's policy: half the benchmark's width, two layers (0.17M parameters)."""
