"""``evigraph serve``: registered verifiers behind an HTTP API, for hosts in any language.

:func:`build_verifiers` builds one :class:`~evigraph.embed.verifier.Verifier` per served agent, once, before the
server binds, all on one shared model (and search tool), so concurrent requests -- to one agent or several --
share the generator's batched calls. :func:`create_app` puts them behind FastAPI: the verification API
(:mod:`evigraph.serving.verify_api`), the probes ``/healthz`` (the process answers) and ``/readyz`` (verifiers
built, not draining), ``/metrics`` (:mod:`evigraph.serving.metrics`), and any extra routers (the guarded
OpenAI-compatible endpoint), every route behind the same gate (:mod:`evigraph.serving.gate`: token, concurrency
limit, request id, metrics, one JSON log line) and FastAPI's body-size limit. :func:`serve` runs it under uvicorn
and drains on SIGTERM or SIGINT: the listening socket closes (new connections are refused), ``/readyz`` turns 503
on connections still open, and every accepted request is answered -- each ends within the deadline, and uvicorn
waits that long and a margin before cancelling anything.

The server keeps no state between requests: replicas behind any load balancer share nothing but the model server
they all point at (``docs/serving.md``, Scale-out).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI, Response
from fastapi.responses import JSONResponse

from evigraph.embed.verifier import Verifier
from evigraph.errors import ConfigError
from evigraph.serving.gate import Gate
from evigraph.serving.metrics import CONTENT_TYPE_LATEST, ServeMetrics
from evigraph.serving.settings import ServeSettings
from evigraph.serving.verify_api import batch_path, verify_path, verify_router
from evigraph.version import __version__

__all__ = ("build_verifiers", "create_app", "load_guard_router", "serve")

logger = logging.getLogger(__name__)


def build_verifiers(settings: ServeSettings, *, model: Any = None) -> dict[str, Verifier]:
    """One verifier per agent ``settings`` names (and the guard's agent), all on one model and one search tool.

    Args:
        settings: which agents (none named: every registered one that builds), the model spec, the search.
        model: a model object to use instead of ``settings.model`` (an evigraph generator or a LangChain chat
            model), for hosts that build the app in Python.

    Raises:
        ConfigError: a named agent (or the guard's) that does not build, naming it and why; no agent builds.
    """
    from evigraph.embed.agent import resolve_model, resolve_search
    from evigraph.registry import get_agent, load_agents
    from evigraph.tools.search import check_retrieval

    required = list(dict.fromkeys([*settings.agents, *([settings.guard] if settings.guard else [])]))
    for name in required:  # a misspelt name fails before the model loads
        try:
            get_agent(name)
        except ConfigError as error:
            flag = "--agent" if name in settings.agents else "--guard"
            raise ConfigError(f"agent {name!r} cannot be served: {error}", source=flag) from None
    candidates = required if settings.agents else list(dict.fromkeys([*required, *load_agents()[0]]))
    check_retrieval(corpus=settings.corpus, retriever_url=settings.retriever_url, retrieval=settings.retrieval)
    generator = resolve_model(model if model is not None else settings.model)
    search = resolve_search(settings.search, retrieval=settings.retrieval)
    nli = str(settings.nli) if settings.nli is not None else None
    verifiers: dict[str, Verifier] = {}
    for name in candidates:
        try:
            verifiers[name] = Verifier(name, model=generator, search=search, nli=nli)
        except ConfigError as error:
            if name in required:
                flag = "--agent" if name in settings.agents else "--guard"
                raise ConfigError(f"agent {name!r} cannot be served: {error}", source=flag) from None
            logger.warning("not serving %s: %s", name, error)
    if not verifiers:
        raise ConfigError("no registered agent builds with this model and search; name one with --agent")
    return verifiers


def load_guard_router() -> Callable[..., APIRouter]:
    """``evigraph.serving.guard.guard_router``, imported only when a guard is asked for.

    Raises:
        ConfigError: the guarded endpoint is not installed.
    """
    try:
        from evigraph.serving.guard import guard_router
    except ImportError as error:
        raise ConfigError(f"the guarded endpoint is not available: {error}", source="--guard") from None
    return guard_router


def create_app(
    settings: ServeSettings,
    verifiers: dict[str, Verifier],
    *,
    routers: Sequence[APIRouter] = (),
    token: str | None = None,
) -> FastAPI:
    """The FastAPI app serving ``verifiers`` under ``settings``' limits.

    Args:
        settings: limits (concurrency, deadline, body size, batch size).
        verifiers: agent name → its verifier (:func:`build_verifiers`), shared by every request.
        routers: more routers mounted beside the verification API (the guarded endpoint); the gate and the
            body-size limit apply to them too.
        token: the bearer token every request but the probes must carry (``None``: no authentication); the CLI
            reads it from the environment (:meth:`ServeSettings.token`).
    """
    metrics = ServeMetrics()
    app = FastAPI(
        title="evigraph serve",
        version=__version__,
        summary="Registered verifiers behind an HTTP API: inputs in, a Verification out.",
        max_body_size=settings.max_body_bytes,
    )
    app.state.metrics = metrics
    app.state.draining = False
    app.include_router(
        verify_router(verifiers, metrics=metrics, deadline_s=settings.deadline, max_batch=settings.max_batch)
    )
    for router in routers:
        app.include_router(router)

    @app.get("/healthz", tags=["probes"], summary="The process answers")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["probes"], summary="Verifiers built and not draining (else 503)")
    async def readyz() -> JSONResponse:
        ready = bool(verifiers) and not app.state.draining
        body = {"ready": ready, "draining": app.state.draining, "agents": list(verifiers)}
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/metrics", tags=["probes"], summary="Prometheus counters", response_class=Response)
    async def metrics_text() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    agent_of = {path: name for name in verifiers for path in (verify_path(name), batch_path(name))}
    app.add_middleware(
        Gate,
        metrics=metrics,
        token=token,
        max_concurrency=settings.max_concurrency,
        agent_of=agent_of,
    )
    return app


def serve(app: FastAPI, settings: ServeSettings) -> None:
    """Run ``app`` under uvicorn on ``settings.host``:``settings.port`` until SIGTERM or SIGINT, then drain (see
    the module docstring)."""
    import uvicorn

    from evigraph.machine import tune_gc_for_long_run

    # The verifiers, the model and the app live as long as the process: the collector need not rescan them.
    tune_gc_for_long_run()

    class _Draining(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            app.state.draining = True
            super().handle_exit(sig, frame)

    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        access_log=False,  # the gate writes one JSON line per request instead
        timeout_graceful_shutdown=int(settings.drain_s) + 1,
        log_level="info",
    )
    _Draining(config).run()
