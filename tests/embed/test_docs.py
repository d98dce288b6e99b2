"""Every snippet of docs/embedding.md runs against the scripted Hog Island Light case (tests/embed/hosts.py), the
four forms in order in one namespace, the checkpointer one after the node: the names the doc leaves to the reader
-- the host's chat model, a search tool, the host's own agent model, a web-search tool and an answering node --
are given here, and each snippet's verdict is checked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from evigraph.embed import EvigraphChatModel, Verification
from tests.embed.hosts import RIGHT, WRONG, Memory, scripted
from tests.embed.test_middleware import SEARCH, ScriptedChat, search_tool

DOC = Path(__file__).resolve().parents[2] / "docs" / "embedding.md"


def snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_doc_shows_the_four_forms_and_a_checkpointer() -> None:
    assert len(snippets()) == 5


def test_every_snippet_runs_and_gives_the_verdict_it_promises() -> None:
    node, tool, middleware, router, _ = snippets()
    namespace: dict[str, Any] = {"chat_model": EvigraphChatModel(generator=scripted("veri-r1")), "search": Memory()}

    exec(compile(node, f"{DOC}:node", "exec"), namespace)
    verdict = namespace["verdict"]
    assert isinstance(verdict, Verification) and not verdict.passed and verdict.label == "REFUTE"
    assert verdict.repair and verdict.evidence[0].text

    namespace["host_model"] = ScriptedChat(script=[{"tool": "verify_claim", "args": {"claim": WRONG}}, "1854."])
    exec(compile(tool, f"{DOC}:tool", "exec"), namespace)
    verdict = namespace["verdict"]
    assert isinstance(verdict, Verification) and not verdict.passed

    host = ScriptedChat(script=[SEARCH, WRONG, RIGHT])  # answers wrong, is sent back once, answers right
    namespace.update(host_model=host, web_search=search_tool())
    exec(compile(middleware, f"{DOC}:middleware", "exec"), namespace)
    assert namespace["verdict"].passed and len(host.calls) == 3
    assert namespace["result"]["messages"][-1].content == RIGHT

    def answer_node(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": RIGHT if state.get("verification") else WRONG}

    namespace["answer_node"] = answer_node
    exec(compile(router, f"{DOC}:router", "exec"), namespace)
    result = namespace["result"]
    assert result["verification"].passed and result["verification_attempts"] == 2 and result["answer"] == RIGHT


def test_the_checkpointer_snippet_reads_the_verdict_back_from_its_sqlite_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node, *_, saver = snippets()
    monkeypatch.chdir(tmp_path)  # the snippet writes host.sqlite where it runs
    namespace: dict[str, Any] = {"chat_model": EvigraphChatModel(generator=scripted("veri-r1")), "search": Memory()}
    exec(compile(node, f"{DOC}:node", "exec"), namespace)
    exec(compile(saver, f"{DOC}:checkpointers", "exec"), namespace)
    verdict = namespace["verdict"]
    assert isinstance(verdict, Verification) and not verdict.passed and verdict.label == "REFUTE"
    assert (tmp_path / "host.sqlite").is_file()


def test_the_readme_snippet_builds_all_four_forms() -> None:
    readme = DOC.parents[1] / "README.md"
    [snippet] = [s for s in re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.DOTALL)
                 if "evigraph.embed" in s]  # fmt: skip
    namespace: dict[str, Any] = {"chat_model": EvigraphChatModel(generator=scripted("veri-r1")), "search": Memory()}
    exec(compile(snippet, "README.md:embedding", "exec"), namespace)
    assert callable(namespace["route"]) and namespace["tool"].name == "check_attribution"
    assert namespace["guard"].name.startswith("VerificationMiddleware") and namespace["node"].name == "verify_veri_r1"
