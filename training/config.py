"""Training configs: one YAML per agent in ``training/configs/`` mirroring its paper's table, overridable from the
command line, and the exact OpenRLHF command line they make.

A config names the agent, its reward (and options), the component that is each sample's reward (``outcome``,
default the reward's scalar), the per-step value the dense advantage modes read, a frozen ``judge`` (and an
``nli`` checkpoint) for agents that grade their own steps, the advantage mode, the agent's own config, and
``openrlhf``: OpenRLHF 0.11.2's dotted flags without the leading dashes (``rollout.n_samples_per_prompt: 16``;
``true`` = a bare switch, ``false``/``null`` = left out, a list = several values). An optional ``curriculum``
lists stages run one after another, each from the previous stage's checkpoint, each with its own prompts (the
agent's adapter reshapes every record by the stage's ``options``, e.g. RAG-Zeval's 3 then 4 candidates) and
flag overrides. ``engine`` picks the trainer (``openrlhf``, or ``trl``: TRL in process, its knobs under ``trl``,
see :class:`TrlSection`). ``--set KEY=VALUE`` overrides
any key (``openrlhf.actor.adam.lr=5e-7``, ``advantage.mode=capo``); values are read as JSON, else as YAML
scalars.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evigraph.errors import ConfigError
from evigraph.training.advantages import AdvantageConfig
from evigraph.training.reward_mix import RewardMix

__all__ = (
    "OPENRLHF_MODULE",
    "CurriculumStage",
    "SFTConfig",
    "TrainConfig",
    "TrlSection",
    "apply_overrides",
    "builtin_configs",
    "load_sft_config",
    "load_train_config",
    "openrlhf_argv",
    "shell_line",
)

OPENRLHF_MODULE = "openrlhf.cli.train_ppo_ray"


class SFTConfig(BaseModel):
    """One supervised run: OpenRLHF ``train_sft`` flags (``training/configs/sft/<name>.yaml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str = ""
    openrlhf: dict[str, Any] = Field(default_factory=dict)


class CurriculumStage(BaseModel):
    """One stage of a curriculum: its prompts are every record reshaped by ``options`` (the agent adapter's
    ``curriculum_input``), and ``openrlhf`` overrides the config's flags for this stage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    options: dict[str, Any] = Field(default_factory=dict)
    openrlhf: dict[str, Any] = Field(default_factory=dict)


class TrlSection(BaseModel):
    """The TRL engine's settings (``engine: trl``; :mod:`evigraph.training.trl_engine`): ``args`` are
    ``trl.GRPOConfig`` fields over the ones derived from ``openrlhf`` (``--set trl.args.learning_rate=1e-5``),
    ``lora`` asks for a LoRA adapter (``peft.LoraConfig`` fields, ``{}`` for its defaults; ``null``: full
    fine-tuning), ``max_length`` is an episode's sequence budget (default ``openrlhf``'s ``data.max_len``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    args: dict[str, Any] = Field(default_factory=dict)
    lora: dict[str, Any] | None = None
    max_length: int | None = Field(None, ge=16)


class TrainConfig(BaseModel):
    """One training run's settings (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    description: str = ""
    reward: str | None = None
    reward_options: dict[str, Any] = Field(default_factory=dict)
    outcome: str | None = None
    step_value: str | None = None
    judge: str | None = None
    nli: str | None = None
    mix: RewardMix | None = None
    advantage: AdvantageConfig = AdvantageConfig()
    agent_config: dict[str, Any] = Field(default_factory=dict)
    openrlhf: dict[str, Any] = Field(default_factory=dict)
    curriculum: list[CurriculumStage] = Field(default_factory=list)
    curriculum_seed: int = 0
    """Seed of the stages' reshaping (e.g. which candidates a 3-candidate stage keeps, per record)."""
    engine: Literal["openrlhf", "trl"] = "openrlhf"
    """Who trains: OpenRLHF (Ray, vLLM, DeepSpeed: clusters) or TRL's GRPOTrainer in process (CPU or one GPU)."""
    trl: TrlSection = TrlSection()


def builtin_configs(kind: str = "grpo") -> dict[str, Path]:
    """Name → path of the shipped configs: ``training/configs/<name>.yaml`` (GRPO) or ``configs/sft/`` (SFT)."""
    folder = Path(str(files("evigraph.training") / "configs"))
    if kind == "sft":
        folder = folder / "sft"
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))}


def load_train_config(name_or_path: str, overrides: Sequence[str] = ()) -> TrainConfig:
    """A shipped GRPO config by name (``rlseek``) or a YAML file, with ``KEY=VALUE`` overrides applied.

    Raises:
        ConfigError: an unknown name, an unreadable file, a bad override or a config that does not validate
            (the message names the file and the field).
    """
    return _load(name_or_path, overrides, TrainConfig, builtin_configs())


def load_sft_config(name_or_path: str, overrides: Sequence[str] = ()) -> SFTConfig:
    """A shipped SFT config by name (``multiturn``) or a YAML file, with overrides (see :func:`load_train_config`)."""
    return _load(name_or_path, overrides, SFTConfig, builtin_configs("sft"))


ConfigT = TypeVar("ConfigT", bound=BaseModel)


def _load(name_or_path: str, overrides: Sequence[str], schema: type[ConfigT], shipped: dict[str, Path]) -> ConfigT:
    path = shipped.get(name_or_path) or Path(name_or_path)
    if not path.is_file():
        raise ConfigError(f"no training config {name_or_path!r}: give a YAML file or one of {', '.join(shipped)}")
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: {error}") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{path}: a training config is a mapping")
    tree = apply_overrides(tree, overrides)
    try:
        return schema.model_validate(tree)
    except ValidationError as error:
        raise ConfigError(f"{path}: {error}") from None


def apply_overrides(tree: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """``tree`` with each ``KEY=VALUE`` applied; keys under ``openrlhf.`` keep their dots (they are flag names).

    Example:
        >>> tree = {"openrlhf": {"actor.adam.lr": 1e-6}}
        >>> apply_overrides(tree, ["openrlhf.actor.adam.lr=5e-7", "advantage.mode=capo"])
        {'openrlhf': {'actor.adam.lr': 5e-07}, 'advantage': {'mode': 'capo'}}
    """
    result: dict[str, Any] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in tree.items()}
    for override in overrides:
        key, sep, raw = override.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {override!r}: expected KEY=VALUE", source="--set")
        value = _scalar(raw)
        head, _, rest = key.partition(".")
        if head == "openrlhf" and rest:
            result.setdefault("openrlhf", {})[rest] = value
        elif rest:
            section = result.setdefault(head, {})
            if not isinstance(section, dict):
                raise ConfigError(f"--set {override!r}: {head} is not a section", source="--set")
            *parents, leaf = rest.split(".")
            for part in parents:
                section = section.setdefault(part, {})
            section[leaf] = value
        else:
            result[head] = value
    return result


def _scalar(raw: str) -> Any:
    """A ``--set`` value: JSON first (``5e-7`` is a number there, not in YAML 1.1), else a YAML scalar."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return yaml.safe_load(raw) if raw else ""


def openrlhf_argv(flags: Mapping[str, Any]) -> list[str]:
    """OpenRLHF's command-line arguments for ``flags`` (see the module docstring).

    Example:
        >>> flags = {"train.colocate_all": True, "vllm.enable_sleep": False, "algo.dynamic_filtering_range": [0, 1]}
        >>> openrlhf_argv(flags)
        ['--train.colocate_all', '--algo.dynamic_filtering_range', '0', '1']
    """
    argv: list[str] = []
    for key, value in flags.items():
        if value is None or value is False:
            continue
        argv.append(f"--{key}")
        if value is True:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        argv.extend(_flag_value(v) for v in values)
    return argv


def _flag_value(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def shell_line(argv: Sequence[str]) -> str:
    """``argv`` as one copy-pasteable shell line."""
    return shlex.join(argv)
