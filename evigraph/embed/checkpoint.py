"""evigraph's types in a host's checkpoint: the serializer that loads them.

LangGraph's ``JsonPlusSerializer`` rebuilds a pydantic model from a checkpoint by its module and name. By default
it rebuilds any class but logs "Deserializing unregistered type ..." for one not in its built-in safe list; in
strict mode (``LANGGRAPH_STRICT_MSGPACK=true``) it rebuilds only those and the classes of the graphs' state
schemas, and hands anything else back as a plain dict. A class is registered by listing it in the serializer's
``allowed_msgpack_modules`` (LangGraph's documented way); an explicit list also blocks every class not on it, so
:func:`checkpoint_serializer` lists the verdict's classes (:data:`VERIFICATION_TYPES`, which also travel untyped
as a tool message's artifact), every class an embedded verifier's own graph checkpoints while it is paused, and the
host's own schemas. (A synchronous host's saver: :mod:`evigraph.embed.saver`.)
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Iterable
from typing import Any

import typing_extensions
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from evigraph.embed.verifier import Verifier
from evigraph.verification import CheckedSpan, CitedEvidence, StepVerdict, Verification

__all__ = ("VERIFICATION_TYPES", "checkpoint_serializer", "checkpoint_types")

VERIFICATION_TYPES: tuple[type[BaseModel], ...] = (Verification, CitedEvidence, StepVerdict, CheckedSpan)
"""The verdict's classes: what the node, the middleware and the tool (as its message's artifact) put in a host's
state."""


def checkpoint_serializer(*allow: Any) -> JsonPlusSerializer:
    """LangGraph's serializer, for a host's saver (``SqliteSaver(conn, serde=checkpoint_serializer(State, node))``),
    that loads :data:`VERIFICATION_TYPES` and everything in ``allow`` without a warning, in LangGraph's default
    and strict modes: see :func:`checkpoint_types` for what ``allow`` takes. Any other class is blocked (handed back
    as a dict), as in strict mode."""
    return JsonPlusSerializer(allowed_msgpack_modules=sorted(checkpoint_types(*allow)))


def checkpoint_types(*allow: Any) -> set[tuple[str, str]]:
    """``(module, name)`` of :data:`VERIFICATION_TYPES` and of each class ``allow`` names: an embedded verifier
    (a :class:`~evigraph.embed.verifier.Verifier`, or a node, tool or middleware holding one as ``verifier``) gives
    the classes of its graph's schemas, the ones its paused run leaves in the checkpoint; a class (the host's state
    schema, a model of its own) gives itself and the classes its fields name; a ``(module, name)`` pair itself.

    Raises:
        TypeError: anything else (the message names its type).
    """
    found: set[type] = set()
    pairs: set[tuple[str, str]] = set()
    for item in (*VERIFICATION_TYPES, *allow):
        verifier = getattr(item, "verifier", item)
        if isinstance(item, tuple) and len(item) == 2 and all(isinstance(part, str) for part in item):
            pairs.add((item[0], item[1]))
        elif isinstance(item, type):
            _collect(item, found)
        elif isinstance(verifier, Verifier):
            for kind in _graph_schemas(verifier.graph):
                _collect(kind, found)
        else:
            raise TypeError(f"cannot allow {type(item).__name__}: give a class, a (module, name) pair or a verifier")
    return pairs | {(kind.__module__, kind.__name__) for kind in found}


def _graph_schemas(graph: Any) -> Iterable[Any]:
    """The schemas LangGraph's strict mode reads a compiled state graph's classes from, for it and its subgraphs."""
    graphs = [graph, *(sub for _, sub in graph.get_subgraphs(recurse=True))]
    for compiled in graphs:
        builder = getattr(compiled, "builder", None)
        if builder is None:
            continue
        yield from (builder.state_schema, builder.input_schema, builder.output_schema, builder.context_schema)
        yield from (node.input_schema for node in builder.nodes.values())


def _collect(kind: Any, found: set[type], seen: set[int] | None = None) -> None:
    """Add the classes msgpack rebuilds by name (pydantic models, dataclasses, enums) reachable from ``kind``."""
    seen = set() if seen is None else seen
    if id(kind) in seen:
        return
    seen.add(id(kind))
    fields: Iterable[Any] = ()
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        found.add(kind)
        fields = [field.annotation for field in kind.model_fields.values()]
    elif isinstance(kind, type) and dataclasses.is_dataclass(kind):
        found.add(kind)
        fields = _hints(kind).values()
    elif isinstance(kind, type) and issubclass(kind, enum.Enum):
        found.add(kind)
    elif typing_extensions.is_typeddict(kind):
        fields = _hints(kind).values()
    for field in (*fields, *typing.get_args(kind)):  # and generics' arguments: list[X], X | None, Annotated[X, ...]
        _collect(field, found, seen)


def _hints(kind: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(kind, include_extras=True)
    except Exception:  # an unresolvable forward reference: its fields are not followed
        return {}
