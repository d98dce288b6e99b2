"""Contract tests against OpenRLHF 0.11.2's own code on CPU: an ``execute`` result of our executor goes through
OpenRLHF's conversion into an experience (action mask = exactly the policy tokens, our per-step lists as
``info`` rows); the advantage patch applied to OpenRLHF's real ``compute_advantages_and_returns`` reproduces the
notes' fixtures (stock GRPO ±0.866; process-additive per step)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from evigraph.training import advantage_patch
from evigraph.training.advantages import AdvantageConfig
from evigraph.training.executor import GraphExecutor, RolloutConfig
from evigraph.training.samples import STEP_INDEX_KEY, STEP_VALUE_KEY, step_lists, steps_from_lists
from evigraph.training.scripted_engine import ScriptedEngine, ScriptedSamplingParams
from tests.training.openrlhf_real import import_experience_maker, import_samples_generator, parse_train_ppo_ray
from tests.training.test_executor import RLSEEK_REPLY, D, T

torch = pytest.importorskip("torch")


def test_our_execute_result_becomes_an_openrlhf_experience(qwen2_style_tokenizer: Any, monkeypatch: Any) -> None:
    executor = GraphExecutor(RolloutConfig(agent="rlseek", step_value="quote"))
    engine = ScriptedEngine(qwen2_style_tokenizer, [RLSEEK_REPLY])
    label = json.dumps({"input": {"task": "summary", "source": D, "response": T}, "gold": {"spans": [[57, 61]]}})
    response = asyncio.run(
        executor.execute("p", label, ScriptedSamplingParams(), 4096, qwen2_style_tokenizer, engine, images=None)
    )
    module = import_samples_generator(monkeypatch)
    generator = module.SamplesGenerator.__new__(module.SamplesGenerator)
    experience = generator._process_response_into_experience(response, max_len=4096)
    tokens = experience.sequences[0].tolist()
    assert tokens == response["observation_tokens"]
    masked = [tokens[t + 1] for t, m in enumerate(experience.action_mask[0].tolist()) if m]
    (start, end) = response["action_ranges"][0]
    assert masked == tokens[start:end]  # the policy turn, exactly; the prompt is masked out
    assert float(experience.rewards[0]) == pytest.approx(response["reward"])
    index_row, value_row = experience.info[STEP_INDEX_KEY][0].tolist(), experience.info[STEP_VALUE_KEY][0].tolist()
    assert len(index_row) == experience.action_mask.shape[1]  # aligned with the shifted action mask
    steps = steps_from_lists(index_row, value_row)
    assert all(experience.action_mask[0, a:b].all() for a, b, _ in steps)  # steps lie inside the action
    assert [round(v, 6) for _, _, v in steps] == [0.0, round(-1 / 3, 6)]
    assert float(experience.info["rlseek/final"][0]) == pytest.approx(response["reward"])


def _notes_experiences(module: Any, *, dense: bool) -> list[Any]:
    """The notes' fixture as OpenRLHF experiences: one prompt, 4 samples, outcomes 1, 0, 1, 0, steps
    (valid +0.1, verdict 0), (valid, repeated -0.1, verdict), (malformed -0.2, verdict), (verdict)."""
    layouts = [([2, 3], [0.1, 0.0], 1.0), ([2, 2, 3], [0.1, -0.1, 0.0], 0.0), ([3, 2], [-0.2, 0.0], 1.0),
               ([4], [0.0], 0.0)]  # fmt: skip
    experiences = []
    for index, (lengths, values, outcome) in enumerate(layouts):
        sequence_ranges, position = [], 3  # three prompt tokens
        for length in lengths:
            sequence_ranges.append((position, position + length))
            position += length + 1  # one environment token after each action
        mask = torch.zeros(1, 15, dtype=torch.bool)
        for a, b in sequence_ranges:
            mask[0, a - 1 : b - 1] = True  # OpenRLHF's shift by one
        info = {}
        if dense:
            rows = step_lists(list(zip(sequence_ranges, values, strict=True)), sequence_length=16, max_length=16)
            info = {STEP_INDEX_KEY: torch.tensor([rows[0]]), STEP_VALUE_KEY: torch.tensor([rows[1]])}
        experiences.append(
            module.Experience(
                action_mask=mask,
                rewards=torch.tensor([outcome]),
                index=[index],
                info=info,
                kl=torch.zeros(1, 15),
            )
        )
    return experiences


def _maker(module: Any, args: Any) -> Any:
    maker = module.RemoteExperienceMaker.__new__(module.RemoteExperienceMaker)
    maker.strategy = SimpleNamespace(args=args)
    maker.advantage_estimator = args.algo.advantage.estimator
    maker.kl_ctl = SimpleNamespace(value=0.0)
    return maker


def _per_step(experience: Any) -> list[float]:
    mask = experience.action_mask[0].tolist()
    values, previous = [], False
    for t, m in enumerate(mask):
        if m and not previous:
            values.append(round(float(experience.advantages[0, t]), 3))
        previous = bool(m)
    return values


def test_the_patch_on_openrlhfs_real_advantage_code_reproduces_the_fixtures(monkeypatch: Any, tmp_path: Any) -> None:
    from evigraph.cli.train import training_plan
    from tests.training.test_train_command import FIXTURE

    (stage,) = training_plan(
        "rlseek", model="m", data=FIXTURE, out=tmp_path, retriever_url=None,
        overrides=["openrlhf.rollout.n_samples_per_prompt=4"],
    )  # fmt: skip
    argv = stage.argv
    args = parse_train_ppo_ray(monkeypatch, argv[4:])  # OpenRLHF's real, fully validated args
    module = import_experience_maker(monkeypatch)
    stock = _maker(module, args).compute_advantages_and_returns(_notes_experiences(module, dense=True))
    assert [_per_step(e) for e in stock] == [[0.866] * 2, [-0.866] * 3, [0.866] * 2, [-0.866]]

    monkeypatch.setattr(advantage_patch, "_openrlhf_version", lambda: "0.11.2")
    original = module.RemoteExperienceMaker.compute_advantages_and_returns
    monkeypatch.setattr(module.RemoteExperienceMaker, "compute_advantages_and_returns", original)
    advantage_patch._patch(module, AdvantageConfig(mode="process_additive"))
    patched = _maker(module, args).compute_advantages_and_returns(_notes_experiences(module, dense=True))
    assert [_per_step(e) for e in patched] == [[2.127, 0.992], [-0.488, -1.623, -0.74], [-0.9, 0.992], [-0.74]]
    assert all(torch.equal(e.advantages, e.returns) for e in patched)
    # On prompt and environment tokens the patch changes nothing (the loss masks them anyway).
    for before, after in zip(stock, patched, strict=True):
        outside = ~after.action_mask[0]
        assert torch.equal(before.advantages[0][outside], after.advantages[0][outside])
