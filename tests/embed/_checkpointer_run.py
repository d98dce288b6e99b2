"""One step of a host run on a SQLite checkpoint file, in a process of its own (``test_checkpointers.py``).

``python -m tests.embed._checkpointer_run FORM AGENT SAVER STEP DB [--serde]``:

- FORM: ``node`` (a ``StateGraph`` host with a ``verifier_node``; ``untyped-node``: its state keeps the verdict
  under ``Any``), ``tool`` (a ``create_agent`` host calling a ``verifier_tool``) or ``middleware`` (a
  ``create_agent`` host with ``VerificationMiddleware``, ``on_fail="annotate"``); the verifier is AGENT's scripted
  model (:mod:`tests.embed.hosts`), which asks a human (``interrupt``) before its verdict;
- SAVER: ``sqlite`` (``SqliteSaver``, sync-only: the host runs with ``invoke``) or ``aiosqlite``
  (``AsyncSqliteSaver``, async-only: ``ainvoke``);
- STEP: ``start`` (an uninterrupted baseline on thread ``baseline``, then thread ``t`` until the verifier's
  interrupt), ``resume`` (thread ``t`` with ``Command(resume="yes")``) or ``read`` (thread ``t``'s verdict from
  the checkpoint);
- ``--serde``: the saver's serializer is ``evigraph.embed.checkpoint_serializer``, else LangGraph's default.

LangGraph reads ``LANGGRAPH_STRICT_MSGPACK`` when it is imported: the caller sets it for the process. Prints one
JSON object: ``paused``, ``verdict`` (the verdict dumped; ``None`` before it; a tool's error text), ``verdict_type``,
``baseline`` (start only) and every warning logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import sys
import typing
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

import aiosqlite
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel

from evigraph.embed import (
    VerificationMiddleware,
    VerificationState,
    checkpoint_serializer,
    verifier_node,
    verifier_tool,
)
from tests.embed import hosts
from tests.embed._interrupt_run import RENAMES, Collect
from tests.embed.test_middleware import ScriptedChat
from tests.embed.test_tool import ToolCallingModel

ASK = {"on": False}
"""Whether the scripted verifier asks before its verdict (off for the baseline)."""


def ask() -> None:
    if ASK["on"]:
        approved = interrupt({"ask": "may the verifier give its verdict?"})
        assert approved == "yes", approved


def node_host(
    agent: str, serde: bool, *, typed: bool = True
) -> tuple[StateGraph, dict[str, Any], Callable[[dict[str, Any]], Any], Any]:
    case = hosts.case(agent, ask=ask)
    inputs = dict(case.inputs_fail)
    field = RENAMES[agent]
    state = {("answer" if key == field else key): value for key, value in inputs.items()}
    # Untyped: the host keeps the verdict under ``Any``, so no state schema names its class.
    keys = typing.get_type_hints(VerificationState) if typed else {"verification": Any, "verification_attempts": int}
    schema = TypedDict("Host", {**keys, **dict.fromkeys(state, Any)}, total=False)  # type: ignore[misc]
    node = verifier_node(agent, model=case.generator_fail, inputs={"answer": field}, **case.extra)
    host = StateGraph(schema)
    host.add_node("verify", node)
    host.add_edge(START, "verify")
    host.add_edge("verify", END)
    return host, state, lambda values: values.get("verification"), (schema, node) if serde else None


def tool_host(agent: str, serde: bool) -> tuple[Any, dict[str, Any], Callable[[dict[str, Any]], Any], Any]:
    case = hosts.case(agent, ask=ask)
    tool = verifier_tool(agent, model=case.generator_pass, **case.extra)
    model = ToolCallingModel(tool=tool.name, args=case.inputs_pass)

    def verdict(values: dict[str, Any]) -> Any:
        """The tool message's artifact; its text when it has none (an error the tool reported)."""
        found = [m for m in values.get("messages", ()) if isinstance(m, ToolMessage)]
        return (found[-1].artifact or found[-1].text) if found else None

    return (model, [tool], []), {"messages": [HumanMessage(hosts.QUESTION)]}, verdict, (tool,) if serde else None


def middleware_host(agent: str, serde: bool) -> tuple[Any, dict[str, Any], Callable[[dict[str, Any]], Any], Any]:
    case = hosts.case(agent, ask=ask)
    guard = VerificationMiddleware(agent, model=case.generator_fail, on_fail="annotate", **case.extra)
    model = ScriptedChat(script=[hosts.WRONG])
    request = {"messages": [HumanMessage(hosts.QUESTION)]}
    return (model, [], [guard]), request, lambda values: values.get("verification"), (guard,) if serde else None


def untyped_node_host(agent: str, serde: bool) -> tuple[StateGraph, dict[str, Any], Callable[..., Any], Any]:
    return node_host(agent, serde, typed=False)


HOSTS = {"node": node_host, "untyped-node": untyped_node_host, "tool": tool_host, "middleware": middleware_host}
Run = Callable[[Any, str], dict[str, Any]]
Read = Callable[[str], dict[str, Any]]


def compiled(form: str, built: Any, saver: BaseCheckpointSaver[Any]) -> Any:
    if form.endswith("node"):
        return built.compile(checkpointer=saver)
    model, tools, middleware = built
    return create_agent(model=model, tools=tools, middleware=middleware, checkpointer=saver)


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def host_calls(form: str, built: Any, kind: str, db: str, serde: Any) -> tuple[Run, Read]:
    """Run and read the host: a synchronous host on ``SqliteSaver``; an async one on ``AsyncSqliteSaver``, each
    call on a loop (and connection) of its own, as separate requests of a server would."""
    if kind == "sqlite":
        app = compiled(form, built, SqliteSaver(sqlite3.connect(db, check_same_thread=False), serde=serde))
        return (lambda value, name: app.invoke(value, thread(name))), (lambda name: app.get_state(thread(name)).values)

    async def on_saver(use: Callable[[Any], Awaitable[Any]]) -> Any:
        async with aiosqlite.connect(db) as conn:
            return await use(compiled(form, built, AsyncSqliteSaver(conn, serde=serde)))

    def run(value: Any, name: str) -> dict[str, Any]:
        return asyncio.run(on_saver(lambda app: app.ainvoke(value, thread(name))))

    def read(name: str) -> dict[str, Any]:
        return asyncio.run(on_saver(lambda app: app.aget_state(thread(name)))).values

    return run, read


def main(form: str, agent: str, kind: str, step: str, db: str, serde: bool) -> dict[str, Any]:
    built, request, verdict_of, allow = HOSTS[form](agent, serde)
    run, read = host_calls(form, built, kind, db, None if allow is None else checkpoint_serializer(*allow))
    result: dict[str, Any] = {}
    if step == "start":
        result["baseline"] = dumped(verdict_of(run(request, "baseline")))
        ASK["on"] = True
        values = run(request, "t")
    elif step == "resume":
        ASK["on"] = True
        values = run(Command(resume="yes"), "t")
    else:
        values = read("t")
    verdict = verdict_of(values)
    return {
        **result,
        "paused": "__interrupt__" in values,
        "verdict_type": type(verdict).__name__,
        "verdict": dumped(verdict),
    }


def dumped(verdict: Any) -> Any:
    return verdict.model_dump(mode="json") if isinstance(verdict, BaseModel) else verdict


if __name__ == "__main__":
    collected = Collect()
    logging.getLogger().addHandler(collected)
    form, agent, kind, step, db, *flags = sys.argv[1:]
    outcome = main(form, agent, kind, step, db, "--serde" in flags)
    print(json.dumps({**outcome, "warnings": collected.messages}))
