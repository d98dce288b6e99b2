"""A verifier as a LangChain tool that a host's model calls.

::

    agent = create_agent(model=chat_model, tools=[verifier_tool("veri-r1", model=chat_model, search="demo")])

The tool's args schema is the agent's input fields (Veri-R1: ``claim``; RLSeek: ``task``, ``source``,
``response``, ``question`` ...): those its spec names (``AgentSpec.tool_inputs``), by default all but ``id`` and
``gold`` (run bookkeeping and the reward's answer key, not a model's to fill), required where the agent requires
them and described by the input schema's attribute docstrings; other arguments are dropped. The tool answers
``(content, artifact)`` (``response_format="content_and_artifact"``): the content is
:meth:`~evigraph.verification.Verification.summary`, a short verdict that quotes nothing from the checked text, and
the artifact the :class:`~evigraph.verification.Verification` itself (``ToolMessage.artifact``).

Nothing the model sends ends the host's run: bad arguments, a blank input or any error in the check come back as a
tool message with ``status="error"`` that says what was wrong (and no artifact); a run whose backend failed comes
back with ``status="error"`` and its failed verdict (``passed=False``, ``error`` set) as the artifact. LangGraph's
interrupts inside the verifier still pause the host.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import operator
import textwrap
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, NotRequired, Required, Union, get_args, get_origin

import typing_extensions
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError, create_model

from evigraph.embed.saver import sync_host_config
from evigraph.embed.verifier import Verifier
from evigraph.errors import ConfigError
from evigraph.event_loop import run_sync
from evigraph.verification import Verification

__all__ = ("VerifierTool", "tool_args_schema", "verifier_tool")

NOT_FOR_A_MODEL = frozenset({"id", "gold"})
"""Input fields a tool leaves out of its args schema unless its spec names them: a record's id and the reward's
answer key."""


class VerifierTool(StructuredTool):
    """A :class:`~langchain_core.tools.StructuredTool` whose message is marked ``status="error"`` when the verifier
    run itself failed (its verdict carries ``error``), so a host tells a broken check from a failed claim. It keeps its
    :class:`~evigraph.embed.verifier.Verifier` as ``verifier`` (for :func:`~evigraph.embed.checkpoint_serializer`)."""

    verifier: Verifier | None = Field(default=None, exclude=True)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return _mark_failed_run(super().run(*args, **kwargs))

    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        return _mark_failed_run(await super().arun(*args, **kwargs))


def verifier_tool(
    agent: str,
    *,
    model: Any = None,
    search: Any = None,
    name: str | None = None,
    description: str | None = None,
    nli: Any = None,
    pass_if: Callable[[Verification], bool] | None = None,
    **config: Any,
) -> BaseTool:
    """A LangChain tool that checks its arguments with ``agent`` (see the module docstring; ``model``, ``search``,
    ``nli``, ``pass_if`` and ``config`` as :class:`~evigraph.embed.verifier.Verifier`).

    Args:
        name: the tool's name (default: the agent's ``AgentSpec.tool_name``, else ``verify_`` and its name).
        description: what the tool tells the model (default: ``AgentSpec.tool_description``, else its description).

    Raises:
        ConfigError: an unknown agent, a bad model, search or config (when building, not when called).
    """
    from evigraph.registry import get_agent

    verifier = Verifier(agent, model=model, search=search, nli=nli, pass_if=pass_if, **config)
    spec = get_agent(verifier.name)
    tool_name = name or spec.tool_name or f"verify_{verifier.name.replace('-', '_')}"
    args_schema = tool_args_schema(verifier.input_schema, name=tool_name, fields=spec.tool_inputs or None)
    first = next(iter(args_schema.model_fields), None)

    async def acheck(*positional: str, _run_config: RunnableConfig, **values: Any) -> tuple[str, Verification]:
        if positional and first is not None:  # tool.invoke("a claim"): LangChain hands a string over positionally
            values = {first: positional[0], **values}
        # An optional argument the model left out arrives as None: the agent sees it absent, as in its own runs.
        values = {key: value for key, value in values.items() if value is not None}
        try:
            verdict = await verifier.averify(values, config=_run_config)
        except Exception as error:
            if _control_flow(error):
                raise
            if isinstance(error, ConfigError):
                raise ToolException(f"{tool_name}: {error}") from error
            if isinstance(error, ValidationError):  # the agent's own models refused an argument's content
                raise ToolException(f"{tool_name}: invalid input: {_problems(error)}") from error
            raise ToolException(f"{tool_name} failed: {type(error).__name__}: {error}") from error
        return verdict.summary(), verdict

    def check(*positional: str, _run_config: RunnableConfig, **values: Any) -> tuple[str, Verification]:
        # The verifier's graph is async: a synchronous host's call runs on evigraph's one shared loop, through the
        # host saver's sync methods (a sync-only saver has no async ones).
        synchronous = sync_host_config(_run_config)
        return run_sync(lambda: acheck(*positional, _run_config=synchronous, **values))

    return VerifierTool.from_function(
        func=check,
        coroutine=acheck,
        name=tool_name,
        description=description or spec.tool_description or spec.description,
        args_schema=args_schema,
        response_format="content_and_artifact",
        handle_tool_error=True,
        handle_validation_error=_invalid_arguments(tool_name),
        verifier=verifier,
    )


def tool_args_schema(input_schema: type | None, *, name: str, fields: Sequence[str] | None = None) -> type[BaseModel]:
    """The pydantic model of a verifier's input TypedDict: its ``fields`` (default: all but
    :data:`NOT_FOR_A_MODEL`), required where the TypedDict requires them, the others defaulting to ``None``, each
    described by its attribute docstring where it has one. The blank-text marks stay with the verifier, which
    checks them on every call.

    Raises:
        ConfigError: ``fields`` names a field the schema does not have.
    """
    hints = typing.get_type_hints(input_schema, include_extras=True) if input_schema is not None else {}
    unknown = sorted(set(fields or ()) - set(hints))
    if unknown:
        have = ", ".join(hints) or "none"
        raise ConfigError(f"tool {name!r}: no input field(s) {', '.join(unknown)} (the input schema has: {have})")
    total = getattr(input_schema, "__total__", True)
    docs = _attribute_docs(input_schema) if input_schema is not None else {}
    args: dict[str, Any] = {}
    for field, hint in hints.items():
        if field in NOT_FOR_A_MODEL if fields is None else field not in fields:
            continue
        required, kind = _unwrap(hint)
        described = {"description": docs[field]} if field in docs else {}
        if required if required is not None else total:
            args[field] = (kind, Field(..., **described))
        else:
            args[field] = (kind | None, Field(None, **described))
    title = "".join(word.capitalize() for word in name.split("_")) + "Args"
    return create_model(title, __doc__=f"The arguments of {name}.", **args)


def _unwrap(hint: Any) -> tuple[bool | None, Any]:
    """``(required, type)`` of a TypedDict field's hint, without ``Required``/``NotRequired`` and ``Annotated``."""
    required = None
    if get_origin(hint) in (Required, NotRequired):
        required = get_origin(hint) is Required
        hint = get_args(hint)[0]
    if hasattr(hint, "__metadata__"):
        hint = hint.__origin__
    return required, _parsed_form(hint)


def _parsed_form(kind: Any) -> Any:
    """``Model | dict[...]`` (a pydantic model or its dict form) as ``Model``: a tool's arguments are parsed from
    JSON anyway, and the model then sees the structure it must send instead of "any object"."""
    members = get_args(kind) if get_origin(kind) in (Union, types.UnionType) else ()
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if not models:
        return kind
    kept = [m for m in members if m is not dict and get_origin(m) is not dict]
    return functools.reduce(operator.or_, kept)


def _attribute_docs(schema: type) -> dict[str, str]:
    """Field → the docstring under it in the class source (and its TypedDict bases'); empty without source."""
    docs: dict[str, str] = {}
    bases = [base for base in getattr(schema, "__orig_bases__", ()) if typing_extensions.is_typeddict(base)]
    for klass in [*reversed(bases), schema]:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for statement, after in itertools.pairwise(body):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[statement.target.id] = " ".join(after.value.value.split())
    return docs


def _invalid_arguments(tool_name: str) -> Callable[[Any], str]:
    def message(error: Any) -> str:
        problems = _problems(error) if isinstance(error, ValidationError) else str(error)
        return f"{tool_name}: invalid arguments: {problems}"

    return message


def _problems(error: ValidationError) -> str:
    """Field paths and pydantic's messages only: the model's own values are not echoed back to it."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors())


def _control_flow(error: Exception) -> bool:
    """LangGraph's interrupts and commands, and a resume value an interrupt refused: they must reach the host."""
    from langgraph.errors import GraphBubbleUp, is_invalid_resume

    return isinstance(error, GraphBubbleUp) or is_invalid_resume(error)


def _mark_failed_run(output: Any) -> Any:
    if isinstance(output, ToolMessage) and isinstance(output.artifact, Verification) and output.artifact.error:
        output.status = "error"
    return output
