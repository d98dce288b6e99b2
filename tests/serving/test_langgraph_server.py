"""The agents served by LangGraph's own server: ``langgraph dev`` on 127.0.0.1 with the factories of
``evigraph.serving.graphs``, driven through ``langgraph_sdk`` and LangGraph's ``RemoteGraph`` as a user would.

One server for the module (a subprocess, killed at the end whatever happens). Its langgraph.json is the
repository's graphs with an ``env`` naming a scripted model (a JSON list of replies) and a real ``/retrieve``
server in this process holding one fact (Hog Island Light, first lit in 1854). Each run names its own scripted
model in ``configurable`` -- a reply file per run, so no run eats another's replies -- except the snippets of
docs/serving.md's LangGraph section, which run as printed on the environment's default. The replies are written
here by hand, like a model's, and the expected verdicts follow from them by the agents' documented rules: a
SUPPORT label citing the one entry passes Veri-R1; RLSeek flags the year 1853, characters 34-38 of the response;
a judge that finds another entity in every step's evidence makes StepGap label every step IE (re-search).

The helpers here (:func:`langgraph_dev`, the scripted replies) are shared by test_langgraph_repo.py and
test_langgraph_graphs.py.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import httpx
import pytest

from evigraph.registry import get_agent
from evigraph.serving.graphs import langgraph_config
from evigraph.trajectory import Trajectory
from evigraph.verification import Verification
from tests.embed.hosts import ENTRY_ID, FACT, QUESTION, RIGHT, WRONG, Memory, inputs_for
from tests.markers import requires
from tests.servers import running

pytestmark = requires("langgraph_api", "langgraph_sdk", "langgraph_cli")

ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 180
"""How long the server may take to answer ``/ok`` (it imports the LangGraph API and evigraph on 2 shared cores)."""

SEVA_PASS = json.dumps({
    "evidence_alignment": [{"claim_span": "1854", "source_span": FACT, "status": "match"}],
    "reasoning_chain": [{"claim_part": "1854", "source_evidence": FACT, "judgment": "supported",
                         "explanation": "The source gives the same year."}],
    "label": "Attributable", "confidence": 0.9, "error_type": None, "fix_suggestion": None,
})  # fmt: skip
RLSEEK_FLAGS_1853 = (
    f"## Step 1: Check the year\n- Evidence: <quote>{FACT}</quote>\n- Evaluation: the years differ.\n"
    '## Final Output\n```json\n{"hallucination list": ["1853"]}\n```'
)
RAG_ZEVAL_PASS = json.dumps([{"id": "A", "answer": RIGHT, "atomic_claims": [
    {"claim": RIGHT, "is_supported": True, "grounding_evidence": [FACT], "analysis": "Same year."}]}])  # fmt: skip
VERI_R1_SEARCH = "<plan>Find when the light was first lit.</plan><search>Hog Island Light</search>"
VERI_R1_SUPPORT = f"<think>The entry says 1854.</think><answer>\nLabel: SUPPORT\nEvidence: [[{ENTRY_ID}]]\n</answer>"
SEARCH_R1_TURNS = [
    "<think>I need the year.</think>\n<search>Hog Island Light</search>",
    "<think>The passage says 1854.</think>\n<answer>1854</answer>",
]
JUDGE_OTHER_ENTITY = json.dumps({
    "step_minus1_alignment": {"is_off_target": False, "drift_type": "none", "alignment_reasoning": "On target."},
    "step_0_abstention_check": {"is_abstention_step": False, "abstention_is_accurate": False,
                                "abstention_reasoning": "Not an abstention."},
    "step_1_quote_search": {"entity_match": False, "entity_match_reasoning": "The evidence is about another light.",
                            "found_quote": False, "evidence_quote": "", "quote_search_reasoning": "Nothing to quote."},
})  # fmt: skip
"""StepGap's judge, the same for every step: on target, no abstention, evidence about another entity (IE)."""


# -- the server -------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class DevServer(NamedTuple):
    url: str
    pid: int


@contextlib.contextmanager
def langgraph_dev(config: Path, workdir: Path, *, env: dict[str, str] | None = None) -> Iterator[DevServer]:
    """``langgraph dev`` serving ``config`` from ``workdir`` (its in-memory store writes there), once it answers;
    the process is ended on the way out, whatever happened."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("EVIGRAPH_")}
    environment.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false", OMP_NUM_THREADS="1"
    )
    environment.update(env or {})
    log = workdir / "server.log"
    port = free_port()
    command = [sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--config", str(config)]
    with log.open("wb") as sink:
        # In this process group, so that a Ctrl-C reaches it too; it runs as one process (no reloader).
        process = subprocess.Popen(command, cwd=workdir, env=environment, stdout=sink, stderr=subprocess.STDOUT)
    try:
        yield DevServer(_wait_ready(process, log), process.pid)
    finally:
        process.terminate()  # it drains and exits in a few seconds
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


def _wait_ready(process: subprocess.Popen[bytes], log: Path) -> str:
    """The server's URL (the one it prints: it moves to another port if ours was taken) once ``/ok`` answers."""
    deadline = time.monotonic() + STARTUP_S
    while True:
        text = log.read_text(encoding="utf-8", errors="replace")
        assert process.poll() is None, f"langgraph dev exited ({process.returncode}):\n{text[-3000:]}"
        assert time.monotonic() < deadline, f"langgraph dev did not answer in {STARTUP_S} s:\n{text[-3000:]}"
        found = re.search(r"API: (?:\x1b\[[0-9;]*m)?(http://127\.0\.0\.1:\d+)", text)
        if found:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{found.group(1)}/ok", timeout=5).status_code == 200:
                    return found.group(1)
        time.sleep(0.2)


@contextlib.contextmanager
def retrieval_server() -> Iterator[str]:
    """A real Search-R1 ``/retrieve`` server over the one fact, on a free loopback port in a thread."""
    from evigraph.tools.retrieval_server import create_app

    with running(create_app(Memory()), start_s=30) as url:
        yield url


class Served(TypedDict):
    url: str
    replies: Path


DOC = ROOT / "docs" / "serving.md"
DOC_SECTION = "## LangGraph's server and Studio"
DOC_URL = "http://127.0.0.1:2024"
DOC_REPLIES = [SEVA_PASS, *SEARCH_R1_TURNS, JUDGE_OTHER_ENTITY, JUDGE_OTHER_ENTITY, SEVA_PASS]
"""The server's default model, in the order the doc's snippets run on it: SEVA, StepGap (two Search-R1 turns, the
judge on two steps), SEVA through RemoteGraph. Only the doc's snippets use the default; every other run names a
model of its own."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The scripted server: the default model :data:`DOC_REPLIES`, the search tool the retrieval server."""
    workdir = tmp_path_factory.mktemp("langgraph-dev")
    default = workdir / "default-replies.json"
    default.write_text(json.dumps(DOC_REPLIES), encoding="utf-8")
    with retrieval_server() as retriever:
        config = {**langgraph_config(), "env": {"EVIGRAPH_MODEL": f"scripted:{default}", "EVIGRAPH_SEARCH": retriever}}
        (workdir / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
        with langgraph_dev(workdir / "langgraph.json", workdir) as server:
            yield {"url": server.url, "replies": workdir}


def model(served: Served, name: str, replies: list[str]) -> dict[str, str]:
    """A ``configurable`` naming a scripted model of its own that replays ``replies``."""
    path = served["replies"] / f"{name}.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    return {"model": f"scripted:{path}"}


def verdict(agent: str, result: dict[str, Any]) -> Verification:
    """A served result as the agent's verdict (its own mapping, the one embedding uses)."""
    loaded = get_agent(agent).load()
    return loaded.require("verification")({**result, "trajectory": Trajectory.model_validate(result["trajectory"])})


# -- running each agent -----------------------------------------------------------------------------------------
def doc_blocks() -> list[str]:
    """The Python blocks of the doc's LangGraph section."""
    text = DOC.read_text(encoding="utf-8")
    assert DOC_SECTION in text, f"{DOC} has no section {DOC_SECTION!r}"
    section = text.split(DOC_SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def test_the_docs_snippets_run_on_the_model_the_environment_names(served: Served) -> None:
    """The doc's SDK and RemoteGraph snippets, as printed but for the server's URL: SEVA's verdict, StepGap's
    subgraph events, SEVA as a host's node -- all on the model the server's environment names."""
    sdk, remote = (block.replace(DOC_URL, served["url"]) for block in doc_blocks())
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        # Compiled as a reader's script is: without this module's ``from __future__ import annotations``.
        code = compile(sdk, f"{DOC}:sdk", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        asyncio.run(eval(code, {}))  # top-level await: the block is a coroutine
        exec(compile(remote, f"{DOC}:remote", "exec", dont_inherit=True), {})
    lines = printed.getvalue().splitlines()
    assert lines[0] == "Attributable" and lines[-1] == "Attributable"
    events = lines[1:-1]
    assert "error" not in events
    assert any(e.startswith("values|rollout:") for e in events) and any(e.startswith("values|check:") for e in events)


async def test_veri_r1_searches_the_retrieval_server_the_environment_names(served: Served) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=served["url"])
    thread = await client.threads.create()
    configurable = model(served, "veri-r1", [VERI_R1_SEARCH, VERI_R1_SUPPORT])
    result = await client.runs.wait(
        thread["thread_id"], "veri-r1", input={"claim": RIGHT}, config={"configurable": configurable}
    )
    checked = verdict("veri-r1", result)
    assert (checked.passed, checked.label, checked.error) == (True, "SUPPORT", None)
    assert [(e.id, e.text) for e in checked.evidence] == [(ENTRY_ID, FACT)]  # the text the server retrieved
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["output"]["queries"] == ["Hog Island Light"]


async def test_rlseek_flags_the_wrong_year(served: Served) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=served["url"])
    inputs = inputs_for("rlseek", WRONG)
    config = {"configurable": model(served, "rlseek", [RLSEEK_FLAGS_1853])}
    result = await client.runs.wait(None, "rlseek", input=inputs, config=config)
    start = len("Hog Island Light was first lit in ")
    assert inputs["response"][start : start + 4] == "1853"
    assert [(s["start"], s["end"], s["text"]) for s in result["output"]["spans"]] == [(start, start + 4, "1853")]
    assert verdict("rlseek", result).passed is False


async def test_rag_zeval_finds_every_claim_supported(served: Served) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=served["url"])
    config = {"configurable": model(served, "rag-zeval", [RAG_ZEVAL_PASS])}
    result = await client.runs.wait(None, "rag-zeval", input=inputs_for("rag-zeval", RIGHT), config=config)
    assert [(c["supported"], c["total"]) for c in result["output"]["candidates"]] == [(1, 1)]
    assert verdict("rag-zeval", result).passed is True


async def test_stepgap_checks_its_own_rollout(served: Served) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=served["url"])
    config = {"configurable": model(served, "stepgap", [*SEARCH_R1_TURNS, JUDGE_OTHER_ENTITY, JUDGE_OTHER_ENTITY])}
    result = await client.runs.wait(None, "stepgap", input={"question": QUESTION}, config=config)
    output = result["output"]
    assert (output["answer"], output["n_searches"]) == ("1854", 1)
    assert [(s["index"], s["label"]) for s in output["checks"]["steps"]] == [(0, "IE"), (1, "IE")]


async def test_stepgaps_checker_checks_a_hosts_steps(served: Served) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=served["url"])
    config = {"configurable": model(served, "stepgap-verifier", [JUDGE_OTHER_ENTITY, JUDGE_OTHER_ENTITY])}
    result = await client.runs.wait(None, "stepgap-verifier", input=inputs_for("stepgap", RIGHT), config=config)
    checked = verdict("stepgap", result)
    assert (checked.passed, checked.label) == (False, "IE")
    assert [(s.index, s.label, s.repair) for s in checked.steps] == [(0, "IE", "re-search"), (1, "IE", "re-search")]


# -- streaming, embedding, errors --------------------------------------------------------------------------------
async def test_a_run_streams_its_subgraphs(served: Served) -> None:
    """StepGap runs its rollout and its checker as subgraphs: their steps arrive under their namespaces."""
    from langgraph_sdk import get_client

    client = get_client(url=served["url"])
    config = {"configurable": model(served, "stepgap-stream", [*SEARCH_R1_TURNS, JUDGE_OTHER_ENTITY] * 2)}
    events = [
        part
        async for part in client.runs.stream(
            None, "stepgap", input={"question": QUESTION}, config=config, stream_mode="updates", stream_subgraphs=True
        )
    ]
    assert not [part.data for part in events if part.event == "error"]
    namespaced = [part.event for part in events if part.event.startswith("updates|")]
    # The rollout's search loop (start → generate → retrieve → generate → finish) and the checker's stages.
    nodes = {name for part in events if part.event.startswith("updates|") for name in part.data}
    assert namespaced and {"generate", "retrieve", "judge", "route_C"} <= nodes
    top = [part.data for part in events if part.event == "updates"]
    assert [list(update) for update in top] == [["rollout"], ["check"], ["finish"]]


def test_a_served_verifier_is_a_node_of_a_host_graph(served: Served) -> None:
    """A host graph whose node is the served SEVA (``RemoteGraph``): the node's result lands in the host's state."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.pregel.remote import RemoteGraph

    class Host(TypedDict, total=False):
        claim: str
        source: str
        output: dict[str, Any]
        trajectory: dict[str, Any]

    seva = RemoteGraph("seva", url=served["url"], config={"configurable": model(served, "seva-remote", [SEVA_PASS])})
    host = StateGraph(Host)
    host.add_node("check", seva)
    host.add_edge(START, "check")
    host.add_edge("check", END)
    state = host.compile().invoke(inputs_for("seva", RIGHT))
    assert state["claim"] == RIGHT and state["output"]["label"] == "Attributable"
    assert verdict("seva", state).passed is True


async def test_a_bad_configurable_fails_the_run_naming_the_key(served: Served) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=served["url"])
    inputs = inputs_for("seva", RIGHT)
    with pytest.raises(Exception, match=r"configurable\.max_new_tokens"):
        await client.runs.wait(None, "seva", input=inputs, config={"configurable": {"max_new_tokens": "many"}})
    with pytest.raises(Exception, match=r"configurable\.model.*LangChain"):
        await client.runs.wait(None, "seva", input=inputs, config={"configurable": {"model": "langchain:os:abort"}})
    # Still serving: the next run goes through.
    config = {"configurable": model(served, "seva-after-errors", [SEVA_PASS])}
    assert verdict("seva", await client.runs.wait(None, "seva", input=inputs, config=config)).passed is True
