"""A verifier as a node of a host's LangGraph graph, and the conditional edge that guards with it.

::

    host.add_node("verify", verifier_node("veri-r1", model=chat_model, search="demo", inputs={"answer": "claim"}))
    host.add_conditional_edges("verify", verification_router(passed=END, failed="answer"))

The node reads the agent's input fields from the host state (``inputs`` maps host keys to them), runs the
verifier graph as its subgraph -- so ``stream(..., subgraphs=True)`` shows the verifier's own steps under the
node's namespace and an interrupt inside it pauses and resumes the host through the host's checkpointer -- and
writes the :class:`~evigraph.verification.Verification` to ``output`` and the number of checks so far to
``output + "_attempts"``. Mix :class:`VerificationState` into the host's state schema for both keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig, RunnableLambda
from typing_extensions import TypedDict

from evigraph.embed.verifier import Verifier
from evigraph.errors import ConfigError
from evigraph.verification import Verification

__all__ = ("VerificationState", "VerifierNode", "verification_router", "verifier_node")


class VerificationState(TypedDict, total=False):
    """The host state keys the node writes under the default ``output="verification"``."""

    verification: Verification
    verification_attempts: int


class VerifierNode(RunnableLambda[Mapping[str, Any], dict[str, Any]]):
    """What :func:`verifier_node` returns: the node, keeping its :class:`~evigraph.embed.verifier.Verifier` as
    ``verifier`` (:func:`~evigraph.embed.checkpoint.checkpoint_serializer` reads the classes it checkpoints)."""

    verifier: Verifier


def verifier_node(
    agent: str,
    *,
    model: Any = None,
    search: Any = None,
    inputs: Mapping[str, str] | None = None,
    output: str = "verification",
    nli: Any = None,
    pass_if: Callable[[Verification], bool] | None = None,
    **config: Any,
) -> VerifierNode:
    """A node for ``StateGraph.add_node`` that checks the host's state with ``agent`` (see the module docstring;
    ``model``, ``search``, ``nli``, ``pass_if`` and ``config`` as :class:`~evigraph.embed.verifier.Verifier`).

    Args:
        inputs: host key → the agent's input field (``{"answer": "claim"}``); fields not named here are read
            from host keys of the same name.
        output: the host key the verdict goes to.
    """
    verifier = Verifier(agent, model=model, search=search, nli=nli, pass_if=pass_if, **config)
    renames = dict(inputs or {})
    fields = _input_fields(verifier.input_schema)
    attempts = f"{output}_attempts"

    def agent_inputs(state: Mapping[str, Any]) -> dict[str, Any]:
        values = {field: state[host] for host, field in renames.items() if host in state}
        named = set(renames.values())
        values.update({f: state[f] for f in fields if f not in named and f not in values and f in state})
        return values

    def written(state: Mapping[str, Any], verdict: Verification) -> dict[str, Any]:
        return {output: verdict, attempts: int(state.get(attempts) or 0) + 1}

    async def acheck(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return written(state, await verifier.averify(agent_inputs(state), config=config))

    def check(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        # The verifier's graph is async: ``verify`` runs it on evigraph's one shared loop, through the host saver's
        # sync methods (a sync-only saver has no async ones).
        return written(state, verifier.verify(agent_inputs(state), config=config))

    node = VerifierNode(check, afunc=acheck, name=f"verify_{verifier.name.replace('-', '_')}")
    node.verifier = verifier
    return node


def verification_router(
    output: str = "verification", *, passed: str, failed: str, gave_up: str | None = None, max_repairs: int = 1
) -> Callable[[Mapping[str, Any]], str]:
    """A conditional edge after a :func:`verifier_node`: ``passed`` when the verdict passed; ``failed`` (the node
    that repairs: back to the host's model) while fewer than ``max_repairs`` repairs were tried; then ``gave_up``
    (default: ``passed``, the answer goes out with its failed verdict recorded).

    Raises (when routing):
        ConfigError: the state has no verdict, or no attempt count (add :class:`VerificationState`'s keys).
    """
    if max_repairs < 0:
        raise ConfigError(f"max_repairs must be >= 0, got {max_repairs}")
    attempts_key = f"{output}_attempts"
    give_up = gave_up if gave_up is not None else passed

    def route(state: Mapping[str, Any]) -> str:
        verdict = state.get(output)
        if verdict is None:
            raise ConfigError(f"no {output!r} in the state: route after a verifier_node writing it")
        if isinstance(verdict, Mapping):
            verdict = Verification.model_validate(verdict)
        if verdict.passed:
            return passed
        attempts = state.get(attempts_key)
        if attempts is None:
            raise ConfigError(
                f"no {attempts_key!r} in the state: add it to the host's state schema (VerificationState) so "
                "repairs can be counted"
            )
        return failed if attempts <= max_repairs else give_up

    return route


def _input_fields(schema: type | None) -> list[str]:
    if schema is None:
        return []
    import typing

    return list(typing.get_type_hints(schema))
