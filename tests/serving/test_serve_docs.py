"""The snippets of docs/serving.md's ``evigraph serve`` section run: its two Python blocks (a client, an app built in
Python) and its ``curl`` calls to a verification and a batch, against a served scripted SEVA and RAG-Zeval (the
doc's ``127.0.0.1:8000`` replaced by the test server's address)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from evigraph.embed.verifier import Verifier
from tests.embed.hosts import scripted
from tests.serving.test_serve import serve

DOC = Path(__file__).resolve().parents[2] / "docs" / "serving.md"


def section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## `evigraph serve`")
    return text[start : text.index("\n## ", start + 1)]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), flags=re.DOTALL)


def test_the_section_has_the_snippets_this_test_runs() -> None:
    assert len(blocks("python")) == 2
    assert len([b for b in blocks("bash") if b.lstrip().startswith("curl") and "/v1/verify/" in b]) == 2


def test_the_python_snippets_run() -> None:
    client_snippet, app_snippet = blocks("python")
    verifiers = {"seva": Verifier("seva", model=scripted("seva"))}
    with serve(verifiers) as url:
        namespace: dict[str, Any] = {"base_url": url}
        exec(compile(client_snippet, f"{DOC}:client", "exec"), namespace)
    assert namespace["verdict"]["passed"] is False and namespace["verdict"]["label"] == "Not Attributable"

    namespace = {"chat_model": scripted("seva")}
    exec(compile(app_snippet, f"{DOC}:app", "exec"), namespace)
    assert isinstance(namespace["app"], FastAPI)
    with TestClient(namespace["app"]) as client:
        inputs = {"claim": "It was first lit in 1854.", "source": "Hog Island Light was first lit in 1854."}
        assert client.post("/v1/verify/seva", json=inputs).json()["passed"] is True


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_curl_calls_run() -> None:
    calls = [b for b in blocks("bash") if b.lstrip().startswith("curl") and "/v1/verify/" in b]
    verifiers = {name: Verifier(name, model=scripted(name)) for name in ("seva", "rag-zeval")}
    with serve(verifiers) as url:
        answers = [
            subprocess.run(
                ["bash", "-c", call.replace("http://127.0.0.1:8000", url)], capture_output=True, text=True, check=True
            ).stdout
            for call in calls
        ]
    single, batch = (json.loads(answer) for answer in answers)
    assert single["agent"] == "seva" and single["passed"] is False
    [ranked] = batch["verifications"]
    assert ranked["agent"] == "rag-zeval" and ranked["passed"] is False  # the 1853 candidate is not supported
