"""``evigraph serve``: each flag is a field of :class:`~evigraph.serving.settings.ServeSettings` (its help is the
field's docstring); the command checks them, builds the verifiers and runs the server."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from evigraph.errors import ConfigError
from evigraph.serving.settings import ServeSettings

__all__ = ("serve_command",)

err_console = Console(stderr=True)

_FLAG_PREFIX = re.compile(r"^``--[^`]*``: ")
_FLAGS = {"agents": "--agent"}
"""Fields whose flag is not ``--`` and the field's name with dashes."""


def _help(field: str) -> str:
    """The help of a field's flag: its docstring without the leading flag name, code marks as plain backticks."""
    text = _FLAG_PREFIX.sub("", " ".join((ServeSettings.model_fields[field].description or "").split()))
    return (text[:1].upper() + text[1:]).replace("``", "`")


def _flag(field: str) -> str:
    return _FLAGS.get(field, "--" + field.replace("_", "-"))


_AGENTS, _LIMITS, _AUTH, _GUARD = "Agents", "Limits", "Authentication", "Guarded OpenAI-compatible endpoint"


def serve_command(
    agent: Annotated[
        list[str] | None, typer.Option("--agent", metavar="NAME", help=_help("agents"), rich_help_panel=_AGENTS)
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", metavar="SPEC", help=_help("model"), rich_help_panel=_AGENTS)
    ] = None,
    corpus: Annotated[
        str | None, typer.Option("--corpus", metavar="NAME|DIR", help=_help("corpus"), rich_help_panel=_AGENTS)
    ] = None,
    retriever_url: Annotated[
        str | None,
        typer.Option("--retriever-url", metavar="URL", help=_help("retriever_url"), rich_help_panel=_AGENTS),
    ] = None,
    retrieval: Annotated[
        str | None,
        typer.Option("--retrieval", metavar="bm25|dense|hybrid", help=_help("retrieval"), rich_help_panel=_AGENTS),
    ] = None,
    nli: Annotated[
        Path | None, typer.Option("--nli", metavar="DIR", help=_help("nli"), rich_help_panel=_AGENTS)
    ] = None,
    host: Annotated[str, typer.Option("--host", help=_help("host"))] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help=_help("port"))] = 8000,
    max_concurrency: Annotated[
        int, typer.Option("--max-concurrency", help=_help("max_concurrency"), rich_help_panel=_LIMITS)
    ] = 64,
    deadline_s: Annotated[
        float | None, typer.Option("--deadline-s", help=_help("deadline_s"), rich_help_panel=_LIMITS)
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", help=_help("max_body_bytes"), rich_help_panel=_LIMITS)
    ] = 1_048_576,
    max_batch: Annotated[int, typer.Option("--max-batch", help=_help("max_batch"), rich_help_panel=_LIMITS)] = 64,
    token_env: Annotated[
        str | None, typer.Option("--token-env", metavar="NAME", help=_help("token_env"), rich_help_panel=_AUTH)
    ] = None,
    guard: Annotated[
        str | None, typer.Option("--guard", metavar="AGENT", help=_help("guard"), rich_help_panel=_GUARD)
    ] = None,
    upstream: Annotated[
        str | None, typer.Option("--upstream", metavar="URL", help=_help("upstream"), rich_help_panel=_GUARD)
    ] = None,
    guard_mode: Annotated[
        str,
        typer.Option("--guard-mode", metavar="repair|block|annotate", help=_help("guard_mode"), rich_help_panel=_GUARD),
    ] = "repair",
    upstream_key_env: Annotated[
        str | None,
        typer.Option("--upstream-key-env", metavar="NAME", help=_help("upstream_key_env"), rich_help_panel=_GUARD),
    ] = None,
) -> None:
    """Serve registered verifiers over HTTP: POST an agent's input fields to /v1/verify/AGENT, get its verdict.

    Every agent is built once, before the server binds, on one shared model; SIGTERM drains (accepted requests
    are answered, new ones refused). See docs/serving.md.
    """
    from evigraph.serving.app import build_verifiers, create_app, load_guard_router, serve

    values = {
        "agents": tuple(agent or ()),
        "model": model,
        "corpus": corpus,
        "retriever_url": retriever_url,
        "retrieval": retrieval,
        "nli": nli,
        "host": host,
        "port": port,
        "max_concurrency": max_concurrency,
        "deadline_s": deadline_s,
        "max_body_bytes": max_body_bytes,
        "max_batch": max_batch,
        "token_env": token_env,
        "guard": guard,
        "upstream": upstream,
        "guard_mode": guard_mode,
        "upstream_key_env": upstream_key_env,
    }
    settings = _settings(values)
    # Everything a flag names is checked before any model loads.
    token = settings.token()
    api_key = settings.upstream_key()
    make_guard = load_guard_router() if settings.guard else None
    verifiers = build_verifiers(settings)
    routers = []
    if make_guard is not None and settings.guard is not None and settings.upstream is not None:
        routers.append(
            make_guard(
                verifiers[settings.guard],
                upstream=settings.upstream,
                mode=settings.guard_mode,
                api_key=api_key,
                timeout_s=settings.deadline,
            )
        )
    app = create_app(settings, verifiers, routers=routers, token=token)
    _log_requests_to_stderr()
    if token is None and settings.host not in {"127.0.0.1", "localhost", "::1"}:
        err_console.print(f"[yellow]warning:[/] serving on {escape(settings.host)} without a bearer token")
    # uvicorn prints the address once bound (the port too when --port 0 let the system pick it).
    guarded = f"; the guarded endpoint POST /v1/chat/completions ({settings.guard})" if settings.guard else ""
    err_console.print(
        f"serving {escape(', '.join(verifiers))}: POST /v1/verify/AGENT{escape(guarded)}; deadline "
        f"{settings.deadline:g} s{'' if settings.deadline_s else ' (--deadline-s to change)'}"
    )
    serve(app, settings)


def _settings(values: dict[str, object]) -> ServeSettings:
    """``values`` as settings; a refused value is an error naming its flag."""
    try:
        return ServeSettings.model_validate(values)
    except ValidationError as error:
        problems = []
        for problem in error.errors(include_url=False):
            where = ", ".join(_flag(str(part)) for part in problem["loc"][:1]) or "flags"
            problems.append(f"{where}: {problem['msg'].removeprefix('Value error, ')}")
        raise ConfigError("; ".join(problems)) from None


def _log_requests_to_stderr() -> None:
    """The access log's JSON lines, one per request, as they are (no timestamp or level around them)."""
    access = logging.getLogger("evigraph.serving.access")
    if not any(getattr(handler, "evigraph_access", False) for handler in access.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.evigraph_access = True  # type: ignore[attr-defined]
        access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False
