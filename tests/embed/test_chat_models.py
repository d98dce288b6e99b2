"""Real LangChain chat models driving embedded verifiers: ``ChatOpenAI`` against a local chat-completions server
(scripted replies; the requests it saw are the verifier's prompts), and the embedded model wrapped as a LangChain
chat model (:class:`~evigraph.embed.chat_model.EvigraphChatModel`) serving a host and a verifier at once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from evigraph.embed import EvigraphChatModel, Verification, VerificationState, Verifier, verifier_node
from evigraph.embed.chat_model import to_segments
from evigraph.errors import ConfigError
from evigraph.generators.langchain_model import ChatModelGenerator
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.trajectory import Evidence, Segment
from tests.generators.fake_openai_server import FakeOpenAIServer

CLAIM = "Hog Island Light was first lit in 1853."
ENTRY = Evidence(id="Hog Island Light_sentence_0", text="The light was first lit in 1854.")
SEARCH = "<plan>Find the year.</plan><search>Hog Island Light</search>"


def answer(label: str) -> str:
    return f"<think>The entry gives the year.</think><answer>\nLabel: {label}\nEvidence: [[{ENTRY.id}]]\n</answer>"


class Memory:
    """An in-memory search tool with one entry."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        self.queries.append(query)
        return [ENTRY][:k]

    def batch_search(self, queries: list[str], k: int = 3) -> list[list[Evidence]]:
        return [self.search(q, k) for q in queries]


class Host(VerificationState, total=False):
    answer: str


def host_graph(node: Any) -> Any:
    graph = StateGraph(Host)
    graph.add_node("verify", node)
    graph.add_edge(START, "verify")
    graph.add_edge("verify", END)
    return graph.compile()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    # One server (one port) per test: ChatOpenAI shares one async HTTP client per base URL across the process,
    # bound to the event loop of its first use, and each test runs its own loop.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer(model="m") as running:
        yield running


def chat_openai(server: FakeOpenAIServer, **options: Any) -> ChatOpenAI:
    # vLLM drops a stop string unless asked to keep it; the verifier needs it to read the action.
    options.setdefault("extra_body", {"include_stop_str_in_output": True})
    return ChatOpenAI(base_url=server.base_url, api_key="x", model="m", max_retries=0, **options)


# -- ChatOpenAI against a chat-completions server ------------------------------------------------------------------


@pytest.mark.parametrize(("label", "passed"), [("REFUTE", False), ("SUPPORT", True)])
def test_a_veri_r1_node_driven_by_chat_openai_searches_then_answers(
    server: FakeOpenAIServer, label: str, passed: bool
) -> None:
    server.script([SEARCH + " text after the stop", answer(label)])
    memory = Memory()
    node = verifier_node("veri-r1", model=chat_openai(server, max_tokens=64), search=memory, inputs={"answer": "claim"})
    out = asyncio.run(host_graph(node).ainvoke({"answer": CLAIM}))

    verdict = out["verification"]
    assert isinstance(verdict, Verification) and verdict.error is None
    assert (verdict.label, verdict.passed) == (label, passed)
    assert [(e.id, e.text) for e in verdict.evidence] == [(ENTRY.id, ENTRY.text)]
    assert memory.queries == ["Hog Island Light"]

    first, second = server.bodies
    for body in (first, second):  # the verifier's stop strings and the chat model's own cap reach the server
        assert body["stop"] == ["</search>", "</answer>"]
        assert body["max_completion_tokens"] == 64 and body["model"] == "m"
    [prompt] = first["messages"]
    assert prompt["role"] == "user" and prompt["content"].endswith(f"Claim to verify: {CLAIM}")
    assert prompt["content"].startswith("You check whether a claim is true by searching")
    # The second request is the verifier's transcript: the turn cut at its stop string, then the information.
    assert second["messages"][0] == prompt
    assert second["messages"][1] == {"role": "assistant", "content": SEARCH}
    information = second["messages"][2]
    assert information["role"] == "user" and f"[[{ENTRY.id}]]: {ENTRY.text}" in information["content"]
    assert len(second["messages"]) == 3


def test_a_synchronous_host_checks_once_with_chat_openai(server: FakeOpenAIServer) -> None:
    server.script([SEARCH, answer("REFUTE")])
    node = verifier_node(
        "veri-r1", model=chat_openai(server, max_tokens=64), search=Memory(), inputs={"answer": "claim"}
    )
    verdict = host_graph(node).invoke({"answer": CLAIM})["verification"]
    assert (verdict.label, verdict.error) == ("REFUTE", None)


def test_a_synchronous_host_checks_again_with_the_same_chat_openai(server: FakeOpenAIServer) -> None:
    server.script([SEARCH, answer("REFUTE"), SEARCH, answer("SUPPORT"), SEARCH, answer("SUPPORT")])
    model = chat_openai(server, max_tokens=64)
    graph = host_graph(verifier_node("veri-r1", model=model, search=Memory(), inputs={"answer": "claim"}))
    assert graph.invoke({"answer": CLAIM})["verification"].label == "REFUTE"
    assert graph.invoke({"answer": CLAIM})["verification"].label == "SUPPORT"
    assert Verifier("veri-r1", model=model, search=Memory()).verify({"claim": CLAIM}).label == "SUPPORT"


def test_the_verifiers_token_cap_reaches_the_request_where_the_generator_forwards_it(
    server: FakeOpenAIServer,
) -> None:
    server.script([SEARCH, answer("REFUTE")])
    model = ChatModelGenerator(chat_openai(server), call_kwargs=lambda p: {"max_tokens": p.max_new_tokens})
    verdict = Verifier("veri-r1", model=model, search=Memory(), max_new_tokens=200).verify({"claim": CLAIM})
    assert verdict.label == "REFUTE" and verdict.error is None
    assert [b["max_completion_tokens"] for b in server.bodies] == [200, 200]


SEVA_SOURCE = "The trial enrolled 500 participants from 8 different nations between 2019 and 2021."
SEVA_CLAIM = "The study enrolled 500 participants from 12 countries."


def seva_verdict(label: str) -> str:
    status, judgment = ("match", "supported") if label == "Attributable" else ("mismatch", "not_supported")
    verdict: dict[str, Any] = {
        "evidence_alignment": [
            {"claim_span": "500 participants", "source_span": "500 participants", "status": "match"},
            {"claim_span": "from 12 countries", "source_span": "from 8 different nations", "status": status},
        ],
        "reasoning_chain": [
            {"claim_part": "12 countries", "source_evidence": "from 8 different nations", "judgment": judgment,
             "explanation": "The source gives the number of nations."},
        ],
        "label": label,
        "confidence": 0.9,
    }  # fmt: skip
    if label != "Attributable":
        verdict |= {"error_type": "numerical_exaggeration", "fix_suggestion": "Change 12 to 8."}
    return json.dumps(verdict)


@pytest.mark.parametrize(("label", "passed"), [("Not Attributable", False), ("Attributable", True)])
def test_a_seva_verifier_driven_by_chat_openai_reads_its_json_verdict(
    server: FakeOpenAIServer, label: str, passed: bool
) -> None:
    server.script([seva_verdict(label)])
    verifier = Verifier("seva", model=chat_openai(server, max_tokens=512))
    verdict = verifier.verify({"claim": SEVA_CLAIM, "source": SEVA_SOURCE})

    assert isinstance(verdict, Verification) and verdict.error is None
    assert (verdict.label, verdict.passed, verdict.confidence) == (label, passed, 0.9)
    [body] = server.bodies
    system, user = body["messages"]
    assert system["role"] == "system" and "Reply with a single JSON object" in system["content"]
    assert user["role"] == "user" and SEVA_CLAIM in user["content"] and SEVA_SOURCE in user["content"]
    assert body["max_completion_tokens"] == 512
    assert "stop" not in body and "response_format" not in body  # one free-text turn: no stops, no guide


# -- the embedded model as a LangChain chat model ------------------------------------------------------------------


def test_messages_become_the_transcript_convention() -> None:
    messages: list[BaseMessage] = [
        SystemMessage("rules"),
        HumanMessage("question"),
        AIMessage("call a tool"),
        ToolMessage("tool result", tool_call_id="1"),
        HumanMessage("and a follow-up"),
        AIMessage("partial"),
    ]
    assert [(s.origin, s.role, s.text) for s in to_segments(messages)] == [
        ("prompt", "system", "rules"),
        ("prompt", "user", "question"),
        ("policy", None, "call a tool"),
        ("environment", None, "tool result\n\nand a follow-up"),
        ("policy", None, "partial"),
    ]
    with pytest.raises(ConfigError, match="starts with an assistant message"):
        to_segments([AIMessage("hi")])
    with pytest.raises(ConfigError, match="ToolMessage before any assistant message"):
        to_segments([ToolMessage("x", tool_call_id="1")])
    with pytest.raises(ConfigError, match="no messages"):
        to_segments([])


def test_stop_strings_and_sampling_reach_the_generator_and_replies_follow_langchains_convention() -> None:
    generator = ScriptedGenerator(["Paris</answer> and more", "a b c d e f", "done<|im_end|>"])
    model = EvigraphChatModel(generator=generator, max_tokens=4, temperature=0.7, stop=["</x>"])

    stopped = model.invoke([HumanMessage("q")], stop=["</answer>"])
    assert stopped.content == "Paris"  # the stop string is cut off, as OpenAI does, and named as vLLM does
    assert stopped.response_metadata["finish_reason"] == "stop"
    assert stopped.response_metadata["stop_reason"] == "</answer>"
    assert generator.calls[0].params.stop == ("</answer>",)
    assert (generator.calls[0].params.max_new_tokens, generator.calls[0].params.temperature) == (4, 0.7)

    capped = asyncio.run(model.ainvoke([HumanMessage("q")], max_tokens=2, seed=7))
    assert capped.content == "a b" and capped.response_metadata["finish_reason"] == "length"
    assert generator.calls[1].params.stop == ("</x>",)  # the model's own stops when the call names none
    assert (generator.calls[1].params.max_new_tokens, generator.calls[1].params.seed) == (2, 7)

    ended = model.invoke([HumanMessage("q")])
    assert ended.content == "done" and ended.response_metadata == {
        "model_name": "scripted",
        "finish_reason": "stop",
        "stop_reason": None,
    }


def test_bad_arguments_name_what_was_wrong() -> None:
    with pytest.raises(ValueError, match="expected an evigraph Generator, got str"):
        EvigraphChatModel(generator="smollm2")
    model = EvigraphChatModel(generator=ScriptedGenerator(["x"]))
    with pytest.raises(ConfigError, match="per call, not tools"):
        model.invoke([HumanMessage("q")], tools=[])


def test_token_counts_and_logprobs_come_back_where_the_backend_has_them(qwen2_style_tokenizer: Any) -> None:
    generator = ScriptedGenerator(["the light"], tokenizer=qwen2_style_tokenizer, logprob=-0.25)

    class Counted(ScriptedGenerator):
        async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
            found = await super()._continue(transcript, params)
            return found.model_copy(update={"prompt_tokens": 11})

    plain = EvigraphChatModel(generator=generator).invoke([HumanMessage("q")])
    assert plain.usage_metadata is None and "logprobs" not in plain.response_metadata  # no prompt count: no usage

    counted = Counted(["the light"], tokenizer=qwen2_style_tokenizer, logprob=-0.25)
    reply = EvigraphChatModel(generator=counted, logprobs=True).invoke([HumanMessage("q")])
    ids = qwen2_style_tokenizer.encode("the light", add_special_tokens=False)
    assert reply.usage_metadata == {"input_tokens": 11, "output_tokens": len(ids), "total_tokens": 11 + len(ids)}
    entries = reply.response_metadata["logprobs"]["content"]
    assert [e["logprob"] for e in entries] == [-0.25] * len(ids)
    assert "".join(e["token"] for e in entries) == "the light"


def test_a_synchronous_call_from_inside_a_running_event_loop_still_answers() -> None:
    model = EvigraphChatModel(generator=ScriptedGenerator(lambda t, p: "fine"))

    async def host() -> str:
        return str(model.invoke([HumanMessage("q")]).content)  # blocking call in async code: a worker thread runs it

    assert asyncio.run(host()) == "fine"


def veri_r1_policy(transcript: list[Segment], _params: SamplingParams) -> str:
    turns = sum(s.origin == "policy" for s in transcript)
    return SEARCH + " ignored" if turns == 0 else answer("REFUTE")


def test_the_wrapped_model_drives_a_verifier_exactly_as_the_generator_itself_would() -> None:
    direct = ScriptedGenerator(veri_r1_policy, tokenizer=None)
    wrapped = ScriptedGenerator(veri_r1_policy)
    expected = Verifier("veri-r1", model=direct, search=Memory()).verify({"claim": CLAIM})
    verdict = Verifier("veri-r1", model=EvigraphChatModel(generator=wrapped), search=Memory()).verify({"claim": CLAIM})

    assert verdict.model_dump(exclude={"detail"}) == expected.model_dump(exclude={"detail"})
    assert verdict.label == "REFUTE" and verdict.error is None

    # The stop string the wrapper cut off came back through stop_reason: the transcripts are the same.
    def seen(generator: ScriptedGenerator) -> list[list[tuple[str, str | None, str]]]:
        return [[(s.origin, s.role, s.text) for s in call.transcript] for call in generator.calls]

    assert seen(wrapped) == seen(direct)
    assert wrapped.calls[1].transcript[1].text == SEARCH
    assert [c.params.stop for c in wrapped.calls] == [("</search>", "</answer>")] * 2


class Conversation(VerificationState, total=False):
    question: str
    answer: str


def test_one_wrapped_model_serves_the_host_and_its_verifier() -> None:
    def reply(transcript: list[Segment], params: SamplingParams) -> str:
        if transcript[0].text.startswith("You check whether a claim is true"):
            return veri_r1_policy(transcript, params)
        return CLAIM  # the host's own answer to its question

    generator = ScriptedGenerator(reply)
    model = EvigraphChatModel(generator=generator, max_tokens=64)

    async def respond(state: Conversation) -> dict[str, Any]:
        message = await model.ainvoke([SystemMessage("Answer briefly."), HumanMessage(state["question"])])
        return {"answer": str(message.content)}

    graph = StateGraph(Conversation)
    graph.add_node("respond", respond)
    graph.add_node("verify", verifier_node("veri-r1", model=model, search=Memory(), inputs={"answer": "claim"}))
    graph.add_edge(START, "respond")
    graph.add_edge("respond", "verify")
    graph.add_edge("verify", END)
    out = asyncio.run(graph.compile().ainvoke({"question": "When was Hog Island Light first lit?"}))

    assert out["answer"] == CLAIM
    assert out["verification"].label == "REFUTE" and not out["verification"].passed
    host_call, *verifier_calls = generator.calls
    assert [s.text for s in host_call.transcript] == ["Answer briefly.", "When was Hog Island Light first lit?"]
    assert len(verifier_calls) == 2 and verifier_calls[0].transcript[-1].text.endswith(f"Claim to verify: {CLAIM}")


@pytest.mark.slow
def test_the_embedded_smollm2_as_a_chat_model_drives_seva_end_to_end() -> None:
    from evigraph.config import GeneratorConfig
    from evigraph.generators.factory import make_generator

    generator = make_generator(GeneratorConfig(model="smollm2"))
    model = EvigraphChatModel(generator=generator, max_tokens=12)
    verdict = Verifier("seva", model=model).verify({"claim": SEVA_CLAIM, "source": SEVA_SOURCE})
    assert isinstance(verdict, Verification) and verdict.agent == "seva"
    assert verdict.error is None  # whatever it said, the run itself did not fail
    reply = model.invoke([HumanMessage("Say yes.")])
    assert isinstance(reply, AIMessage) and reply.response_metadata["model_name"] == generator.name
