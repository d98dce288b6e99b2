"""Run an evigraph graph as a subgraph of a host graph with a checkpointer, interrupted mid-run and resumed.

Invoked by ``test_checkpointing.py`` in a fresh process, because LangGraph reads ``LANGGRAPH_STRICT_MSGPACK``
when it is imported. Prints one JSON object: the uninterrupted and the resumed result, and every warning the
checkpoint serializer logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from evigraph.generators.scripted import ScriptedGenerator
from evigraph.trajectory import Evidence, Trajectory

ANSWER = (
    "<think>It was lit in 1854.</think><answer>\nLabel: REFUTE\nEvidence: [[Hog Island Light_sentence_0]]\n</answer>"
)
ASK = {"on": True}
"""Whether the policies ask a human before answering (off for the uninterrupted baseline)."""


class Memory:
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return [Evidence(id="Hog Island Light_sentence_0", text="The light was first lit in 1854.")][:k]

    def batch_search(self, queries: list[str], k: int = 3) -> list[list[Evidence]]:
        return [self.search(q, k) for q in queries]


def veri_r1_policy(transcript: list[Any], params: Any) -> str:
    turns = sum(s.origin == "policy" for s in transcript)
    if turns == 0:
        return "<plan>Find the year.</plan><search>Hog Island Light</search>"
    if ASK["on"]:  # a human approves the answer turn: the subgraph stops here, inside its generate node
        interrupt({"ask": "may the verifier answer?"})
    return ANSWER


def passage_policy(transcript: list[Any], params: Any) -> str:
    if ASK["on"]:
        interrupt({"ask": "may the checker answer?"})
    return "<answer>no</answer>"


class VeriR1Host(TypedDict, total=False):
    claim: str
    output: Any
    trajectory: Trajectory


class PassageHost(TypedDict, total=False):
    claim: str
    passage: str
    output: Any
    trajectory: Trajectory


class RLSeekHost(TypedDict, total=False):
    task: str
    source: str
    response: str
    output: Any
    trajectory: Trajectory


RLSEEK_REPLY = (
    "## Step 1: Check the year\n- Evidence: <quote>completed in 1889</quote>\n- Evaluation: 1889, not 1899.\n"
    '## Final Output\n```json\n{"hallucination list": ["1899"]}\n```'
)


def rlseek_policy(transcript: list[Any], params: Any) -> str:
    if ASK["on"]:
        interrupt({"ask": "may the detector answer?"})
    return RLSEEK_REPLY


class SevaHost(TypedDict, total=False):
    claim: str
    source: str
    output: Any
    trajectory: Trajectory


SEVA_REPLY = (
    '{"evidence_alignment": [{"claim_span": "1899", "source_span": "1889", "status": "mismatch"}], '
    '"reasoning_chain": [], "label": "Not Attributable", "confidence": 0.8, "error_type": "temporal_shift", '
    '"fix_suggestion": "Change 1899 to 1889."}'
)


def seva_policy(transcript: list[Any], params: Any) -> str:
    if ASK["on"]:
        interrupt({"ask": "may the verifier answer?"})
    return SEVA_REPLY


class RagZevalHost(TypedDict, total=False):
    question: str
    reference: str
    candidates: list[str]
    output: Any
    trajectory: Trajectory


RAG_ZEVAL_REPLY = json.dumps([
    {"id": letter, "answer": "...", "atomic_claims": [
        {"claim": "It was completed in 1889.", "is_supported": letter == "A",
         "grounding_evidence": ["It was completed in 1889."] if letter == "A" else [], "analysis": "compared"}]}
    for letter in "AB"
])  # fmt: skip


def rag_zeval_policy(transcript: list[Any], params: Any) -> str:
    if ASK["on"]:
        interrupt({"ask": "may the evaluator answer?"})
    return RAG_ZEVAL_REPLY


def host_for(agent: str) -> tuple[Any, dict[str, Any]]:
    if agent == "rag-zeval":
        from evigraph.agents.rag_zeval.schemas import RagZevalOutput
        from evigraph.graphs.rag_zeval import build_rag_zeval_graph

        RagZevalHost.__annotations__["output"] = RagZevalOutput
        verifier = build_rag_zeval_graph(ScriptedGenerator(rag_zeval_policy))
        host = StateGraph(RagZevalHost)
        inputs = {"question": "When was it completed?", "reference": "It was completed in 1889.",
                  "candidates": ["It was completed in 1889.", "It was completed in 1899."]}  # fmt: skip
    elif agent == "seva":
        from evigraph.agents.seva.schemas import SevaOutput
        from evigraph.graphs.seva import build_seva_graph

        SevaHost.__annotations__["output"] = SevaOutput
        verifier = build_seva_graph(ScriptedGenerator(seva_policy))
        host = StateGraph(SevaHost)
        inputs = {"claim": "It was completed in 1899.", "source": "It was completed in 1889."}
    elif agent == "rlseek":
        from evigraph.agents.rlseek.schemas import RLSeekOutput
        from evigraph.graphs.rlseek import build_rlseek_graph

        RLSeekHost.__annotations__["output"] = RLSeekOutput
        verifier = build_rlseek_graph(ScriptedGenerator(rlseek_policy))
        host = StateGraph(RLSeekHost)
        inputs = {"task": "summary", "source": "It was completed in 1889.", "response": "Completed in 1899."}
    elif agent == "veri-r1":
        from evigraph.agents.veri_r1.schemas import VeriR1Output
        from evigraph.graphs.veri_r1 import build_veri_r1_graph

        VeriR1Host.__annotations__["output"] = VeriR1Output
        verifier = build_veri_r1_graph(ScriptedGenerator(veri_r1_policy), Memory())
        host = StateGraph(VeriR1Host)
        inputs = {"claim": "Hog Island Light was first lit in 1853."}
    else:
        from passage_check.graph import build_passage_check_graph
        from passage_check.schemas import PassageCheckOutput

        PassageHost.__annotations__["output"] = PassageCheckOutput
        verifier = build_passage_check_graph(ScriptedGenerator(passage_policy))
        host = StateGraph(PassageHost)
        inputs = {"claim": "It still stands.", "passage": "It was demolished."}
    host.add_node("verify", verifier)  # the compiled graph itself is the node: the host has its keys
    host.add_edge(START, "verify")
    host.add_edge("verify", END)
    return host.compile(checkpointer=InMemorySaver()), inputs


def summary(result: dict[str, Any]) -> dict[str, Any]:
    trajectory = result["trajectory"]
    return {
        "output": result["output"].model_dump(),
        "segments": [(s.origin, s.text) for s in trajectory.segments],
        "error": trajectory.error.model_dump() if trajectory.error else None,
    }


async def main(agent: str) -> dict[str, Any]:
    ASK["on"] = False
    graph, inputs = host_for(agent)
    baseline = summary(await graph.ainvoke(inputs, {"configurable": {"thread_id": "baseline"}}))
    ASK["on"] = True
    graph, inputs = host_for(agent)
    first = await graph.ainvoke(inputs, {"configurable": {"thread_id": "a"}})
    resumed = await graph.ainvoke(Command(resume="yes"), {"configurable": {"thread_id": "a"}})
    history = [s async for s in graph.aget_state_history({"configurable": {"thread_id": "a"}})]
    return {
        "paused": "__interrupt__" in first,
        "baseline": baseline,
        "resumed": summary(resumed),
        "checkpoints": len(history),
    }


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


if __name__ == "__main__":
    collected = Collect()
    logging.getLogger().addHandler(collected)
    result = asyncio.run(main(sys.argv[1]))
    print(json.dumps({**result, "warnings": collected.messages}))
