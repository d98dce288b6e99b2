"""Embed the Veri-R1 verifier in a host LangGraph agent, with a checkpointer, in the two usual forms.

1. **As a node, directly**: the compiled verifier is added with ``add_node``. The host's state must then have
   the verifier's keys: ``claim`` (read), ``output`` and ``trajectory`` (written); ``id``, ``evidence`` and
   ``gold`` are optional inputs.
2. **Behind a wrapping node**: a host with its own keys (here ``draft`` and ``verdict``) calls the verifier
   from a node function and maps the keys itself.

Both run under a checkpointer; the verifier's state round-trips through LangGraph's strict deserialisation
mode (``LANGGRAPH_STRICT_MSGPACK=true``) too. Run::

    .venv/bin/python examples/host_agent.py "Hog Island Light was first lit in 1853."
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import evigraph
from evigraph.agents.veri_r1.schemas import VeriR1Output
from evigraph.trajectory import Trajectory


class Shared(TypedDict, total=False):
    """Form 1: the host's state carries the verifier's own keys."""

    claim: str
    output: VeriR1Output
    trajectory: Trajectory


class Writer(TypedDict, total=False):
    """Form 2: the host's own keys."""

    draft: str
    verdict: str


def shared_keys_host(verifier: Any) -> Any:
    """``verifier`` is the compiled Veri-R1 graph (``evigraph.agent("veri-r1", ...)``)."""
    graph = StateGraph(Shared)
    graph.add_node("verify", verifier)
    graph.add_edge(START, "verify")
    graph.add_edge("verify", END)
    return graph.compile(checkpointer=InMemorySaver())


def wrapping_node_host(verifier: Any) -> Any:
    """``verifier`` as in :func:`shared_keys_host`."""

    async def check_draft(state: Writer) -> dict[str, str]:
        result = await verifier.ainvoke({"claim": state["draft"]})
        return {"verdict": result["output"].label or "NO VERDICT"}

    graph = StateGraph(Writer)
    graph.add_node("check_draft", check_draft)
    graph.add_edge(START, "check_draft")
    graph.add_edge("check_draft", END)
    return graph.compile(checkpointer=InMemorySaver())


async def main(claim: str) -> None:
    # One compiled verifier (one model, one searcher) serves both hosts: a compiled graph keeps no run state.
    verifier = evigraph.agent("veri-r1", model="smollm2", search="demo")
    config = {"configurable": {"thread_id": "example"}}
    shared = await shared_keys_host(verifier).ainvoke({"claim": claim}, config)
    print("form 1:", shared["output"].label, shared["output"].evidence)
    wrapped = await wrapping_node_host(verifier).ainvoke({"draft": claim}, config)
    print("form 2:", wrapped["verdict"])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "Hog Island Light was first lit in 1853."))
