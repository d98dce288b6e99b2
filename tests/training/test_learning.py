"""GRPO through the TRL engine makes a policy better: the synthetic world at CI size (``world_job.SMALL``).

A 0.1M-parameter random policy is warm-started (whole runs only, 400 steps) on demonstrations that show every
2-hop claim both ways, the second search weighted 0.45 against answering NOT ENOUGH INFO after one search: greedy
decoding never searches again, sampling often does. Veri-R1's reward pays nothing for that label on a 2-hop
claim, so a working trainer can raise held-out accuracy within 20 steps (the label after a second search, or a
guess after one, is right half the time: this warm start does not compare).

**Not yet a CI test: it is flaky.** The warm start is deterministic (before: 0.233 on 120 claims, every run), the
GRPO run is not (concurrent episodes batch differently from run to run). Measured on this 2-core machine, after
20 steps: 4 prompts x 8 samples, lr 5e-4: 0.467, 0.467 (pass) and 0.233 (fail); 8 x 8, lr 5e-4: 0.433 and 0.250;
8 x 8, lr 1e-3: 0.500 and 0.225. When it learns, it fails for each of three broken trainers (4 x 8, lr 5e-4, one
run each): advantages with their sign flipped 0.000 (the policy collapses); the environment mask inverted (the
loss on the entries the search returned instead of the policy's tokens) 0.233, unchanged; every advantage shifted
one token later 0.217. It runs with ``EVIGRAPH_LEARNING_TEST=1`` (about 100 s) until a setting learns every time.
Accuracy, not Veri-R1's reward, is the yardstick: the reward also scores evidence and format, and a guessed label
moves it less than the noise of 120 claims (1.075 -> 0.989 in a passing run).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evigraph.agents.veri_r1 import world_job
from evigraph.agents.veri_r1.learning_job import GrpoSettings

pytestmark = pytest.mark.java

MARGIN = 0.15
"""Held-out accuracy gain a working trainer clears and a broken one does not."""
STEPS = 20
SETTINGS = GrpoSettings(prompts_per_step=4, generations=8, lr=5e-4)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> world_job.Prepared:
    return world_job.prepare(tmp_path_factory.mktemp("world"), world_job.SMALL)


@pytest.mark.skipif(
    os.environ.get("EVIGRAPH_LEARNING_TEST") != "1", reason="flaky at CI size (see the module docstring)"
)
def test_grpo_raises_the_held_out_accuracy(prepared: world_job.Prepared, tmp_path: Path) -> None:
    import torch

    torch.set_num_threads(2)
    model, warm = world_job.warm_started(prepared, seed=0, size=world_job.SMALL_POLICY)
    assert warm.last_loss < 0.5 * warm.first_loss
    heldout = prepared.heldout
    before = world_job.evaluate(model, prepared.tokenizer, prepared, heldout)
    print(f"warm start {warm}; before {before}")
    stage = world_job.grpo(
        "outcome",
        prepared,
        model,
        out=tmp_path / "run",
        steps=STEPS,
        seed=0,
        overrides=SETTINGS.overrides(),
    )
    assert stage.global_step == STEPS
    model.eval()
    after = world_job.evaluate(model, prepared.tokenizer, prepared, heldout)
    print(f"after {after}")
    assert after.accuracy - before.accuracy > MARGIN, (before, after)


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
