"""What ``evigraph serve`` is told: one pydantic model, each field one flag of the command (named under it).

:class:`ServeSettings` holds no secret: the bearer token and the upstream's API key stay in the environment and
the settings name only the variables that hold them, so dumping or logging the settings shows neither.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evigraph.errors import ConfigError

__all__ = ("DEFAULT_TOKEN_ENV", "GuardMode", "ServeSettings")

DEFAULT_TOKEN_ENV = "EVIGRAPH_SERVE_TOKEN"
"""The environment variable read for the bearer token when ``--token-env`` is not given."""

GuardMode = Literal["repair", "block", "annotate"]

DEADLINE_S = 60.0
"""The default deadline for a model behind a server (``openai:``), on a GPU (``vllm:``) or scripted."""
LOCAL_DEADLINE_S = 600.0
"""The default deadline for a model this process runs with transformers or llama.cpp weights (the embedded
SmolLM2, ``hf:``, ``gguf:``): on 2 CPU cores one SEVA verification of the embedded model took over a minute."""
LOCAL_KINDS = frozenset({"embedded", "hf", "gguf"})


class ServeSettings(BaseModel):
    """Settings of one ``evigraph serve`` process (see ``docs/serving.md``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    agents: tuple[str, ...] = ()
    """``--agent``: an agent to serve; repeat the flag for more. None named: every registered agent that builds
    with the given model and search (the others are skipped with a warning). The guard's agent is served too."""
    model: str | None = None
    """``--model SPEC``: the model spec every served agent shares (``openai:NAME@URL``, ``scripted:FILE`` ...;
    default: the configured model)."""
    corpus: str | None = None
    """``--corpus NAME|DIR|pyserini:NAME``: the corpus the agents that search use (a name, a directory, or a
    Pyserini prebuilt BM25 index)."""
    retriever_url: str | None = None
    """``--retriever-url URL``: a Search-R1 style ``/retrieve`` server instead of a local corpus."""
    retrieval: Literal["bm25", "dense", "hybrid"] | None = None
    """``--retrieval bm25|dense|hybrid``: how ``--corpus`` is searched (default BM25; dense and hybrid need the
    FAISS index ``evigraph corpus embed`` builds)."""
    nli: Path | None = None
    """``--nli DIR``: an NLI checkpoint for the agents that use one (StepGap)."""
    host: str = "127.0.0.1"
    """``--host``: the address to bind (loopback unless told otherwise)."""
    port: int = Field(8000, ge=0, le=65535)
    """``--port``: the port to bind (0: any free port)."""
    max_concurrency: int = Field(64, ge=1)
    """``--max-concurrency``: requests in flight at once (a batch counts once); more are answered 429."""
    deadline_s: float | None = Field(None, gt=0)
    """``--deadline-s``: seconds a verification may take; past it the answer is a verdict with ``error`` set
    (default: 60 for a model behind a server or on a GPU, 600 for one this process runs itself, such as the embedded
    model on CPU, whose verification takes minutes)."""
    max_body_bytes: int = Field(1_048_576, ge=1)
    """``--max-body-bytes``: the largest request body accepted (413 above)."""
    max_batch: int = Field(64, ge=1)
    """``--max-batch``: the most inputs in one batch request (422 above)."""
    token_env: str | None = None
    """``--token-env NAME``: the environment variable holding the bearer token (default: ``EVIGRAPH_SERVE_TOKEN``;
    no token there: no authentication). Named explicitly, the variable must be set."""
    guard: str | None = None
    """``--guard AGENT``: also serve the guarded OpenAI-compatible endpoint, checked by this agent."""
    upstream: str | None = None
    """``--upstream URL``: the OpenAI-compatible server the guarded endpoint forwards to."""
    guard_mode: GuardMode = "repair"
    """``--guard-mode``: what a failed check does to the upstream's answer."""
    upstream_key_env: str | None = None
    """``--upstream-key-env NAME``: the environment variable holding the upstream's API key."""

    @model_validator(mode="after")
    def _check(self) -> ServeSettings:
        if self.corpus and self.retriever_url:
            raise ValueError("give --corpus or --retriever-url, not both")
        if self.retrieval not in (None, "bm25") and not self.corpus:
            where = "a /retrieve server searches the way it was started" if self.retriever_url else "no --corpus"
            raise ValueError(f"--retrieval {self.retrieval} applies to a local --corpus ({where})")
        if (self.guard is None) != (self.upstream is None):
            raise ValueError("--guard AGENT and --upstream URL go together")
        if self.upstream is not None and not self.upstream.startswith(("http://", "https://")):
            raise ValueError(f"--upstream must be an http(s) URL, got {self.upstream!r}")
        return self

    @property
    def search(self) -> str | None:
        """What the served agents search: the corpus or the retriever URL (``None``: neither given)."""
        return self.corpus or self.retriever_url

    def token(self) -> str | None:
        """The bearer token from the environment (``None``: no authentication).

        Raises:
            ConfigError: ``--token-env`` names a variable that is unset or empty.
        """
        name = self.token_env or DEFAULT_TOKEN_ENV
        value = os.environ.get(name) or None
        if value is None and self.token_env is not None:
            raise ConfigError(f"the environment variable {name} holds no token", source="--token-env")
        return value

    def upstream_key(self) -> str | None:
        """The upstream's API key from the environment (``None`` when no variable is named).

        Raises:
            ConfigError: ``--upstream-key-env`` names a variable that is unset or empty.
        """
        if self.upstream_key_env is None:
            return None
        value = os.environ.get(self.upstream_key_env) or None
        if value is None:
            raise ConfigError(
                f"the environment variable {self.upstream_key_env} holds no key", source="--upstream-key-env"
            )
        return value

    @property
    def deadline(self) -> float:
        """``deadline_s``, or its default for the model's kind (read from the configured model when none is named)."""
        if self.deadline_s is not None:
            return self.deadline_s
        from evigraph.config import load_settings
        from evigraph.generators.factory import parse_model_spec

        kind = parse_model_spec(self.model or load_settings().generator.model).kind
        return LOCAL_DEADLINE_S if kind in LOCAL_KINDS else DEADLINE_S

    @property
    def drain_s(self) -> float:
        """How long a draining server waits for accepted requests: every one ends within the deadline, so the
        deadline and a margin for writing the answers."""
        return self.deadline + 5.0
