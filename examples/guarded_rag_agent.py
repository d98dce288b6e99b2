"""A RAG agent of your own, guarded by a verifier: a LangGraph graph retrieves passages from the demo corpus, a
LangChain chat model answers from them, and SEVA (through evigraph's embedding API) checks that the passages back
the answer. A failed check sends the answer back to the model once with the verifier's repair instruction; after
that the answer goes out with its failed verdict recorded (``verification_router``).

    .venv/bin/python examples/guarded_rag_agent.py ["QUESTION"] [--model smollm2]

Nothing here is specific to evigraph's models: ``chat_model`` is any LangChain ``BaseChatModel`` (``ChatOpenAI``
...); the example wraps the embedded model as one (``EvigraphChatModel``). The verifier gets the evigraph
generator itself, so the embedded model decodes its verdict under the verdict's JSON schema (weak-model mode);
given a chat model it would run as a plain text backend. Any registered verifier fits the same node with its own
input mapping (docs/embedding.md).

Expected output (embedded model as both the host's model and the verifier; one run: 84 s in all on 2 CPU
cores shared with a background benchmark, model loading included). The answer is right and passes, but the
135M verifier's verdict does not hold together -- its steps judge the claim not supported and it states a
confidence of 0 -- and the line under it says so (``Verification.disagreement``)::

    Q: In which year was the first tower on Hog Island lit?
    retrieved: Hog Island Light_sentence_0, Cape Charles Light_sentence_0
    answer: 'The first lighthouse on Hog Island was lit in 1852.'
    seva: Attributable, confidence 0.00 -> passed
      the verdict disagrees with its own reasoning: labelled Attributable, but step 1 judges not_supported, step 2
      judges not_supported and its stated confidence in that label is 0
    final answer: 'The first lighthouse on Hog Island was lit in 1852.' (passed after 1 check)
    took 66.2 s

In the tests a scripted host answers 1896 first; SEVA fails it (temporal shift), the repair instruction goes
back to the host's model, and the corrected answer passes after two checks.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph

from evigraph.config import GeneratorConfig
from evigraph.corpora.registry import resolve_corpus
from evigraph.embed import EvigraphChatModel, VerificationState, verification_router, verifier_node
from evigraph.generators.factory import make_generator
from evigraph.tools.search import BM25Search, SearchTool

QUESTION = "In which year was the first tower on Hog Island lit?"
INSTRUCTIONS = "Answer the question in one sentence, using only the passages."


class State(VerificationState, total=False):
    """The host's own keys, plus the verifier's ``verification`` and ``verification_attempts``."""

    question: str
    documents: str
    answer: str


def build_agent(chat_model: BaseChatModel, search: SearchTool, *, verifier_model: Any, max_repairs: int = 1) -> Any:
    """retrieve -> answer -> verify, and back to answer while the check fails and repairs are left."""

    def retrieve(state: State) -> dict[str, Any]:
        hits = search.search(state["question"], k=2)
        return {"documents": "\n".join(hit.text for hit in hits)}

    async def answer(state: State) -> dict[str, Any]:
        prompt = f"Passages:\n{state['documents']}\n\nQuestion: {state['question']}"
        verdict = state.get("verification")
        if verdict is not None and not verdict.passed and verdict.repair:
            # The repair instruction is evigraph's own wording (never the verifier model's text).
            prompt += f"\n\nYour previous answer was: {state['answer']}\n{verdict.repair}"
        reply = await chat_model.ainvoke([SystemMessage(INSTRUCTIONS), HumanMessage(prompt)])
        return {"answer": reply.text.strip()}

    graph = StateGraph(State)
    graph.add_node("retrieve", retrieve)
    graph.add_node("answer", answer)
    # SEVA checks the answer (its claim) against the passages (its source).
    graph.add_node(
        "verify", verifier_node("seva", model=verifier_model, inputs={"answer": "claim", "documents": "source"})
    )
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "answer")
    graph.add_edge("answer", "verify")
    graph.add_conditional_edges("verify", verification_router(passed=END, failed="answer", max_repairs=max_repairs))
    return graph.compile()


async def ask(agent: Any, question: str, search: SearchTool) -> dict[str, Any]:
    """Run the agent, printing each node's result as it finishes; returns the final state."""
    print(f"Q: {question}")
    print("retrieved: " + ", ".join(hit.id for hit in search.search(question, k=2)))
    state: dict[str, Any] = {"question": question}
    async for update in agent.astream(state, stream_mode="updates"):
        for node, values in update.items():
            state.update(values or {})
            if node == "answer":
                print(f"answer: {values['answer']!r}")
            elif node == "verify":
                verdict = values["verification"]
                outcome = "passed" if verdict.passed else f"failed; repair: {verdict.repair or verdict.error}"
                confidence = f", confidence {verdict.confidence:.2f}" if verdict.confidence is not None else ""
                print(f"{verdict.agent}: {verdict.label}{confidence} -> {outcome}")
                if verdict.disagreement is not None:  # a verdict its own reasoning contradicts: say so
                    print(f"  {verdict.disagreement}")
    return state


def show(state: dict[str, Any]) -> None:
    verdict, checks = state["verification"], state["verification_attempts"]
    outcome = "passed" if verdict.passed else "failed, sent with its verdict"
    print(f"final answer: {state['answer']!r} ({outcome} after {checks} check{'s' if checks > 1 else ''})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--model", default="smollm2", help="Any evigraph model spec (default: the embedded one).")
    parser.add_argument("--corpus", default="demo", help="A corpus name or directory (default: the demo corpus).")
    args = parser.parse_args(argv)
    generator = make_generator(GeneratorConfig(model=args.model))
    search = BM25Search(resolve_corpus(args.corpus), name=args.corpus)
    agent = build_agent(EvigraphChatModel(generator=generator, max_tokens=48), search, verifier_model=generator)
    started = time.perf_counter()
    show(asyncio.run(ask(agent, args.question, search)))
    print(f"took {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
