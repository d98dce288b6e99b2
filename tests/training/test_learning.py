"""GRPO through the TRL engine makes a policy better: the synthetic world at CI size (``world_job.SMALL``).

A 0.2M-parameter random policy warm-started (whole runs only, 400 steps, one thread) on demonstrations of the
world has learned the protocol but is sloppy when it samples: at temperature 1 its held-out Veri-R1 reward is
0.717. GRPO on Veri-R1's own reward (16 prompts x 8 samples a step, lr 3e-4, 8 steps) makes the policy it trains --
the sampling one -- earn more on claims it never saw: the yardstick is the held-out reward at the training
temperature, 120 claims x 4 samples with fixed seeds (the same draws for every model), i.e. GRPO's own objective
on held-out data.

The warm start is built once and kept (``tests/training/world_warm_start.py``, 690 KB): it is the same model on
every run, and building it took 60-90 s of the test's two minutes. The world, its corpus, its tokenizer and its
demonstrations are made here; a kept warm start built from another world fails the test, naming the script that
rebuilds it.

Why not greedy accuracy (the first version of this test): this warm start does not compare the value it read with
the claim's, so there is little accuracy to gain in a few steps, and greedy decoding hides what GRPO changes first.
Sampling is seeded per sample (``trl_rollout.episode_seed``), so this test gives the same numbers on every run of
one machine.

Measured (this 2-core machine, one thread, issue 29): reward gain after 8 steps +0.086, +0.069, +0.107 for GRPO
seeds 0, 1, 2. Broken trainers, GRPO seed 0: advantages with their sign flipped -0.675 (the policy collapses); the
environment mask inverted +0.000 (the loss lands on tokens whose advantage is 0: no gradient); every advantage one
token later is not told apart by the gain (every token of a run shares its advantage): the first step's advantages
and mask, checked token by token against plain arithmetic, fail for all three. ``MARGIN`` sits between.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from evigraph.agents.veri_r1 import world_job
from evigraph.agents.veri_r1.learning_job import GrpoSettings
from tests.training import world_warm_start

pytestmark = pytest.mark.java

MARGIN = 0.05
"""Held-out sampled-reward gain a working trainer clears and a broken one does not."""
STEPS = 8
SETTINGS = GrpoSettings(prompts_per_step=16, generations=8, lr=3e-4)
SAMPLES = 4
"""Runs per held-out claim at the training temperature."""


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> world_job.Prepared:
    return world_job.prepare(tmp_path_factory.mktemp("world"), world_job.SMALL)


def _expected_advantages(samples: list[Any], eps: float, group: int) -> dict[tuple[int, ...], list[float]]:
    """Stock GRPO's advantage of every completion token, by plain arithmetic: ``(r - mean) / (std + eps)`` over
    the sample's group of ``group`` (unbiased std), on its policy tokens; 0 on what the environment wrote."""
    expected = {}
    for start in range(0, len(samples), group):
        rewards = [s.outcome for s in samples[start : start + group]]
        mean = sum(rewards) / group
        std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (group - 1))
        for sample in samples[start : start + group]:
            value = (sample.outcome - mean) / (std + eps)
            expected[tuple(sample.completion_ids)] = [value * m for m in sample.rollout.action_mask]
    return expected


def test_grpo_raises_the_held_out_reward_of_the_policy_it_trains(
    prepared: world_job.Prepared, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also checks, on the run's first step, that the loss gets each token's own advantage and masks exactly
    the environment's tokens: a one-token shift of the advantages hardly changes what outcome GRPO learns here
    (every token of a run shares its advantage; measured +0.140 against +0.153), so the gain alone cannot see it."""
    import torch

    from evigraph.training import trl_engine

    first: dict[str, Any] = {}
    loss, rollout = trl_engine.AgentGRPOTrainer._compute_loss, trl_engine.GraphRollout.__call__

    def record_loss(trainer: Any, model: Any, inputs: dict[str, Any]) -> Any:
        first.setdefault("inputs", {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)})
        return loss(trainer, model, inputs)

    def record_rollout(self: Any, prompts: list[Any], trainer: Any) -> Any:
        output = rollout(self, prompts, trainer)
        first.setdefault("samples", list(self.last))
        return output

    monkeypatch.setattr(trl_engine.AgentGRPOTrainer, "_compute_loss", record_loss)
    monkeypatch.setattr(trl_engine.GraphRollout, "__call__", record_rollout)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the numbers above were measured with one thread; more threads round differently
    try:
        model, record = world_warm_start.load(prepared)  # built by world_job.warm_started; see that module
        model.eval()

        def score() -> world_job.Score:
            return world_job.evaluate(
                model, prepared.tokenizer, prepared, prepared.heldout, temperature=SETTINGS.temperature,
                samples=SAMPLES,
            )  # fmt: skip

        before = score()
        print(f"warm start {record['warm_start']}; before {before}")
        stage = world_job.grpo(
            "outcome", prepared, model, out=tmp_path / "run", steps=STEPS, seed=0, overrides=SETTINGS.overrides()
        )
        assert stage.global_step == STEPS
        model.eval()
        after = score()
        print(f"after {after}")
    finally:
        torch.set_num_threads(threads)
    inputs, samples = first["inputs"], first["samples"]
    eps = world_job.train_config("outcome", prepared, SETTINGS.overrides()).advantage.eps
    expected = _expected_advantages(samples, eps, SETTINGS.generations)
    checked = 0
    for row in range(inputs["completion_ids"].shape[0]):
        length = int(inputs["completion_mask"][row].sum())
        key = tuple(inputs["completion_ids"][row, :length].tolist())
        values = expected[key]
        assert inputs["advantages"][row, :length].tolist() == pytest.approx(values, abs=1e-5), row
        mask = next(s.rollout.action_mask for s in samples if tuple(s.completion_ids) == key)
        assert inputs["tool_mask"][row, :length].tolist() == list(mask), row
        checked += any(values)
    assert checked > 0, "no sample had a non-zero advantage on the first step"
    assert after.reward - before.reward > MARGIN, (before, after)


def test_every_two_hop_claim_is_shown_both_ways_with_the_decision_weighted(prepared: world_job.Prepared) -> None:
    share = prepared.run.second_hop_share
    decode = prepared.tokenizer.decode
    two_hop = sum(1 for c in prepared.train if c.hops == 2)
    decisions = []
    for ids, weights in prepared.demonstrations:
        fractional = [i for i, w in enumerate(weights) if 0 < w < 1]
        assert set(weights) - {0.0, 1.0, share, 1 - share} == set()
        if fractional:
            (at,) = fractional
            decisions.append((decode([ids[at]]), weights[at]))
    assert sorted(set(decisions)) == [("<answer", 1 - share), ("<search", share)]
    # A claim whose search does not return what its replies assume gives no demonstration (rare: a name BM25
    # ranks below another's document).
    assert 0.95 * 2 * two_hop <= len(decisions) <= 2 * two_hop and len(decisions) % 2 == 0
    assert 0.95 * len(prepared.train) <= len(prepared.final_turns) <= len(prepared.train)


def test_the_warm_start_runs_both_phases_on_the_demonstrations(prepared: world_job.Prepared) -> None:
    """``warm_started`` itself (the kept model above skips it): both phases run, on the final turns first, and the
    reported steps and losses are those of the phases. A few steps only: what it learns is measured by
    ``benchmarks/learning_world.py``."""
    import torch

    run = prepared.run.model_copy(update={"final_turn_steps": 3, "final_turn_batch": 4, "warm_steps": 2})
    seen: list[int] = []
    model, warm = world_job.warm_started(
        prepared.model_copy(update={"run": run}), seed=0, size=world_job.SMALL_POLICY,
        on_step=lambda step, _loss: seen.append(step),
    )  # fmt: skip
    assert seen == [0, 1, 2, 3, 4]
    assert warm.steps == 5 and math.isfinite(warm.first_loss) and math.isfinite(warm.last_loss)
    assert not model.training
    with torch.no_grad():
        ids = torch.tensor([prepared.demonstrations[0][0]])
        assert model(input_ids=ids).logits.shape == (1, ids.shape[1], len(prepared.tokenizer))
