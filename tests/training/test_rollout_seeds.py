"""Every sample of a TRL rollout draws with its own seed, and the same run draws with the same seeds."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("trl")

from evigraph.training.trl_rollout import GraphRollout


class _Stop(Exception):
    pass


class _Recorder:
    """An executor that notes each episode's sampling seed and stops the rollout once all have started."""

    def __init__(self) -> None:
        self.seeds: list[int | None] = []

    async def episode(self, label: str, generator: Any, *, max_length: int, sampling: Any) -> Any:
        assert sampling.temperature == 0.9 and sampling.top_p == 0.8
        self.seeds.append(sampling.seed)
        raise _Stop


def _trainer(*, step: int, use_vllm: bool = False, seed: int = 7) -> Any:
    args = SimpleNamespace(
        seed=seed, use_vllm=use_vllm, temperature=0.9, top_p=0.8, top_k=0, min_p=None, repetition_penalty=1.0,
        gradient_checkpointing_kwargs=None,
    )  # fmt: skip
    return SimpleNamespace(args=args, state=SimpleNamespace(global_step=step), model_wrapped=None, accelerator=None)


def _seeds(rollout: GraphRollout, trainer: Any, rows: int = 4) -> list[int | None]:
    recorder = _Recorder()
    rollout.executor = recorder  # type: ignore[assignment]
    with pytest.raises(_Stop):
        rollout(["a", "a", "b", "b"][:rows], trainer)
    return recorder.seeds


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import trl.models.utils

    monkeypatch.setattr(trl.models.utils, "unwrap_model_for_generation", lambda *a, **k: contextlib.nullcontext())
    monkeypatch.setattr(GraphRollout, "_policy", lambda self, model, trainer: SimpleNamespace(context_window=None))


def test_each_sample_its_own_seed_each_call_new_ones_and_the_same_run_the_same() -> None:
    first = GraphRollout(None, max_length=64, num_generations=2)  # type: ignore[arg-type]
    step3 = _seeds(first, _trainer(step=3))
    again = _seeds(first, _trainer(step=3))  # a second rollout within the same optimiser step
    step4 = _seeds(first, _trainer(step=4))
    assert all(isinstance(s, int) for s in step3)
    assert len(set(step3)) == 4, "the samples of a group would draw the same tokens"
    assert not set(step3) & set(again) and not set(step3) & set(step4) and not set(again) & set(step4)
    # The same command: a new rollout object, the same steps, the same seeds.
    second = GraphRollout(None, max_length=64, num_generations=2)  # type: ignore[arg-type]
    assert _seeds(second, _trainer(step=3)) == step3
    assert _seeds(second, _trainer(step=3)) == again
    # Another run seed, other samples.
    other = GraphRollout(None, max_length=64, num_generations=2)  # type: ignore[arg-type]
    assert not set(_seeds(other, _trainer(step=3, seed=8))) & set(step3)


def test_trls_vllm_engine_keeps_its_own_seeding() -> None:
    rollout = GraphRollout(None, max_length=64, num_generations=2)  # type: ignore[arg-type]
    assert _seeds(rollout, _trainer(step=0, use_vllm=True)) == [None] * 4
