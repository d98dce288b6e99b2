"""A host graph with a ``verifier_node`` and a checkpointer, interrupted inside the verifier and resumed.

Invoked by ``test_node.py`` in a fresh process, because LangGraph reads ``LANGGRAPH_STRICT_MSGPACK`` when it is
imported. The scripted model asks a human (``langgraph.types.interrupt``) before its verdict turn; the host is
resumed with ``Command(resume=...)``, through ``ainvoke`` and through ``invoke``. Prints one JSON object: the
uninterrupted verdict, the resumed ones, the verdict read back from the checkpoint, and every warning logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import typing
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from evigraph.embed import Verification, VerificationState, verifier_node
from tests.embed import hosts

ASK = {"on": False}
"""Whether the scripted model asks before its verdict (off for the uninterrupted baseline)."""
RENAMES = {"veri-r1": "claim", "rlseek": "response", "seva": "claim", "rag-zeval": "candidates", "stepgap": "trace"}
"""The agent field the host's ``answer`` key feeds; the other fields keep their names."""


def ask() -> None:
    if ASK["on"]:
        approved = interrupt({"ask": "may the verifier give its verdict?"})
        assert approved == "yes", approved


def build(agent: str) -> tuple[Any, dict[str, Any]]:
    case = hosts.case(agent, ask=ask)
    field = RENAMES[agent]
    values = dict(case.inputs_fail)
    state = {("answer" if key == field else key): value for key, value in values.items()}
    schema = TypedDict(  # type: ignore[misc]
        "Host", {**typing.get_type_hints(VerificationState), **dict.fromkeys(state, Any)}, total=False
    )
    node = verifier_node(agent, model=case.generator_fail, inputs={"answer": field}, **case.extra)
    host = StateGraph(schema)
    host.add_node("verify", node)
    host.add_edge(START, "verify")
    host.add_edge("verify", END)
    return host.compile(checkpointer=InMemorySaver()), state


def dumped(verdict: Verification) -> dict[str, Any]:
    return verdict.model_dump(mode="json")


async def main(agent: str) -> dict[str, Any]:
    ASK["on"] = False
    graph, state = build(agent)
    baseline = await graph.ainvoke(state, {"configurable": {"thread_id": "baseline"}})
    ASK["on"] = True
    graph, state = build(agent)
    thread = {"configurable": {"thread_id": "async"}}
    first = await graph.ainvoke(state, thread)
    resumed = await graph.ainvoke(Command(resume="yes"), thread)
    saved = (await graph.aget_state(thread)).values["verification"]
    sync_thread = {"configurable": {"thread_id": "sync"}}
    sync_first = graph.invoke(state, sync_thread)
    sync_resumed = graph.invoke(Command(resume="yes"), sync_thread)
    return {
        "paused": "__interrupt__" in first and "verification" not in first,
        "sync_paused": "__interrupt__" in sync_first and "verification" not in sync_first,
        "baseline": dumped(baseline["verification"]),
        "resumed": dumped(resumed["verification"]),
        "sync_resumed": dumped(sync_resumed["verification"]),
        "saved_type": type(saved).__name__,
        "saved": dumped(saved),
        "attempts": resumed["verification_attempts"],
    }


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


if __name__ == "__main__":
    collected = Collect()
    logging.getLogger().addHandler(collected)
    result = asyncio.run(main(sys.argv[1]))
    print(json.dumps({**result, "warnings": collected.messages}))
