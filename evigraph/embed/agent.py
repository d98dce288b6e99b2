"""A registered agent compiled from what a user names: ``evigraph.agent(NAME, model=..., search=..., **config)``.

The one place that turns a model (a model spec, an evigraph generator or a LangChain chat model), a
search tool (a corpus name or directory, a ``/retrieve`` URL or a search object), an NLI engine and config fields
into an agent's compiled LangGraph graph. :class:`~evigraph.embed.verifier.Verifier`, the LangGraph server's
graph factories (``evigraph.serving.graphs``, listed in ``langgraph.json``) and ``evigraph serve`` build on it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from evigraph.errors import ConfigError

__all__ = ("agent", "agent_config", "compile_graph", "resolve_model", "resolve_search")


def agent(
    name: str, *, model: Any = None, search: Any = None, nli: Any = None, judge: Any = None, **config: Any
) -> Any:
    """The compiled LangGraph graph of the registered agent ``name`` (``veri-r1``, ``stepgap``, ``rlseek``,
    ``seva``, ``rag-zeval`` or a plug-in): ``await graph.ainvoke({...the agent's input fields...})`` runs it (its
    nodes are async).

    Args:
        name: the agent as the registry knows it (``evigraph agents`` lists them).
        model: see :func:`resolve_model` (default: the configured model, the embedded SmolLM2 unless set).
        search: see :func:`resolve_search` (agents that search; default: the agent's own, the demo corpus).
        nli: an NLI engine or a checkpoint directory (agents that use one).
        judge: a second model, like ``model`` (agents with a separate judge: StepGap's checker stages).
        **config: fields of the agent's config (``max_searches=2`` ...).

    Raises:
        ConfigError: an unknown agent, a bad model or search, a config field the agent does not have (named).

    Example:
        >>> import evigraph
        >>> from evigraph.generators.scripted import ScriptedGenerator
        >>> graph = evigraph.agent("seva", model=ScriptedGenerator([]))
        >>> [node for node in graph.get_graph().nodes if not node.startswith("__")]
        ['render_prompt', 'generate', 'parse', 'finish']
    """
    from evigraph.registry import get_agent

    loaded = get_agent(name).load()
    checked = agent_config(loaded, config)  # a bad field fails before the model loads
    return compile_graph(loaded, resolve_model(model), checked, search=search, nli=nli, judge=judge)


def compile_graph(
    loaded: Any,
    generator: Any,
    config: BaseModel | None,
    *,
    search: Any = None,
    nli: Any = None,
    judge: Any = None,
    embedded: bool = False,
) -> Any:
    """``loaded``'s graph (its ``verifier_builder`` when ``embedded`` and it has one: StepGap embeds its checker),
    given the resources its builder takes by keyword."""
    builder = (loaded.verifier_builder if embedded else None) or loaded.require("graph_builder")
    offered = {
        "search": lambda: resolve_search(search),
        "nli": lambda: _resolve_nli(nli),
        "judge": lambda: None if judge is None else resolve_model(judge),
    }
    accepted = list(inspect.signature(builder).parameters)
    # The first parameter takes the model: StepGap's checker builder names it ``judge``.
    resources = {key: make() for key, make in offered.items() if key in accepted[1:]}
    return builder(generator, config=config, **resources)


def agent_config(loaded: Any, values: Mapping[str, Any]) -> BaseModel | None:
    """``values`` as ``loaded``'s config model (its defaults for the rest).

    Raises:
        ConfigError: naming each field that is unknown or invalid.
    """
    model: type[BaseModel] | None = loaded.config
    if model is None:
        if values:
            raise ConfigError(f"agent {loaded.name!r} takes no config, got {', '.join(sorted(values))}")
        return None
    try:
        return model.model_validate(dict(values))
    except ValidationError as invalid:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in invalid.errors())
        raise ConfigError(f"agent {loaded.name!r} config: {problems}", source="config") from None


def resolve_model(model: Any) -> Any:
    """The generator a host names: ``None`` (the configured default, ``smollm2`` unless set), a model spec
    string, an evigraph generator, or a LangChain ``BaseChatModel``.

    Raises:
        ConfigError: anything else (the message names the type), or a bad spec.
    """
    from evigraph.generators.base import Generator

    if isinstance(model, Generator):
        return model
    if model is None or isinstance(model, str):
        from evigraph.config import load_settings
        from evigraph.generators.factory import make_generator

        overrides = {"generator.model": model} if model else {}
        return make_generator(load_settings(overrides).generator)
    from langchain_core.language_models import BaseChatModel

    if isinstance(model, BaseChatModel):
        from evigraph.generators.langchain_model import ChatModelGenerator

        return ChatModelGenerator(model)
    raise ConfigError(
        f"model must be a model spec, an evigraph Generator or a LangChain BaseChatModel, got {type(model).__name__}",
        source="model",
    )


def resolve_search(search: Any, *, retrieval: str | None = None) -> Any:
    """The search tool a host names: ``None``, a corpus name or directory (searched by ``retrieval``: ``bm25``,
    the default, ``dense`` or ``hybrid``), a ``/retrieve`` URL, or a search tool (anything with ``search`` and
    ``batch_search``; ``open_search(corpus=..., retrieval=...)`` makes one that searches any way)."""
    if search is None or (hasattr(search, "search") and hasattr(search, "batch_search")):
        if retrieval not in (None, "bm25"):
            raise ConfigError(
                "retrieval applies to a corpus named by its name or directory, not to a search tool",
                source="retrieval",
            )
        return search
    if isinstance(search, str):
        from evigraph.tools.search import open_search

        if search.startswith(("http://", "https://")):
            return open_search(retriever_url=search, retrieval=retrieval)
        return open_search(corpus=search, retrieval=retrieval)
    raise ConfigError(
        f"search must be a corpus name or directory, a /retrieve URL or a search tool, got {type(search).__name__}",
        source="search",
    )


def _resolve_nli(nli: Any) -> Any:
    if isinstance(nli, str):
        from evigraph.tools.nli import make_nli

        return make_nli(nli)
    return nli
