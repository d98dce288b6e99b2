"""The guarded endpoint's section of docs/serving.md runs: its ``openai`` and ``ChatOpenAI`` snippets, unchanged
but for the guard's address, against a served guard (``block`` mode, as the section's command line) in front of a
scripted upstream serving the section's model name, and print the verdicts they promise."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

import tests.generators.fake_openai_server as fake_server
from evigraph.serving.guard import guard_router
from tests.embed.hosts import RIGHT
from tests.serving.test_guard import ToolCallingServer, running, verifier

DOC = Path(__file__).resolve().parents[2] / "docs" / "serving.md"
HEADING = "## A guarded OpenAI-compatible endpoint"
ADDRESS = "http://127.0.0.1:8080/v1"
"""Where the section's snippets expect the guard (its command line's ``--port 8080``)."""
SNIPPET_MODEL = "qwen2.5-7b"


def section() -> str:
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert HEADING in text, f"{DOC.name} has no section {HEADING!r}"
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0]


def snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", section(), flags=re.DOTALL)


def test_the_section_shows_the_command_line_and_both_clients() -> None:
    text = section()
    assert "evigraph serve --guard seva" in text and "--upstream http://127.0.0.1:8000/v1" in text
    assert [("from openai import" in s, "ChatOpenAI(" in s) for s in snippets()] == [(True, False), (False, True)]


def test_every_snippet_runs_against_a_served_guard(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fake_server, "_ROLES", {*fake_server._ROLES, "tool"})
        with ToolCallingServer(SNIPPET_MODEL) as upstream:
            upstream.script(lambda messages: RIGHT)
            app = FastAPI()
            app.include_router(guard_router(verifier(), upstream=upstream.base_url, mode="block"))
            with running(app) as url:
                printed = []
                for i, snippet in enumerate(snippets()):
                    namespace: dict[str, Any] = {}
                    exec(compile(snippet.replace(ADDRESS, f"{url}/v1"), f"{DOC}:{HEADING}:{i}", "exec"), namespace)
                    printed.append(capsys.readouterr().out)
    openai_out, langchain_out = printed
    # The tool turn passes, its answer printed; the stream's text arrives whole, its verdict after it.
    assert openai_out == f"passed pass\n{RIGHT}\n{RIGHT}\n passed\n"
    assert langchain_out == f"passed {RIGHT}\n"
    assert [b["messages"][-1]["role"] for b in upstream.bodies] == ["tool", "user", "tool"]
