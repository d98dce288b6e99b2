"""What every request to ``evigraph serve`` passes, whichever router answers it: one ASGI middleware, so the
verification API and any router mounted beside it (the guarded endpoint) get the same treatment.

In order, for each HTTP request:

1. **Request id**: the client's ``X-Request-ID`` when it is a short token (letters, digits, ``._:-``, at most 128),
   else a new one; echoed in the response's ``X-Request-ID``.
2. **Bearer token** (when the server has one), on everything but the probes: ``Authorization: Bearer TOKEN``
   compared in constant time (:func:`hmac.compare_digest`); a missing or wrong token is answered 401 before the
   body is read or anything runs.
3. **Concurrency limit**, on everything but the probes and ``/metrics``: a request over ``max_concurrency`` in
   flight is answered 429 with ``Retry-After`` at once (never queued: a queue would only move the wait into the
   client's timeout, and the load balancer can send the request to another replica).
4. The app answers (the body-size limit is FastAPI's own ``max_body_size``, enforced as the body is read).
5. **Metrics and one JSON log line** (logger ``evigraph.serving.access``): request id, method, endpoint (the
   answering route's path template, never the raw path; ``unrouted`` when no route answered), agent, status,
   latency and -- for verifications -- whether they passed. Never a header's or the body's text.

A route tells the gate how its verifications came out through :func:`record_of`.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evigraph.serving.metrics import ServeMetrics

__all__ = ("OPEN_PATHS", "RETRY_AFTER_S", "UNLIMITED_PATHS", "Gate", "RequestRecord", "record_of")

access_log = logging.getLogger("evigraph.serving.access")

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Answered without a token: a load balancer's or orchestrator's probes carry none."""
UNLIMITED_PATHS = OPEN_PATHS | {"/metrics"}
"""Never refused by the concurrency limit: an overloaded server must still say so."""

RETRY_AFTER_S = 1
"""The ``Retry-After`` of a 429: a slot frees as soon as any request in flight ends, and with model calls of
seconds some end every second at full load."""

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_SCOPE_KEY = "evigraph.request"


@dataclass
class RequestRecord:
    """What one request did, filled in as it is answered (read by the log line and the metrics)."""

    id: str
    agent: str = ""
    outcomes: list[bool] = field(default_factory=list)
    """``passed`` of each verification the request ran, in order."""

    def log_fields(self) -> dict[str, object]:
        if not self.outcomes:
            return {"passed": None}
        if len(self.outcomes) == 1:
            return {"passed": self.outcomes[0]}
        return {"passed": sum(self.outcomes), "verifications": len(self.outcomes)}


def record_of(scope: Scope) -> RequestRecord | None:
    """The :class:`RequestRecord` of the request ``scope`` belongs to (``None`` outside the gate)."""
    return scope.get(_SCOPE_KEY)


class Gate:
    """The middleware (see the module docstring).

    Args:
        app: the rest of the ASGI stack.
        metrics: where requests are counted.
        token: the bearer token; ``None``: no authentication.
        max_concurrency: requests in flight at once, probes and ``/metrics`` not counted.
        agent_of: path → the agent it verifies with (a metrics label and a log field).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: ServeMetrics,
        token: str | None,
        max_concurrency: int,
        agent_of: Mapping[str, str],
    ) -> None:
        self.app, self.metrics = app, metrics
        self._token = token.encode() if token else None
        self.max_concurrency = max_concurrency
        self.agent_of = dict(agent_of)
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = _headers(scope)
        offered = headers.get("x-request-id", "")
        record = RequestRecord(id=offered if _REQUEST_ID.fullmatch(offered) else uuid.uuid4().hex)
        scope[_SCOPE_KEY] = record
        path = scope["path"]
        record.agent = self.agent_of.get(path, "")
        status = 500  # what the log says when the app dies before answering

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", record.id.encode())]
            await send(message)

        limited = path not in UNLIMITED_PATHS
        admitted = False
        try:
            if path not in OPEN_PATHS and not self._authorized(headers):
                await _refuse(answer, 401, "missing or wrong bearer token", {"www-authenticate": "Bearer"})
            elif limited and self.in_flight >= self.max_concurrency:
                await _refuse(
                    answer,
                    429,
                    f"{self.in_flight} requests in flight, the limit is {self.max_concurrency}; retry later",
                    {"retry-after": str(RETRY_AFTER_S)},
                )
            else:
                if limited:
                    admitted = True
                    self.in_flight += 1
                    self.metrics.in_flight.inc()
                await self.app(scope, receive, answer)
        finally:
            if admitted:
                self.in_flight -= 1
                self.metrics.in_flight.dec()
            seconds = time.perf_counter() - started
            endpoint = _endpoint(scope)
            self.metrics.request(endpoint=endpoint, agent=record.agent, status=status, seconds=seconds)
            line = {
                "request_id": record.id,
                "method": scope["method"],
                "endpoint": endpoint,
                "agent": record.agent or None,
                "status": status,
                "latency_ms": round(1000 * seconds, 1),
                **record.log_fields(),
            }
            access_log.info(json.dumps(line))

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        if self._token is None:
            return True
        scheme, _, presented = headers.get("authorization", "").partition(" ")
        # Compared even when the scheme is wrong, so the time taken says nothing about which part failed.
        same = hmac.compare_digest(presented.strip().encode(), self._token)
        return same and scheme.lower() == "bearer"


def _endpoint(scope: Scope) -> str:
    """The path template of the route that answered (FastAPI's router leaves it in the scope); ``unrouted`` when
    none did (the gate refused the request, or no route matches). A label a client cannot grow."""
    route = scope.get("route")
    return getattr(route, "path", None) or "unrouted"


def _headers(scope: Scope) -> dict[str, str]:
    return {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}


async def _refuse(send: Send, status: int, detail: str, headers: Mapping[str, str]) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(key.encode(), value.encode()) for key, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
