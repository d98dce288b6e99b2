"""Option declarations shared by commands, each mapping onto one settings field (``--generator.*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = (
    "ConfigOpt",
    "ConstrainedOpt",
    "MaxNewTokensOpt",
    "ModelOpt",
    "NumThreadsOpt",
    "SeedOpt",
    "TemperatureOpt",
    "TopPOpt",
    "generator_overrides",
)

_GEN = "Generator"

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="TOML config file (default: ./evigraph.toml, then ~/.config/evigraph).")
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--generator.model",
        "--model",
        help="Model spec: smollm2 | DIR | hf:DIR | gguf:FILE | vllm:DIR | openai:MODEL@URL | langchain:mod:attr.",
        rich_help_panel=_GEN,
    ),
]
MaxNewTokensOpt = Annotated[
    int | None, typer.Option("--generator.max-new-tokens", help="Per-turn token cap.", rich_help_panel=_GEN)
]
TemperatureOpt = Annotated[
    float | None, typer.Option("--generator.temperature", help="0 = greedy.", rich_help_panel=_GEN)
]
TopPOpt = Annotated[
    float | None, typer.Option("--generator.top-p", help="Nucleus sampling mass.", rich_help_panel=_GEN)
]
SeedOpt = Annotated[int | None, typer.Option("--generator.seed", help="Sampling seed.", rich_help_panel=_GEN)]
NumThreadsOpt = Annotated[
    int | None, typer.Option("--generator.num-threads", help="torch CPU threads.", rich_help_panel=_GEN)
]
ConstrainedOpt = Annotated[
    bool | None,
    typer.Option(
        "--generator.constrained/--generator.unconstrained",
        help="Constrained decoding for weak models (transformers backend, inference only).",
        rich_help_panel=_GEN,
    ),
]


def generator_overrides(
    model: str | None = None,
    max_new_tokens: int | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    num_threads: int | None = None,
    constrained: bool | None = None,
) -> dict[str, Any]:
    """Dotted settings keys for the generator flags that were given (``None`` = not given)."""
    values = {
        "generator.model": model,
        "generator.max_new_tokens": max_new_tokens,
        "generator.temperature": temperature,
        "generator.top_p": top_p,
        "generator.seed": seed,
        "generator.num_threads": num_threads,
        "generator.constrained": constrained,
    }
    return {key: value for key, value in values.items() if value is not None}
