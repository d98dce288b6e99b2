"""The repository's own langgraph.json, as a user starts it: ``langgraph dev`` with no evigraph settings at all (the
default model, the embedded SmolLM2, and no search tool) lists every graph with its description, and Studio's
calls -- each graph drawn -- load no model: the server process never maps torch's library.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.markers import requires
from tests.serving.test_langgraph_server import DevServer, langgraph_dev

pytestmark = requires("langgraph_api", "langgraph_sdk", "langgraph_cli")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def repository_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with langgraph_dev(ROOT / "langgraph.json", tmp_path_factory.mktemp("langgraph-repo")) as server:
        yield server


def mapped_libraries(pid: int) -> str:
    maps = Path(f"/proc/{pid}/maps")
    if not maps.exists():
        pytest.skip("no /proc: cannot see what the server process loaded")
    return maps.read_text(encoding="utf-8", errors="replace")


async def test_the_repositorys_graphs_are_listed_drawn_and_load_no_model(repository_server: DevServer) -> None:
    from langgraph_sdk import get_client

    listed = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))["graphs"]
    client = get_client(url=repository_server.url)
    assistants = await client.assistants.search(limit=100)
    assert {a["graph_id"]: a["description"] for a in assistants} == {
        graph_id: entry["description"] for graph_id, entry in listed.items()
    }
    for assistant in assistants:
        drawn = await client.assistants.get_graph(assistant["assistant_id"])
        assert {"__start__", "__end__"} < {node["id"] for node in drawn["nodes"]}, assistant["graph_id"]
    libraries = mapped_libraries(repository_server.pid)
    assert "pydantic_core" in libraries  # the process that serves the graphs
    assert "libtorch" not in libraries


async def test_studio_gets_every_graphs_input_schema(repository_server: DevServer) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=repository_server.url)
    for assistant in await client.assistants.search(limit=100):
        schemas = await client.assistants.get_schemas(assistant["assistant_id"])
        assert schemas["input_schema"] and schemas["input_schema"]["properties"], assistant["graph_id"]
        assert schemas["output_schema"] and schemas["output_schema"]["properties"], assistant["graph_id"]
