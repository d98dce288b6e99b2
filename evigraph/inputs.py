"""What a graph's input must hold before a run starts: its required keys, and text in the fields its input
schema marks :data:`NonBlank` (an empty claim used to load a model, run for minutes and conclude nothing).

An agent's input schema stays a plain ``TypedDict`` (LangGraph compiles it as the graph's input); the mark is
metadata LangGraph ignores::

    class MyInputs(TypedDict, total=False):
        claim: Required[NonBlank]
        source: Required[Annotated[str | dict[str, Any], NOT_BLANK]]

:func:`check_inputs` reads the marks; every agent command calls it (``AgentRun.inputs``) before any model loads.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, Required, get_args, get_origin

from evigraph.errors import ConfigError

__all__ = ("NOT_BLANK", "NonBlank", "NotBlank", "check_inputs", "is_blank", "required_keys")


@dataclass(frozen=True)
class NotBlank:
    """Marks an input field that must hold text: a string with a non-space character, or a non-empty list or
    mapping whose strings all do. Not callable, so LangGraph does not take it for a reducer."""


NOT_BLANK = NotBlank()
NonBlank = Annotated[str, NOT_BLANK]
"""A text input field that may not be empty or whitespace only."""


def is_blank(value: Any) -> bool:
    """Whether ``value`` holds no text (see :class:`NotBlank`)."""
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, Mapping):
        return not value
    if isinstance(value, Sequence):
        return not value or any(isinstance(item, str) and not item.strip() for item in value)
    return value is None


def _unwrap(hint: Any) -> tuple[bool | None, tuple[Any, ...]]:
    """``(required, metadata)`` of a TypedDict field's hint: ``required`` is ``None`` unless ``Required`` or
    ``NotRequired`` says, ``metadata`` the ``Annotated`` extras."""
    required = None
    origin = get_origin(hint)
    if origin in (Required, NotRequired):
        required = origin is Required
        hint = get_args(hint)[0]
    metadata = getattr(hint, "__metadata__", ()) if get_origin(hint) is Annotated else ()
    return required, tuple(metadata)


@functools.cache
def _fields(schema: type) -> tuple[tuple[str, bool | None, tuple[Any, ...]], ...]:
    """``(key, required, metadata)`` of each field of a TypedDict, once per schema: resolving string annotations
    (``get_type_hints``) took a fifth of a millisecond, on every request a server checks."""
    return tuple((key, *_unwrap(hint)) for key, hint in typing.get_type_hints(schema, include_extras=True).items())


def required_keys(schema: type) -> tuple[str, ...]:
    """The keys a TypedDict input schema requires, in declaration order. Read from the type hints, not
    ``__required_keys__``, which misses ``Required[...]`` written as a string (``from __future__ import
    annotations``) on Python 3.11."""
    total = getattr(schema, "__total__", True)
    return tuple(key for key, required, _ in _fields(schema) if required or (required is None and total))


def check_inputs(schema: type, inputs: Mapping[str, Any], *, where: str | None = None) -> None:
    """Refuse ``inputs`` for a graph whose input schema is the TypedDict ``schema``: a required key missing, or a
    :data:`NOT_BLANK` field without text.

    Args:
        where: what the inputs came from (a record, a file), put before the message.

    Raises:
        ConfigError: naming the field.
    """
    total = getattr(schema, "__total__", True)
    for key, required, metadata in _fields(schema):
        if key not in inputs:
            if required or (required is None and total):
                raise ConfigError(f"input {key!r} is missing (required by {schema.__name__})", source=where)
            continue
        if any(isinstance(meta, NotBlank) for meta in metadata) and is_blank(inputs[key]):
            raise ConfigError(f"input {key!r} is empty or blank", source=where)
