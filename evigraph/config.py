"""Settings with a clear precedence and errors that say where a bad value came from.

Precedence, highest first: CLI flags > environment variables (``EVIGRAPH_*``) > a TOML config file >
defaults. Nested fields use dotted keys on the command line (``--generator.temperature 0.7``) and a double
underscore in the environment (``EVIGRAPH_GENERATOR__TEMPERATURE=0.7``); ``EVIGRAPH_MODEL`` is a shorthand
for ``generator.model``. The config file is ``$EVIGRAPH_CONFIG`` if set, else ``./evigraph.toml``, else
``~/.config/evigraph/config.toml``.

Why not pydantic-settings: it validates the merged result and cannot tell which source supplied a bad
value; here every value keeps its provenance (``--generator.temperature``, ``EVIGRAPH_MODEL``,
``evigraph.toml:generator.seed``), so a :class:`~evigraph.errors.ConfigError` names it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evigraph.errors import ConfigError
from evigraph.runtime import cache_root

__all__ = ("GeneratorConfig", "Settings", "config_file_path", "default_cache_dir", "load_settings")

ENV_PREFIX = "EVIGRAPH_"
ENV_ALIASES = {"EVIGRAPH_MODEL": "generator.model", "EVIGRAPH_CACHE_DIR": "cache_dir"}


def default_cache_dir() -> Path:
    """Where evigraph keeps caches (dequantised models, built corpora); see :func:`evigraph.runtime.cache_root`."""
    return cache_root()


class GeneratorConfig(BaseModel):
    """Which model to run and how to sample (``--generator.*``)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "smollm2"
    """Generator spec (``--generator.model`` / ``EVIGRAPH_MODEL``): ``smollm2`` (embedded default), a local
    HF directory or ``hf:DIR``, ``gguf:FILE.gguf``, ``vllm:DIR``, ``openai:MODEL@BASE_URL`` or
    ``langchain:module:attr``. See ``evigraph.generators.factory``."""
    max_new_tokens: int = Field(256, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = 0
    num_threads: int | None = Field(None, ge=1)
    """torch CPU threads; default 1 on machines with at most 2 cores."""
    constrained: bool = False
    """Force protocol grammars / JSON schemas while decoding (transformers backend, inference only)."""
    vllm_engine: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Extra ``AsyncEngineArgs`` for ``vllm:DIR`` models (config file ``[generator.vllm_engine]``), e.g.
    ``dtype``, ``max_model_len``, ``gpu_memory_utilization``."""


class Settings(BaseModel):
    """All evigraph settings."""

    model_config = ConfigDict(extra="forbid")

    generator: GeneratorConfig = Field(default_factory=GeneratorConfig)
    cache_dir: Path = Field(default_factory=default_cache_dir)
    """Caches (``--cache-dir`` / ``EVIGRAPH_CACHE_DIR``)."""
    log_level: str = "WARNING"


def config_file_path(env: Mapping[str, str]) -> Path | None:
    """The config file that applies, or ``None``."""
    if "EVIGRAPH_CONFIG" in env:
        path = Path(env["EVIGRAPH_CONFIG"])
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist", source="EVIGRAPH_CONFIG")
        return path
    for candidate in (Path("evigraph.toml"), Path.home() / ".config" / "evigraph" / "config.toml"):
        if candidate.is_file():
            return candidate
    return None


def _set_dotted(tree: dict[str, Any], provenance: dict[str, str], key: str, value: Any, source: str) -> None:
    parts = key.split(".")
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{part!r} is a value, not a section", source=source)
        node = child
    node[parts[-1]] = value
    provenance[key] = source


def _flatten(prefix: str, data: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(f"{dotted}.", value))
        else:
            flat[dotted] = value
    return flat


def _env_layer(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    layer: dict[str, tuple[str, str]] = {}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or name == "EVIGRAPH_CONFIG":
            continue
        key = ENV_ALIASES.get(name) or name[len(ENV_PREFIX) :].lower().replace("__", ".")
        layer[key] = (value, name)
    return layer


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
) -> Settings:
    """Merge defaults, the config file, the environment and ``overrides`` (CLI flags, dotted keys).

    Args:
        overrides: values from the command line, e.g. ``{"generator.temperature": 0.7}``; ``None`` values
            are ignored (an unset flag).
        env: the environment (default ``os.environ``).
        config_path: an explicit config file (default: see module docstring).

    Raises:
        ConfigError: a bad value or unknown key, naming its source and what is accepted.
    """
    env = os.environ if env is None else env
    tree: dict[str, Any] = {}
    provenance: dict[str, str] = {}
    path = config_path or config_file_path(env)
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"not valid TOML ({error})", source=str(path)) from None
        for key, value in _flatten("", data).items():
            _set_dotted(tree, provenance, key, value, f"{path}:{key}")
    for key, (value, name) in _env_layer(env).items():
        _set_dotted(tree, provenance, key, value, name)
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(tree, provenance, key, value, f"--{key.replace('_', '-')}")
    try:
        return Settings.model_validate(tree)
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        key = ".".join(str(p) for p in problem["loc"])
        source = provenance.get(key, key)
        if problem["type"] == "extra_forbidden":
            raise ConfigError(f"unknown setting {key!r}; accepted: {_accepted_keys(key)}", source=source) from None
        received = problem.get("input")
        raise ConfigError(f"{key}: {problem['msg']} (received {received!r})", source=source) from None


def _accepted_keys(key: str) -> str:
    model: type[BaseModel] = Settings
    prefix = ""
    for part in key.split(".")[:-1]:
        annotation = model.model_fields[part].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        model, prefix = annotation, f"{prefix}{part}."
    return ", ".join(f"{prefix}{name}" for name in model.model_fields)
