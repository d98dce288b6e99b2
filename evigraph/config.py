"""Settings with a clear precedence and errors that say where a bad value came from.

Precedence, highest first: CLI flags > environment variables (``EVIGRAPH_*``) > a TOML config file >
defaults. Nested fields use dotted keys on the command line (``--generator.temperature 0.7``) and a double
underscore in the environment (``EVIGRAPH_GENERATOR__TEMPERATURE=0.7``); ``EVIGRAPH_MODEL`` is a shorthand
for ``generator.model``. The config file is ``$EVIGRAPH_CONFIG`` if set, else ``./evigraph.toml``, else
``~/.config/evigraph/config.toml``.

Each agent has a section of its own, validated by the agent's config model when the agent runs
(:func:`agent_config`): ``[agents.veri-r1]`` in the file, ``EVIGRAPH_AGENTS__VERI_R1__MAX_SEARCHES=2`` in the
environment (underscores in the agent's name stand for its dashes), the agent's own flags on the command line.
Fields an agent takes from the generator settings (its per-turn token cap from ``generator.max_new_tokens``)
follow the same precedence: whichever of the two keys was set by the higher source wins, the agent's own key
on a tie, the agent's default when neither was set.

Why not pydantic-settings: it validates the merged result and cannot tell which source supplied a bad
value; here every value keeps its provenance (``--generator.temperature``, ``EVIGRAPH_MODEL``,
``evigraph.toml:generator.seed``), so a :class:`~evigraph.errors.ConfigError` names it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from evigraph.errors import ConfigError
from evigraph.machine import cache_root

__all__ = (
    "GeneratorConfig",
    "Settings",
    "agent_config",
    "config_file_path",
    "default_cache_dir",
    "load_settings",
    "settings_for",
)

ENV_PREFIX = "EVIGRAPH_"
ENV_NOT_SETTINGS = frozenset(
    {
        "EVIGRAPH_CONFIG",
        "EVIGRAPH_API_KEY",
        "EVIGRAPH_SERVE_TOKEN",
        "EVIGRAPH_SEARCH",
        "EVIGRAPH_RETRIEVAL",
        "EVIGRAPH_NLI",
    }
)
"""``EVIGRAPH_*`` variables that are not settings: the config file's path, secrets (read where they are used,
never stored in settings) and the LangGraph server's search, retrieval and NLI choices
(``evigraph.serving.graphs``)."""
ENV_ALIASES = {"EVIGRAPH_MODEL": "generator.model", "EVIGRAPH_CACHE_DIR": "cache_dir"}

FILE, ENVIRONMENT, FLAGS = 0, 1, 2
"""Source ranks: a value from a higher rank replaces one from a lower rank (defaults rank below all)."""
DEFAULT_RANK = -1

ConfigT = TypeVar("ConfigT", bound=BaseModel)


def default_cache_dir() -> Path:
    """Where evigraph keeps caches (dequantised models, built corpora); see :func:`evigraph.machine.cache_root`."""
    return cache_root()


class GeneratorConfig(BaseModel):
    """Which model to run and how to sample (``--generator.*``)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "smollm2"
    """Model spec (``--generator.model`` / ``EVIGRAPH_MODEL``): ``smollm2`` (embedded default), a local
    HF directory or ``hf:DIR``, ``gguf:FILE.gguf``, ``vllm:DIR``, ``openai:MODEL@BASE_URL`` or
    ``langchain:module:attr``. See ``evigraph.generators.factory``."""
    max_new_tokens: int = Field(256, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = 0
    num_threads: int | None = Field(None, ge=1)
    """torch CPU threads; default 1 on machines with at most 2 cores."""
    constrained: bool | None = None
    """Weak-model mode (inference only): agents guide every turn with a grammar and show a worked example in
    their prompts. Needs a backend that enforces regular expressions (transformers, or an OpenAI-compatible
    vLLM server). ``None``: on for the embedded model, off for every other."""
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
    agents: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-agent sections (``[agents.veri-r1]``), keyed by agent name; validated by :func:`agent_config`."""

    _sources: dict[str, tuple[str, int]] = PrivateAttr(default_factory=dict)

    def source(self, key: str) -> str | None:
        """Where the value of dotted ``key`` came from (``--generator.seed``, ``EVIGRAPH_MODEL``,
        ``evigraph.toml:generator.seed``), or ``None`` for a default."""
        found = self._sources.get(key)
        return found[0] if found else None

    def rank(self, key: str) -> int:
        """The precedence rank of the source that set ``key`` (``FILE`` < ``ENVIRONMENT`` < ``FLAGS``);
        ``DEFAULT_RANK`` when nothing set it."""
        found = self._sources.get(key)
        return found[1] if found else DEFAULT_RANK


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


def _canonical_key(key: str) -> str:
    """``agents.veri_r1.x`` → ``agents.veri-r1.x``: agent names use dashes, which environment names cannot."""
    parts = key.split(".")
    if len(parts) > 1 and parts[0] == "agents":
        parts[1] = parts[1].replace("_", "-")
    return ".".join(parts)


def _set_dotted(
    tree: dict[str, Any], provenance: dict[str, tuple[str, int]], key: str, value: Any, source: str, rank: int
) -> None:
    key = _canonical_key(key)
    parts = key.split(".")
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{part!r} is a value, not a section", source=source)
        node = child
    node[parts[-1]] = value
    provenance[key] = (source, rank)


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
        if not name.startswith(ENV_PREFIX) or name in ENV_NOT_SETTINGS:
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
    provenance: dict[str, tuple[str, int]] = {}
    path = config_path or config_file_path(env)
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"not valid TOML ({error})", source=str(path)) from None
        for key, value in _flatten("", data).items():
            _set_dotted(tree, provenance, key, value, f"{path}:{_canonical_key(key)}", FILE)
    for key, (value, name) in _env_layer(env).items():
        _set_dotted(tree, provenance, key, value, name, ENVIRONMENT)
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(tree, provenance, key, value, _flag_name(key), FLAGS)
    try:
        settings = Settings.model_validate(tree)
    except ValidationError as error:
        raise _config_error(error, Settings, "", provenance) from None
    settings._sources = provenance
    return settings


def _flag_name(key: str) -> str:
    # Agent settings have flags without the section prefix (``--max-searches``).
    parts = key.split(".")
    shown = ".".join(parts[2:]) if parts[0] == "agents" and len(parts) > 2 else key
    return f"--{shown.replace('_', '-')}"


def _config_error(
    error: ValidationError, model: type[BaseModel], prefix: str, provenance: dict[str, tuple[str, int]]
) -> ConfigError:
    """The first problem of ``error``, naming the source of the bad value and, for unknown keys, the accepted ones."""
    problem = error.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in problem["loc"])
    key = f"{prefix}{loc}"
    source = provenance.get(key, (key, DEFAULT_RANK))[0]
    if problem["type"] == "extra_forbidden":
        return ConfigError(f"unknown setting {key!r}; accepted: {_accepted_keys(model, loc, prefix)}", source=source)
    received = problem.get("input")
    return ConfigError(f"{key}: {problem['msg']} (received {received!r})", source=source)


def _accepted_keys(model: type[BaseModel], loc: str, prefix: str) -> str:
    for part in loc.split(".")[:-1]:
        annotation = model.model_fields[part].annotation if part in model.model_fields else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        model, prefix = annotation, f"{prefix}{part}."
    return ", ".join(f"{prefix}{name}" for name in model.model_fields)


def agent_config(settings: Settings, agent: str, model: type[ConfigT]) -> ConfigT:
    """The config of ``agent``: its section of ``settings`` (flags > environment > file) over ``model``'s defaults.

    Fields listed in the model's ``inherit_from_generator`` (a class variable mapping field → generator
    setting) take the generator setting when that was set by a higher source than the agent's own key
    (the module docstring has the whole rule).

    Raises:
        ConfigError: an unknown key or a bad value, naming its source (``--max-searches``,
            ``EVIGRAPH_AGENTS__VERI_R1__TOP_K``, ``evigraph.toml:agents.veri-r1.top_k``) and what is accepted.
    """
    prefix = f"agents.{agent}."
    values = dict(settings.agents.get(agent, {}))
    provenance = dict(settings._sources)
    inherited: dict[str, str] = getattr(model, "inherit_from_generator", {})
    for field, generator_key in inherited.items():
        key = f"generator.{generator_key}"
        if settings.rank(key) > settings.rank(prefix + field):
            values[field] = getattr(settings.generator, generator_key)
            provenance[prefix + field] = provenance[key]
    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise _config_error(error, model, prefix, provenance) from None


def settings_for(model: type[ConfigT], config: BaseModel) -> ConfigT:
    """``model`` built from the fields of ``config`` that it also has (the rest keep ``model``'s defaults): one
    agent's settings for a component it builds on, without copying them field by field.

    Example:
        >>> class Loop(BaseModel):
        ...     turns: int = 3
        ...     top_k: int = 5
        >>> class Agent(BaseModel):
        ...     top_k: int = 2
        ...     lenient: bool = False
        >>> settings_for(Loop, Agent())
        Loop(turns=3, top_k=2)
    """
    return model.model_validate(
        {name: getattr(config, name) for name in model.model_fields if name in type(config).model_fields}
    )
