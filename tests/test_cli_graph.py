"""`evigraph graph AGENT`: every registered agent's state machine drawn offline, as Mermaid text or a PNG."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from typing import Any, TypedDict

import pytest
from typer.testing import CliRunner

from evigraph.cli.app import app, run
from evigraph.cli.graph import compile_for_drawing, drawable, to_dot
from evigraph.registry import get_agent, load_agents

AGENTS = sorted(load_agents()[0])
DOCS = Path(__file__).resolve().parents[1] / "docs"

KNOWN_NODES = {
    # the shared search loop: a policy turn, then a search or a corrective note, until a final turn
    "veri-r1": ["start", "generate", "retrieve", "note", "finish"],
    # Search-R1 rollouts, then the checker's stages A-C (judge) and D-E (NLI)
    "stepgap": ["generate", "retrieve", "prepare", "judge", "route_A", "route_C", "nli_D", "nli_E", "emit"],
    # one-turn agents: prompt, one reply, its parse (a repair goes back to generate), the verdict
    "rlseek": ["render_prompt", "generate", "parse", "finish"],
    "seva": ["render_prompt", "generate", "parse", "finish"],
    "rag-zeval": ["render_prompt", "generate", "parse", "finish"],
}


def _mermaid_nodes(text: str) -> set[str]:
    """Node labels (``id(label)``) and subgraph names in Mermaid text."""
    labels = set(re.findall(r"^\s*\S+\((\w+)\)\s*$", text, flags=re.MULTILINE))
    return labels | set(re.findall(r"^\s*subgraph (\S+)\s*$", text, flags=re.MULTILINE))


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing must never load a model: any attempt fails the test."""

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("drawing a graph tried to load a model")

    monkeypatch.setattr("evigraph.generators.factory.make_generator", refuse)


def test_every_built_in_agent_is_covered() -> None:
    assert set(KNOWN_NODES) <= set(AGENTS)


@pytest.mark.parametrize("agent", AGENTS)
def test_mermaid_names_the_graphs_nodes(agent: str, no_model: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", agent]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("---\nconfig:") and "graph TD;" in captured.out
    assert "draw_mermaid (offline)" in captured.err
    drawn = _mermaid_nodes(captured.out)
    compiled = compile_for_drawing(get_agent(agent).load())
    # a node that runs a subgraph is drawn as a subgraph block of the same name
    assert set(compiled.nodes) - {"__start__"} <= drawn, captured.out
    assert set(KNOWN_NODES.get(agent, [])) <= drawn, captured.out


def test_veri_r1_routes_from_generate_to_a_search_or_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", "veri-r1", "--mermaid"]) == 0
    out = capsys.readouterr().out
    for line in ("generate -.-> retrieve;", "generate -.-> note;", "generate -.-> finish;", "retrieve --> generate;"):
        assert line in out


def test_stepgap_draws_its_rollout_and_checker_inside_their_nodes() -> None:
    graph = drawable(compile_for_drawing(get_agent("stepgap").load()))
    assert {"rollout:retrieve", "check:judge", "check:nli_D", "finish"} <= set(graph.nodes)
    edges = {(edge.source, edge.target) for edge in graph.edges}
    assert ("rollout:finish", "check:prepare") in edges  # the rollout's end feeds the checker's start
    assert ("check:emit", "finish") in edges


def test_verifier_draws_the_graph_a_host_embeds(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", "stepgap", "--verifier"]) == 0
    drawn = _mermaid_nodes(capsys.readouterr().out)
    assert {"prepare", "judge", "route_A", "nli_E", "emit"} <= drawn and "retrieve" not in drawn


def test_set_changes_the_config_the_graph_is_built_with(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", "veri-r1", "--set", "offline=true"]) == 0
    assert "retrieve" not in _mermaid_nodes(capsys.readouterr().out)  # offline: one answer turn over given entries
    assert run(["graph", "veri-r1", "--set", "ofline=true"]) == 2
    assert "max_searches" in capsys.readouterr().err  # the message lists the fields


def test_a_langgraph_subgraph_node_is_drawn_inside_it() -> None:
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        x: int

    inner = StateGraph(State)
    inner.add_node("inner_a", lambda s: s)
    inner.add_node("inner_b", lambda s: s)
    inner.add_edge(START, "inner_a")
    inner.add_edge("inner_a", "inner_b")
    inner.add_edge("inner_b", END)
    outer = StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    graph = drawable(outer.compile())
    assert {"sub:inner_a", "sub:inner_b"} <= set(graph.nodes)
    dot = to_dot(graph, title="outer")
    assert 'subgraph "cluster_sub"' in dot and '"sub:inner_a" -> "sub:inner_b";' in dot


def test_dot_marks_conditional_edges_and_escapes_names() -> None:
    from langchain_core.runnables.graph import Graph

    graph = Graph()
    a, b = graph.add_node(None, 'say "hi"'), graph.add_node(None, "b")
    graph.add_edge(a, b, data="maybe", conditional=True)
    dot = to_dot(graph, title="t")
    assert '"say \\"hi\\"" -> "b" [style=dashed, label="maybe"];' in dot


@pytest.mark.skipif(
    importlib.util.find_spec("pygraphviz") is None and shutil.which("dot") is None,
    reason="Graphviz is not installed (apt-get install graphviz); --png cannot be tested",
)
@pytest.mark.parametrize("agent", ["veri-r1", "stepgap"])
def test_png_is_a_png(agent: str, tmp_path: Path, no_model: None, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "drawings" / f"{agent}.png"
    assert run(["graph", agent, "--png", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and 1_000 < len(data) < 200_000
    captured = capsys.readouterr()
    assert captured.out == ""  # --png alone prints no Mermaid
    assert re.search(r"PNG drawn by (pygraphviz|Graphviz \S*dot)", captured.err), captured.err


@pytest.fixture
def fake_png(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``write_png`` replaced by one that writes a stub file and records where (no Graphviz needed)."""
    written: list[Path] = []

    def write(graph: Any, out: Path, *, title: str) -> str:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"\x89PNG stub")
        written.append(out)
        return "stub PNG"

    monkeypatch.setattr("evigraph.cli.graph.write_png", write)
    return written


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--png"], "rlseek.png"),  # no path: AGENT.png in the current folder
        (["--png", "--mermaid"], "rlseek.png"),  # no path, another option after it
        (["--png", "drawings"], "drawings/rlseek.png"),  # a folder: AGENT.png inside it
        (["--png", "mine.png"], "mine.png"),  # an explicit file name, as before
    ],
)
def test_png_path_defaults_to_the_agent_name(
    args: list[str],
    expected: str,
    fake_png: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "drawings").mkdir()
    result = CliRunner().invoke(app, ["graph", "rlseek", *args])
    assert result.exit_code == 0, result.output
    assert fake_png == [Path(expected)] and (tmp_path / expected).is_file()
    assert ("graph TD;" in result.stdout) == ("--mermaid" in args)


@pytest.mark.skipif(
    importlib.util.find_spec("pygraphviz") is None and shutil.which("dot") is None,
    reason="Graphviz is not installed (apt-get install graphviz); --png cannot be tested",
)
def test_bare_png_writes_agent_png_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_model: None) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["graph", "seva", "--png"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "seva.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_png_without_graphviz_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pygraphviz" else find_spec(name, *a)
    )
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot binary
    assert run(["graph", "rlseek", "--png", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "apt-get install graphviz" in err and "pygraphviz" in err
    assert not (tmp_path / "x.png").exists()


def test_unknown_agent_exits_2_listing_the_agents(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["graph", "no-such-agent"]) == 2
    err = capsys.readouterr().err
    assert "unknown agent 'no-such-agent'" in err and all(agent in err for agent in AGENTS)


@pytest.mark.parametrize("agent", AGENTS)
def test_the_docs_drawings_are_current(agent: str, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/graphs/AGENT.mmd is what the command prints now (regenerate: scripts/draw_graphs.sh)."""
    stored = DOCS / "graphs" / f"{agent}.mmd"
    assert stored.is_file() and (DOCS / "images" / f"graph-{agent}.png").is_file(), "run scripts/draw_graphs.sh"
    assert run(["graph", agent]) == 0
    assert capsys.readouterr().out == stored.read_text(encoding="utf-8"), "run scripts/draw_graphs.sh"
