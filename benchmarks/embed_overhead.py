"""What embedding a verifier adds to the latency of each verified answer, over the verifier's own graph.

N answers are verified by Veri-R1 (a search turn, then the answer) against a scripted generator that sleeps L
seconds per call (the shape of a model call) and an in-memory search tool, with at most C answers in flight at
a time on one event loop (``--concurrency 1``: one after another). Each answer's latency is timed from its call
to its verdict. The same load runs through every embedding form, in the same process:

- ``graph``: the verifier's compiled graph, ``ainvoke`` (the baseline: what every form wraps);
- ``verifier``: :meth:`Verifier.averify` (input check, the mapping to a ``Verification``);
- ``subgraph``: the verifier's compiled graph added by hand as the only node of a host ``StateGraph`` (LangGraph's
  own way to embed a graph, with no evigraph plumbing: the peer of ``node``);
- ``node``: :func:`verifier_node` as the only node of a host ``StateGraph`` (the verifier runs as its subgraph);
- ``tool``: :func:`verifier_tool` called with the claim, as a host's agent would;
- ``agent``: a ``create_agent`` host whose chat model answers at once, without a verifier (its own cost);
- ``middleware``: the same host with ``VerificationMiddleware`` (``on_fail="annotate"``) checking each answer.

The added latency of the node is ``node − subgraph`` (the host graph's own scheduling is LangGraph's, paid by any
embedded graph); of the middleware, ``middleware − agent − graph`` (the host's
own cost is not the framework's). Modes run in R interleaved rounds; each mode's latency is the median of its
round means. CPU time per answer is printed too (it does not depend on L).

With C > 1 the answers move in lockstep (same sleeps, same steps), so each one's latency also absorbs the
plumbing CPU of the others in flight: the added latency is about C times the added CPU, a pessimistic bound. With
``--concurrency 1`` it is the plumbing of one answer alone (about 1 ms over 0.4 s on a 2-core machine, but 200
answers take 80 s per mode and round).

    python benchmarks/embed_overhead.py [--n 200] [--concurrency 20] [--latency 0.2] [--rounds 3]

Goal (issue 23): the added latency per verified answer ≤ 5 % of the verifier's own.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, StateGraph

from evigraph.embed import VerificationState, Verifier, verifier_node
from evigraph.embed.middleware import VerificationMiddleware
from evigraph.embed.tool import verifier_tool
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.machine import tune_gc_for_long_run
from evigraph.trajectory import Evidence, Segment

ANSWER = "Hog Island Light was first lit in 1854."
ENTRY = Evidence(id="Hog Island Light_sentence_0", text="Hog Island Light was first lit in 1854.")


class MemorySearch:
    """An in-memory search tool with an async face (like a remote retriever)."""

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return [ENTRY][:k]

    def batch_search(self, queries: list[str], k: int = 3) -> list[list[Evidence]]:
        return [self.search(q, k) for q in queries]

    async def asearch(self, query: str, k: int = 3) -> list[Evidence]:
        return self.search(query, k)


def policy(transcript: list[Segment], _params: Any) -> str:
    """Veri-R1's two turns: one search, then a SUPPORT verdict citing what it was shown."""
    if not any(s.origin == "policy" for s in transcript):
        return "<plan>Find when the light was first lit.</plan>\n<search>Hog Island Light first lit</search>"
    return f"<think>The entry gives 1854.</think>\n<answer>\nLabel: SUPPORT\nEvidence: [[{ENTRY.id}]]\n</answer>"


class InstantChat(BaseChatModel):
    """A host chat model that answers at once (its cost is measured by the ``agent`` mode and subtracted)."""

    @property
    def _llm_type(self) -> str:
        return "instant"

    def bind_tools(self, tools: Any, **kwargs: Any) -> InstantChat:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=ANSWER))])

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any):
        return self._generate(messages)


class Host(VerificationState, total=False):
    answer: str


class BareHost(TypedDict, total=False):
    """A host that embeds the verifier's graph by hand: its keys are the graph's own input and result."""

    claim: str
    output: Any
    trajectory: Any


def forms(latency: float) -> dict[str, Callable[[int], Awaitable[bool]]]:
    """Each mode: one verified answer, returning whether the verdict came out as scripted (SUPPORT, passed)."""

    def generator() -> ScriptedGenerator:
        return ScriptedGenerator(policy, delay_s=latency)

    verifier = Verifier("veri-r1", model=generator(), search=MemorySearch())
    host = StateGraph(Host)
    host.add_node(
        "verify", verifier_node("veri-r1", model=generator(), search=MemorySearch(), inputs={"answer": "claim"})
    )
    host.add_edge(START, "verify")
    host.add_edge("verify", END)
    node_host = host.compile()
    bare = StateGraph(BareHost)
    bare.add_node("verify", Verifier("veri-r1", model=generator(), search=MemorySearch()).graph)
    bare.add_edge(START, "verify")
    bare.add_edge("verify", END)
    bare_host = bare.compile()
    tool = verifier_tool("veri-r1", model=generator(), search=MemorySearch())
    agent = create_agent(InstantChat(), tools=[])
    middleware = VerificationMiddleware("veri-r1", model=generator(), search=MemorySearch(), on_fail="annotate")
    guarded = create_agent(InstantChat(), tools=[], middleware=[middleware])

    async def graph(i: int) -> bool:
        return (await verifier.graph.ainvoke({"claim": ANSWER}))["output"].label == "SUPPORT"

    async def averify(i: int) -> bool:
        return (await verifier.averify({"claim": ANSWER})).passed

    async def subgraph(i: int) -> bool:
        return (await bare_host.ainvoke({"claim": ANSWER}))["output"].label == "SUPPORT"

    async def node(i: int) -> bool:
        return (await node_host.ainvoke({"answer": ANSWER}))["verification"].passed

    async def as_tool(i: int) -> bool:
        call = {"name": tool.name, "args": {"claim": ANSWER}, "id": f"call-{i}", "type": "tool_call"}
        return (await tool.ainvoke(call)).artifact.passed

    async def host_agent(i: int) -> bool:
        return (await agent.ainvoke({"messages": [{"role": "user", "content": "When was it first lit?"}]})) is not None

    async def guarded_agent(i: int) -> bool:
        state = await guarded.ainvoke({"messages": [{"role": "user", "content": "When was it first lit?"}]})
        return state["verification"].passed

    return {
        "graph": graph,
        "verifier": averify,
        "subgraph": subgraph,
        "node": node,
        "tool": as_tool,
        "agent": host_agent,
        "middleware": guarded_agent,
    }


async def measure(one: Callable[[int], Awaitable[bool]], n: int, concurrency: int) -> tuple[float, float]:
    """``(mean seconds per answer, CPU seconds per answer)`` over ``n`` answers, ``concurrency`` in flight."""
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def timed(i: int) -> None:
        async with gate:
            started = time.perf_counter()
            if not await one(i):
                raise AssertionError(f"answer {i}: the verdict is not the scripted one")
            latencies.append(time.perf_counter() - started)

    cpu = time.process_time()
    await asyncio.gather(*(timed(i) for i in range(n)))
    return statistics.fmean(latencies), (time.process_time() - cpu) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="verified answers per mode and round")
    parser.add_argument("--concurrency", type=int, default=20, help="answers in flight at a time (1: sequential)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per generator call (L)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median of round means)")
    args = parser.parse_args()
    n, concurrency, latency = args.n, args.concurrency, args.latency

    async def run() -> dict[str, tuple[list[float], list[float]]]:
        modes = forms(latency)
        for one in forms(0.0).values():  # warm-up: imports, compile paths, first-call caches
            await measure(one, 4, 4)
        tune_gc_for_long_run()
        found: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in modes}
        names = list(modes)
        for round_ in range(args.rounds):
            # Rotate the order each round, so drift on a shared machine does not favour one mode.
            for name in itertools.islice(itertools.cycle(names), round_, round_ + len(names)):
                wall, cpu = await measure(modes[name], n, concurrency)
                found[name][0].append(wall)
                found[name][1].append(cpu)
        return found

    found = asyncio.run(run())
    wall = {name: statistics.median(values[0]) for name, values in found.items()}
    cpu = {name: statistics.median(values[1]) for name, values in found.items()}
    base = wall["graph"]
    added = {
        "verifier": wall["verifier"] - base,
        "subgraph": wall["subgraph"] - base,
        "node": wall["node"] - wall["subgraph"],
        "tool": wall["tool"] - base,
        "middleware": wall["middleware"] - wall["agent"] - base,
    }
    for name in found:
        rounds = " ".join(f"{1000 * w:.1f}" for w in found[name][0])
        extra = f"  added {1000 * added[name]:+7.2f} ms ({100 * added[name] / base:+5.2f} %)" if name in added else ""
        print(
            f"{name:10s} latency {1000 * wall[name]:8.2f} ms  cpu {1000 * cpu[name]:6.2f} ms{extra}  [rounds: {rounds}]"
        )
    node_ratio = (wall["node"] - wall["subgraph"] + base) / base
    middleware_ratio = (wall["middleware"] - wall["agent"]) / base
    overhead_pct = 100 * max(added["node"], added["middleware"]) / base
    print(
        f"RESULT overhead_pct={overhead_pct:.2f} node_ratio={node_ratio:.4f} middleware_ratio={middleware_ratio:.4f} "
        f"tool_ratio={wall['tool'] / base:.4f} node_cpu_ms={1000 * (cpu['node'] - cpu['subgraph']):.2f} "
        f"middleware_cpu_ms={1000 * (cpu['middleware'] - cpu['agent'] - cpu['graph']):.2f} "
        f"subgraph_ratio={wall['subgraph'] / base:.4f} n={n} "
        f"concurrency={concurrency} latency_s={latency} goal_met={overhead_pct <= 5.0}"
    )


if __name__ == "__main__":
    main()
