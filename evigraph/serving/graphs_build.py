"""What one LangGraph server run asks of an agent, read and checked, and the graph built from it once.

A run chooses in its config's ``configurable``: ``model`` (a model spec), ``search`` (a corpus name or
directory, or a ``/retrieve`` URL), ``retrieval`` (how a corpus is searched: ``bm25``, ``dense``, ``hybrid``),
``nli`` (an NLI checkpoint directory) and any field of the agent's config (``max_searches`` ...). What it leaves
out comes from the server's environment: ``EVIGRAPH_MODEL`` and the rest of evigraph's settings
(:func:`~evigraph.config.load_settings`: ``EVIGRAPH_*`` variables, ``evigraph.toml``, an agent's
``[agents.NAME]`` section), ``EVIGRAPH_SEARCH``, ``EVIGRAPH_RETRIEVAL`` and ``EVIGRAPH_NLI``. Other keys of
``configurable`` are the server's own (``thread_id``, ``run_id``, ...) and are left alone. Every value is checked
before anything loads; a bad one raises a :class:`~evigraph.errors.ConfigError` naming its key.

The server calls a graph factory for every run and for every read of a graph (Studio drawing it, its schemas, a
thread's state). A read gets the graph built over stand-ins that load nothing -- the same nodes and edges -- and a
run the real one. Built graphs are kept, the last :data:`KEPT_GRAPHS` run choices, so a server does not rebuild a
graph per run; models, search tools and NLI engines are kept while a kept graph uses them, so agents served with
one model share it, and each is built once even when runs ask for it at the same moment.

A LangChain model spec (``langchain:module:attr``) imports and calls code: a run may not name one, only the
server's environment.
"""

from __future__ import annotations

import inspect
import json
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, MutableMapping, Sequence
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from evigraph.config import GeneratorConfig
from evigraph.errors import ConfigError, ToolError

__all__ = (
    "KEPT_GRAPHS",
    "RETRIEVAL_ENV",
    "SERVING_ENV",
    "ServedContext",
    "ServedRun",
    "read_run",
    "served_graph",
)

SERVING_ENV: Mapping[str, str] = {"search": "EVIGRAPH_SEARCH", "nli": "EVIGRAPH_NLI"}
"""The server's default search tool and NLI engine, by the ``configurable`` key a run overrides them with."""
RETRIEVAL_ENV = "EVIGRAPH_RETRIEVAL"
"""The server's default ``retrieval`` of a corpus search tool (``configurable.retrieval`` overrides it)."""

KEPT_GRAPHS = 32
"""Built graphs kept (least recently used out first)."""

ValueT = TypeVar("ValueT")


class ServedRun(BaseModel):
    """What one run is served with: every value checked, nothing loaded."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    agent: str
    embedded: bool
    """The agent's embedded verifier graph (``AgentSpec.verifier_builder``: StepGap's checker)."""
    generator: GeneratorConfig
    search: str | None
    """Only for graphs that take a search tool."""
    retrieval: str | None = None
    """How ``search`` is searched when it names a corpus (``None``: BM25)."""
    nli: str | None
    """Only for graphs that take an NLI engine."""
    config: BaseModel | None
    """The agent's config: its defaults, the server's settings, then the run's fields."""

    def key(self) -> tuple[Hashable, ...]:
        """What tells two builds apart."""
        settings = None if self.config is None else self.config.model_dump_json()
        generator = self.generator.model_dump_json()
        return (self.agent, self.embedded, generator, self.search, self.retrieval, self.nli, settings)


def read_run(
    agent: str,
    configurable: Mapping[str, Any] | None,
    *,
    embedded: bool = False,
    env: Mapping[str, str] | None = None,
) -> ServedRun:
    """What a run of ``agent`` asks for (its ``configurable``), over the server's environment ``env``.

    Raises:
        ConfigError: an unknown agent, or a bad value; the message names the key (``configurable.model``,
            ``configurable.max_searches``, ``EVIGRAPH_MODEL`` ...).

    Example:
        >>> read_run("seva", {"model": "scripted:replies.json", "max_new_tokens": 64}, env={}).config.max_new_tokens
        64
        >>> read_run("seva", {"max_new_tokens": "many"}, env={})
        Traceback (most recent call last):
        ...
        evigraph.errors.ConfigError: configurable.max_new_tokens: agent 'seva': Input should be a valid integer, ...
    """
    from evigraph.config import agent_config, load_settings
    from evigraph.registry import get_agent

    chosen = dict(configurable or {})
    loaded = get_agent(agent).load()
    env = os.environ if env is None else env
    # The serving variables are not settings: load_settings refuses EVIGRAPH_* names it does not know.
    served_only = {*SERVING_ENV.values(), RETRIEVAL_ENV}
    settings = load_settings(env={name: value for name, value in env.items() if name not in served_only})
    generator = settings.generator
    model = _text(chosen, "model")
    if model is not None:
        generator = generator.model_copy(update={"model": model})
    _check_model(generator.model, "configurable.model" if model is not None else settings.source("generator.model"))
    taken = _resources(loaded, embedded=embedded)
    named = {key: _text(chosen, key) or env.get(name) or None for key, name in SERVING_ENV.items()}
    resources = {key: value if key in taken else None for key, value in named.items()}
    retrieval = _retrieval(resources["search"], _text(chosen, "retrieval"), env.get(RETRIEVAL_ENV) or None)
    config = None
    if loaded.config is not None:
        base = agent_config(settings, loaded.name, loaded.config)
        fields = {key: value for key, value in chosen.items() if key in loaded.config.model_fields}
        try:
            config = loaded.config.model_validate({**base.model_dump(exclude_unset=True), **fields})
        except ValidationError as invalid:
            problem = invalid.errors(include_url=False)[0]
            field = ".".join(map(str, problem["loc"])) or "config"
            raise ConfigError(f"agent {loaded.name!r}: {problem['msg']}", source=f"configurable.{field}") from None
    return ServedRun(
        agent=loaded.name, embedded=embedded, generator=generator, config=config, retrieval=retrieval, **resources
    )


def served_graph(run: ServedRun, *, execute: bool) -> Any:
    """``run``'s compiled graph: the real one (``execute``: a run), else one over stand-ins that load nothing (a
    read: drawing, schemas, state). Blocking (a model may load): call it in a worker thread.

    Raises:
        ConfigError: a bad model spec, search tool or NLI checkpoint, or a graph that needs a search tool
            without one.
    """
    return _GRAPHS.get((*run.key(), execute), lambda: _build(run, execute=execute))


# -- building --------------------------------------------------------------------------------------------------
class _Once(Generic[ValueT]):
    """Values built on demand into ``store``, each key built once even when threads ask at the same moment;
    ``limit`` keeps the most recently used (``store`` an ``OrderedDict``)."""

    def __init__(self, store: MutableMapping[Hashable, ValueT], limit: int | None = None) -> None:
        self._store, self._limit = store, limit
        self._guard = threading.Lock()
        self._building: dict[Hashable, threading.Lock] = {}

    def _kept(self, key: Hashable) -> ValueT | None:
        value = self._store.get(key)
        if value is not None and isinstance(self._store, OrderedDict):
            self._store.move_to_end(key)
        return value

    def get(self, key: Hashable, build: Callable[[], ValueT]) -> ValueT:
        with self._guard:
            value = self._kept(key)
            if value is not None:
                return value
            lock = self._building.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                value = self._kept(key)
            if value is not None:
                return value
            try:
                value = build()
            finally:
                with self._guard:
                    self._building.pop(key, None)
            with self._guard:
                self._store[key] = value
                while self._limit is not None and len(self._store) > self._limit:
                    self._store.popitem(last=False)  # type: ignore[call-arg]
            return value


_GRAPHS: _Once[Any] = _Once(OrderedDict(), limit=KEPT_GRAPHS)
_GENERATORS: _Once[Any] = _Once(weakref.WeakValueDictionary())
_SEARCH_TOOLS: _Once[Any] = _Once(weakref.WeakValueDictionary())
_NLI_ENGINES: _Once[Any] = _Once(weakref.WeakValueDictionary())


class _Unopened:
    """The search tool of a graph built to be read, not run."""

    def search(self, query: str, k: int = 3) -> list[Any]:
        raise ToolError("this graph was built to be drawn, not run")

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Any]]:
        raise ToolError("this graph was built to be drawn, not run")


def _build(run: ServedRun, *, execute: bool) -> Any:
    from evigraph.embed.agent import compile_graph, resolve_search
    from evigraph.generators.factory import make_generator
    from evigraph.generators.scripted import ScriptedGenerator
    from evigraph.registry import get_agent

    loaded = get_agent(run.agent).load()
    search: Any = None
    nli: Any = None
    if execute:
        generator = _GENERATORS.get(run.generator.model_dump_json(), lambda: make_generator(run.generator))
        if run.search:
            search = _SEARCH_TOOLS.get(
                (run.search, run.retrieval), lambda: resolve_search(run.search, retrieval=run.retrieval)
            )
        if run.nli:
            nli = _NLI_ENGINES.get(run.nli, lambda: _make_nli(run.nli or ""))
    else:
        generator = ScriptedGenerator([], name="not loaded: a graph built to be drawn")
        search = _Unopened() if "search" in _resources(loaded, embedded=run.embedded) else None
    try:
        graph = compile_graph(loaded, generator, run.config, search=search, nli=nli, embedded=run.embedded)
    except ConfigError as error:
        if search is None and "search" in _resources(loaded, embedded=run.embedded):
            hint = f"give it a corpus or a /retrieve URL: configurable.search or {SERVING_ENV['search']}"
            raise ConfigError(f"{error}; {hint}") from None
        raise
    if getattr(graph, "context_schema", None) is not None:
        graph = graph.copy(update={"context_schema": ServedContext})
    return graph


class ServedContext(BaseModel):
    """The context of a served run: nothing. The server hands a run's ``configurable`` to the graph as its
    context too, and builds the graph's context schema from it: ``RunContext(**configurable)`` would fail on
    ``model``, and a dict passed on to a subgraph (StepGap's rollout) fails there. The factory chose the run's
    model, so the nodes find no :class:`~evigraph.graphs.kit.context.RunContext` and use the graph's own."""

    model_config = ConfigDict(extra="ignore", frozen=True)


def _make_nli(checkpoint: str) -> Any:
    from evigraph.tools.nli import make_nli

    return make_nli(checkpoint)


def _resources(loaded: Any, *, embedded: bool) -> set[str]:
    """The resources (``search``, ``nli``) the served graph's builder takes."""
    builder = (loaded.verifier_builder if embedded else None) or loaded.require("graph_builder")
    return set(SERVING_ENV) & set(inspect.signature(builder).parameters)


def _text(chosen: Mapping[str, Any], key: str) -> str | None:
    value = chosen.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"expected a non-empty string, got {json.dumps(value)[:80]}", source=f"configurable.{key}")
    return value.strip()


def _retrieval(search: str | None, chosen: str | None, default: str | None) -> str | None:
    """The run's retrieval (``configurable.retrieval``, else :data:`RETRIEVAL_ENV`), checked against its search
    without opening anything; ``None`` when the graph searches nothing."""
    retrieval = chosen or default
    if search is None or retrieval is None:
        return None
    from evigraph.tools.search import check_retrieval

    url = search.startswith(("http://", "https://"))
    try:
        check_retrieval(corpus=None if url else search, retriever_url=search if url else None, retrieval=retrieval)
    except ConfigError as error:
        source = "configurable.retrieval" if chosen else RETRIEVAL_ENV
        raise ConfigError(str(error).removeprefix(f"{error.source}: "), source=source) from None
    return retrieval


def _check_model(spec: str, source: str | None) -> None:
    from evigraph.generators.factory import parse_model_spec

    try:
        parsed = parse_model_spec(spec)
    except ConfigError as error:
        raise ConfigError(str(error).removeprefix(f"{error.source}: "), source=source) from None
    if parsed.kind == "langchain" and source == "configurable.model":
        raise ConfigError(
            "a run may not name a LangChain model (it imports code); set it on the server: EVIGRAPH_MODEL",
            source=source,
        )
