"""Run pieces of the real OpenRLHF 0.11.2 on CPU (``pip install --no-deps openrlhf==0.11.2``, as scripts/install.sh
does): modules that need a GPU stack (Ray, vLLM, DeepSpeed actors, flash-attn) are replaced by stub modules with
real specs, only for the duration of a test; everything OpenRLHF itself computes runs as shipped."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

__all__ = (
    "import_experience_maker",
    "import_samples_generator",
    "import_sft_dataset",
    "openrlhf_root",
    "parse_train_ppo_ray",
    "parse_train_sft",
    "stub_modules",
)


def openrlhf_root() -> Path:
    spec = importlib.util.find_spec("openrlhf")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("openrlhf 0.11.2 is not installed (scripts/install.sh installs it without dependencies)")
    from importlib.metadata import version

    if version("openrlhf") != "0.11.2":
        pytest.skip(f"openrlhf {version('openrlhf')} is installed; these contract tests target 0.11.2")
    return Path(next(iter(spec.submodule_search_locations)))


def _module(name: str, attrs: dict[str, Any], *, path: list[str] | None = None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, loader=None, is_package=path is not None)
    if path is not None:
        module.__path__ = path
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def stub_modules(monkeypatch: pytest.MonkeyPatch, stubs: dict[str, dict[str, Any]], packages: dict[str, str]) -> None:
    """Register stub modules (``name -> attributes``); ``packages`` maps stub package names to real folders, so
    their real submodules still import."""
    for name, attrs in stubs.items():
        path = [packages[name]] if name in packages else ([] if name in _PARENTS else None)
        monkeypatch.setitem(sys.modules, name, _module(name, attrs, path=path))


_PARENTS = {"ray", "ray.util", "openrlhf.trainer", "openrlhf.trainer.ray"}


def parse_train_ppo_ray(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> Any:
    """Run the real ``openrlhf.cli.train_ppo_ray`` main block on ``argv`` -- its argparse and every post-parse
    check -- and return the hierarchised args it would hand to ``train`` (which is not called)."""
    root = openrlhf_root()
    anything = type("Anything", (), {"__init__": lambda self, *a, **k: None})
    stub_modules(
        monkeypatch,
        {
            "ray": {"is_initialized": lambda: False, "init": lambda **_: None},
            "ray.util": {},
            "ray.util.placement_group": {"placement_group": lambda *a, **k: None},
            "openrlhf.trainer": {},
            "openrlhf.trainer.ray": {"create_vllm_engines": lambda *a, **k: None},
            "openrlhf.trainer.ray.launcher": {
                "RayActorGroup": anything,
                "ReferenceModelActor": anything,
                "RewardModelActor": anything,
            },
            "openrlhf.trainer.ray.ppo_actor": {"PolicyModelActor": anything},
            "openrlhf.trainer.ray.ppo_critic": {"CriticModelActor": anything},
            "openrlhf.utils": {"get_strategy": lambda *a, **k: None},
        },
        {"openrlhf.trainer": str(root / "trainer"), "openrlhf.utils": str(root / "utils")},
    )
    return _run_main(monkeypatch, root / "cli" / "train_ppo_ray.py", argv)


def parse_train_sft(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> Any:
    """Run the real ``openrlhf.cli.train_sft`` main block (argparse and checks) on ``argv``; return its args."""
    root = openrlhf_root()
    anything = type("Anything", (), {})
    stub_modules(
        monkeypatch,
        {
            "openrlhf.datasets": {"SFTDataset": anything},
            "openrlhf.datasets.utils": {"blending_datasets": lambda *a, **k: None},
            "openrlhf.models": {"Actor": anything},
            "openrlhf.trainer": {},
            "openrlhf.trainer.sft_trainer": {"SFTTrainer": anything},
            "openrlhf.utils": {"get_strategy": lambda *a, **k: None, "get_tokenizer": lambda *a, **k: None},
        },
        {"openrlhf.trainer": str(root / "trainer"), "openrlhf.utils": str(root / "utils")},
    )
    return _run_main(monkeypatch, root / "cli" / "train_sft.py", argv)


def import_sft_dataset(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The real ``openrlhf.datasets.sft_dataset`` module."""
    root = openrlhf_root()
    stub_modules(
        monkeypatch,
        {"openrlhf.datasets": {}, "openrlhf.utils": {}},
        {"openrlhf.datasets": str(root / "datasets"), "openrlhf.utils": str(root / "utils")},
    )
    _forget(monkeypatch, "openrlhf.datasets.sft_dataset")
    import importlib

    return importlib.import_module("openrlhf.datasets.sft_dataset")


def _run_main(monkeypatch: pytest.MonkeyPatch, path: Path, argv: list[str]) -> Any:
    """Execute a CLI module's main block with its final ``train(args)`` replaced by a capture."""
    source = path.read_text(encoding="utf-8")
    head, call, tail = source.rpartition("    train(args)")
    assert call, f"{path.name} no longer ends its main block with train(args)"
    captured: list[Any] = []
    monkeypatch.setattr(sys, "argv", [path.stem, *argv])
    namespace = {"__name__": "__main__", "__captured__": captured}
    exec(compile(head + "    __captured__.append(args)" + tail, str(path), "exec"), namespace)
    return captured[0]


def import_samples_generator(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The real ``openrlhf.trainer.ppo_utils.samples_generator`` (Ray and vLLM stubbed)."""
    root = openrlhf_root()
    stub_modules(
        monkeypatch,
        {
            "ray": {"is_initialized": lambda: False},
            "vllm": {"SamplingParams": type("SamplingParams", (), {}), "__version__": "0.29.0"},
            "openrlhf.trainer.ray": {},
            "openrlhf.trainer.ray.vllm_engine": {"batch_vllm_engine_call": lambda *a, **k: None},
            "openrlhf.utils": {},
        },
        {"openrlhf.trainer.ray": str(root / "trainer" / "ray"), "openrlhf.utils": str(root / "utils")},
    )
    _forget(monkeypatch, "openrlhf.trainer.ppo_utils")
    import importlib

    return importlib.import_module("openrlhf.trainer.ppo_utils.samples_generator")


def import_experience_maker(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The real ``openrlhf.trainer.ppo_utils.experience_maker`` (Ray, DeepSpeed and the model zoo stubbed; the
    reward and advantage code it imports from ``openrlhf.models.utils`` is real)."""
    root = openrlhf_root()
    stub_modules(
        monkeypatch,
        {
            "ray": {"is_initialized": lambda: False},
            "deepspeed": {},
            "openrlhf.models": {},
            "openrlhf.trainer.ray": {},
            "openrlhf.trainer.ray.launcher": {"RayActorGroup": type("RayActorGroup", (), {})},
            "openrlhf.utils": {},
        },
        {
            "openrlhf.models": str(root / "models"),
            "openrlhf.trainer.ray": str(root / "trainer" / "ray"),
            "openrlhf.utils": str(root / "utils"),
        },
    )
    _forget(monkeypatch, "openrlhf.trainer.ppo_utils")
    _forget(monkeypatch, "openrlhf.models.utils")
    import importlib

    return importlib.import_module("openrlhf.trainer.ppo_utils.experience_maker")


def _forget(monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    """Drop cached modules under ``prefix`` for this test only (they were imported against other stubs)."""
    for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        monkeypatch.delitem(sys.modules, name)
