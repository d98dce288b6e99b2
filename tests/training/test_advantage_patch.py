"""The trainer-side patch: advantages move by ``ours - stock`` on OpenRLHF-shaped experiences (torch tensors,
per-step lists in ``info``), reproducing the notes' §6.3 fixture; grpo leaves them untouched; the wrapper is
idempotent, refuses other estimators, and the lazy import hook patches the module only when it is imported."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evigraph.errors import ConfigError
from evigraph.training import advantage_patch
from evigraph.training.advantages import AdvantageConfig, Rollout, advantages
from evigraph.training.samples import STEP_INDEX_KEY, STEP_VALUE_KEY

torch = pytest.importorskip("torch")


def _experience(rollouts: list[Rollout], indices: list[int]) -> Any:
    """An experience holding ``rollouts`` with stock GRPO advantages already set (what OpenRLHF computed)."""
    width = len(rollouts[0].action_mask)
    step_index = torch.zeros(len(rollouts), width)
    step_value = torch.zeros(len(rollouts), width)
    for j, rollout in enumerate(rollouts):
        for k, (start, end, value) in enumerate(rollout.steps):
            step_index[j, start:end] = k + 1
            step_value[j, start:end] = value
    return SimpleNamespace(
        index=indices,
        rewards=torch.tensor([r.outcome for r in rollouts]),
        action_mask=torch.tensor([r.action_mask for r in rollouts]),
        info={STEP_INDEX_KEY: step_index, STEP_VALUE_KEY: step_value},
        advantages=None,
        returns=None,
    )


def _notes_batch() -> tuple[list[Rollout], list[Any]]:
    def sample(outcome: float, lengths: list[int], values: list[float]) -> Rollout:
        mask: list[int] = []
        steps = []
        for length, value in zip(lengths, values, strict=True):
            mask.append(0)
            steps.append((len(mask), len(mask) + length, value))
            mask.extend([1] * length)
        mask.extend([0] * (10 - len(mask)))  # right padding, as micro-batches are padded
        return Rollout(group=0, outcome=outcome, action_mask=tuple(mask), steps=tuple(steps))

    rollouts = [sample(1.0, [2, 3], [0.1, 0.0]), sample(0.0, [2, 2, 3], [0.1, -0.1, 0.0]),
                sample(1.0, [3, 2], [-0.2, 0.0]), sample(0.0, [4], [0.0])]  # fmt: skip
    # Two micro-batches, in shuffled order, as OpenRLHF hands them over.
    experiences = [_experience([rollouts[2], rollouts[0]], [2, 0]), _experience([rollouts[3], rollouts[1]], [3, 1])]
    stock = advantages(rollouts)
    for experience, order in zip(experiences, ([2, 0], [3, 1]), strict=True):
        experience.advantages = torch.tensor([stock[i] for i in order])
        experience.returns = experience.advantages.clone()
    return rollouts, experiences


def test_process_additive_on_experiences_reproduces_the_notes_fixture() -> None:
    rollouts, experiences = _notes_batch()
    advantage_patch.adjust_advantages(experiences, AdvantageConfig(mode="process_additive"), n_samples_per_prompt=4)
    expected = advantages(rollouts, AdvantageConfig(mode="process_additive"))
    for experience, order in zip(experiences, ([2, 0], [3, 1]), strict=True):
        for j, i in enumerate(order):
            assert experience.advantages[j].tolist() == pytest.approx(expected[i], abs=1e-5)
            assert torch.equal(experience.advantages[j], experience.returns[j])
    sample0 = experiences[0].advantages[1]  # rollout 0: steps at [1, 3) and [4, 7)
    assert [round(float(sample0[1]), 3), round(float(sample0[4]), 3)] == [2.127, 0.992]


def test_grpo_leaves_openrlhfs_numbers_untouched() -> None:
    _, experiences = _notes_batch()
    before = [e.advantages.clone() for e in experiences]
    advantage_patch.adjust_advantages(experiences, AdvantageConfig(mode="grpo"), n_samples_per_prompt=4)
    assert all(torch.equal(a, e.advantages) for a, e in zip(before, experiences, strict=True))


def test_every_mode_logs_the_share_of_zero_variance_groups() -> None:
    # SEVA spec §3.10: binary rewards [0]*8 (collapsed) and [1,0,...,0] (not) in one step -> share 0.5.
    binary = [0.0] * 8 + [1.0] + [0.0] * 7
    mask = (1, 1)
    rollouts = [Rollout(group=i // 8, outcome=r, action_mask=mask) for i, r in enumerate(binary)]
    experiences = [_experience(rollouts[:5], list(range(5))), _experience(rollouts[5:], list(range(5, 16)))]
    stock = advantages(rollouts)
    for experience, part in zip(experiences, (stock[:5], stock[5:]), strict=True):
        experience.advantages = torch.tensor(part)
        experience.returns = experience.advantages.clone()
    args = SimpleNamespace(algo=SimpleNamespace(advantage=SimpleNamespace(estimator="group_norm")),
                           rollout=SimpleNamespace(n_samples_per_prompt=8))  # fmt: skip
    wrapped = advantage_patch.wrap(lambda self, e: e, AdvantageConfig(mode="grpo"))
    before = [e.advantages.clone() for e in experiences]
    wrapped(SimpleNamespace(strategy=SimpleNamespace(args=args)), experiences)
    flags = torch.cat([e.info[advantage_patch.ZERO_STD_KEY] for e in experiences])
    assert flags.tolist() == [1.0] * 8 + [0.0] * 8 and float(flags.mean()) == 0.5
    assert all(torch.equal(a, e.advantages) for a, e in zip(before, experiences, strict=True))  # grpo: untouched
    assert stock[0] == [0.0, 0.0] and stock[8][0] == pytest.approx(2.4749, abs=1e-3)  # §3.10's numbers


def test_wrap_is_idempotent_and_refuses_other_estimators() -> None:
    calls = []

    def original(self: Any, experiences: list[Any]) -> list[Any]:
        calls.append(len(experiences))
        return experiences

    config = AdvantageConfig(mode="process_additive")
    wrapped = advantage_patch.wrap(original, config)
    assert advantage_patch.wrap(wrapped, config) is wrapped
    args = SimpleNamespace(algo=SimpleNamespace(advantage=SimpleNamespace(estimator="gae")),
                           rollout=SimpleNamespace(n_samples_per_prompt=4))  # fmt: skip
    with pytest.raises(ConfigError, match="group_norm"):
        wrapped(SimpleNamespace(strategy=SimpleNamespace(args=args)), [])
    args.algo.advantage.estimator = "group_norm"
    _, experiences = _notes_batch()
    wrapped(SimpleNamespace(strategy=SimpleNamespace(args=args)), experiences)
    assert calls == [0, 2]


@pytest.fixture
def fake_openrlhf_modules() -> Any:
    """Drop the fake ``openrlhf`` modules a test imports, so later tests see the real package again."""
    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "openrlhf"}
    yield
    for name in [m for m in sys.modules if m.split(".")[0] == "openrlhf"]:
        del sys.modules[name]
    sys.modules.update(saved)


def test_the_import_hook_patches_only_when_the_module_is_imported(
    tmp_path: Path, monkeypatch: Any, fake_openrlhf_modules: None
) -> None:
    package = tmp_path / "openrlhf" / "trainer" / "ppo_utils"
    package.mkdir(parents=True)
    for folder in (tmp_path / "openrlhf", tmp_path / "openrlhf" / "trainer", package):
        (folder / "__init__.py").write_text("")
    (package / "experience_maker.py").write_text(
        "class RemoteExperienceMaker:\n    def compute_advantages_and_returns(self, experiences):\n"
        "        return experiences\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "openrlhf" or m.startswith("openrlhf.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(advantage_patch, "_openrlhf_version", lambda: "0.11.2")
    monkeypatch.setenv(advantage_patch.CONFIG_ENV, '{"mode": "process_additive", "coef": 0.5}')
    advantage_patch.setup_hook()
    assert advantage_patch.TARGET_MODULE not in sys.modules  # nothing imported by the hook itself
    import importlib

    module = importlib.import_module(advantage_patch.TARGET_MODULE)
    method = module.RemoteExperienceMaker.compute_advantages_and_returns
    assert getattr(method, "__evigraph_advantage_mode__", None) == "process_additive"
    monkeypatch.setattr(advantage_patch, "_openrlhf_version", lambda: "0.12.0")
    with pytest.raises(ConfigError, match=r"targets openrlhf==0\.11\.2, found 0\.12\.0"):
        advantage_patch.install(AdvantageConfig(mode="capo"))
