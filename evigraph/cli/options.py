"""Every shared command-line option, declared once.

- :data:`GENERATOR_OPTIONS`: the ``--generator.*`` flags, each mapping onto one ``GeneratorConfig`` field;
- :data:`RESOURCE_OPTIONS`: the flags that open a tool for an agent (``--corpus``, ``--retriever-url``,
  ``--retrieval``);
- :func:`model_options`: flags for the scalar fields of a pydantic model (an agent's config, an evaluation's
  options), named after the fields (``max_searches`` → ``--max-searches``) with the field docstrings as help.

:mod:`evigraph.cli.kit` attaches them to commands, so no command lists them by hand.
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import typer
from pydantic import BaseModel

__all__ = (
    "GENERATOR_OPTIONS",
    "RESOURCE_OPTIONS",
    "ConfigOpt",
    "Option",
    "hidden",
    "model_options",
    "renamed",
)

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="TOML config file (default: ./evigraph.toml, then ~/.config/evigraph).")
]


@dataclass(frozen=True)
class Option:
    """One generated flag: the keyword the command receives it as, its declaration, and its settings key."""

    name: str
    annotation: Any
    key: str
    """The dotted settings key the value overrides (``generator.seed``), or the model field it fills."""


def renamed(option: Option, flags: Sequence[str], *, panel: str | None = None) -> Option:
    """``option`` under other ``flags`` and in another help ``panel`` (same type, help and key); unchanged where
    ``flags`` is empty and ``panel`` is ``None``."""
    if not flags and panel is None:
        return option
    kind, info = get_args(option.annotation)
    names = tuple(flags) or (info.default, *(info.param_decls or ()))  # typer keeps the first flag as `default`
    return Option(
        option.name,
        Annotated[kind, typer.Option(*names, help=info.help, rich_help_panel=panel or info.rich_help_panel)],
        option.key,
    )


def hidden(option: Option) -> Option:
    """``option`` left out of ``--help`` (same flags, type and key): a flag a command refuses with a reason."""
    kind, info = get_args(option.annotation)
    shown = copy.copy(info)
    shown.hidden = True
    return Option(option.name, Annotated[kind, shown], option.key)


def _option(name: str, kind: Any, flags: tuple[str, ...], help_text: str, panel: str, key: str) -> Option:
    return Option(name, Annotated[kind | None, typer.Option(*flags, help=help_text, rich_help_panel=panel)], key)


_GEN = "Generator"
GENERATOR_OPTIONS: tuple[Option, ...] = tuple(
    _option(f"generator__{field}", kind, flags, help_text, _GEN, f"generator.{field}")
    for field, kind, flags, help_text in (
        (
            "model",
            str,
            ("--generator.model", "--model"),
            "Model spec: smollm2 | DIR | hf:DIR | gguf:FILE | vllm:DIR | openai:MODEL@URL | langchain:mod:attr.",
        ),
        ("max_new_tokens", int, ("--generator.max-new-tokens",), "Per-turn token cap."),
        ("temperature", float, ("--generator.temperature",), "0 = greedy."),
        ("top_p", float, ("--generator.top-p",), "Nucleus sampling mass."),
        ("seed", int, ("--generator.seed",), "Sampling seed."),
        ("num_threads", int, ("--generator.num-threads",), "torch CPU threads."),
        (
            "constrained",
            bool,
            ("--generator.constrained/--generator.unconstrained",),
            "Constrained decoding for weak models (transformers backend, inference only).",
        ),
    )
)
"""The ``--generator.*`` flags; ``key`` is the settings key each overrides."""

_SEARCH = "Search"
RESOURCE_OPTIONS: dict[str, tuple[Option, ...]] = {
    "search": (
        _option(
            "search__corpus",
            str,
            ("--corpus",),
            "Corpus to search (BM25 unless --retrieval says otherwise): a name (`evigraph corpus list`), a corpus "
            "directory, or pyserini:NAME (a Pyserini prebuilt BM25 index, e.g. pyserini:wikipedia-kilt-doc; see "
            "docs/corpora.md).",
            _SEARCH,
            "corpus",
        ),
        _option(
            "search__retriever_url",
            str,
            ("--retriever-url",),
            "A Search-R1 style /retrieve server instead of a local corpus.",
            _SEARCH,
            "retriever_url",
        ),
        _option(
            "search__retrieval",
            str,
            ("--retrieval",),
            "How --corpus is searched: bm25 (default), dense or hybrid (needs the FAISS index `evigraph corpus "
            "embed` builds; see docs/corpora.md).",
            _SEARCH,
            "retrieval",
        ),
    ),
    "nli": (
        _option(
            "nli__checkpoint",
            Path,
            ("--nli",),
            "A local 3-way NLI cross-encoder checkpoint directory (DeBERTa-v3 NLI family). Without one the "
            "judge model scores entailment by label-token logprobs (weaker; reports name it).",
            "Tools",
            "checkpoint",
        ),
    ),
}
"""Flags per :data:`evigraph.registry.Resource`; ``key`` is the keyword of the tool's opener."""

_SCALARS = (str, int, float, bool, Path)


def _scalar(annotation: Any) -> Any | None:
    """The flag type of a field annotation (``int``, ``int | None``, a ``Literal`` of strings), or ``None``."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return _scalar(members[0]) if len(members) == 1 else None
    if origin is Literal:
        values = get_args(annotation)
        return str if all(isinstance(v, str) for v in values) else None
    if origin is typing.Annotated:
        return _scalar(get_args(annotation)[0])
    return annotation if annotation in _SCALARS else None


def model_options(model: type[BaseModel], *, prefix: str, panel: str, exclude: Collection[str] = ()) -> list[Option]:
    """A flag per scalar field of ``model`` (nested models, lists and dicts stay config-file only).

    Flags are the field names with dashes (booleans get ``--x/--no-x``); every flag defaults to "not given",
    so an unset flag never hides a value from the environment or the config file. ``key`` is the field name.
    """
    options = []
    for field_name, info in model.model_fields.items():
        kind = _scalar(info.annotation)
        if field_name in exclude or kind is None:
            continue
        flag = "--" + field_name.replace("_", "-")
        flags = (f"{flag}/--no-{flag[2:]}",) if kind is bool else (flag,)
        help_text = (info.description or "").split("\n\n")[0].replace("\n", " ")
        options.append(_option(f"{prefix}{field_name}", kind, flags, help_text, panel, field_name))
    return options
