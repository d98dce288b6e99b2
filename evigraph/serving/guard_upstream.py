"""The guarded endpoint's upstream: any OpenAI-compatible server (vLLM, OpenAI, a LiteLLM proxy ...), called with
httpx's async client.

Each call has one deadline for the whole exchange (``timeout_s``, connecting and reading included). Whatever goes
wrong becomes an :class:`UpstreamError` with the status the guard answers: 504 past the deadline, 502 when the
server cannot be reached, fails (5xx) or answers something that is not a chat completion; the upstream's own
client errors (4xx: an unknown model, a bad parameter) keep their status and message, since they are the client's
to fix. The API key goes in the ``Authorization`` header and nowhere else (not in errors, not in logs).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
from pydantic import ValidationError

from evigraph.serving.guard_openai import Completion, first_error_field

__all__ = ("Upstream", "UpstreamError")

logger = logging.getLogger(__name__)


class UpstreamError(Exception):
    """The upstream did not give a usable answer; ``status`` and ``kind`` are what the guard's client gets."""

    def __init__(self, status: int, message: str, kind: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.headers = headers or {}


class Upstream:
    """One OpenAI-compatible server.

    Args:
        base_url: the server's API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key: its bearer token, or ``None``.
        timeout_s: the deadline of one call.
    """

    def __init__(self, base_url: str, *, api_key: str | None, timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def chat(self, body: dict[str, Any]) -> tuple[dict[str, Any], Completion]:
        """``POST /chat/completions`` with ``body``: the completion's JSON as sent, and as read."""
        payload = await self._call("POST", "/chat/completions", body)
        try:
            return payload, Completion.model_validate(payload)
        except ValidationError as error:
            where, _ = first_error_field(error)
            message = f"the upstream's reply is not a chat completion ({where})"
            raise UpstreamError(502, message, "upstream_error") from None

    async def models(self) -> dict[str, Any]:
        """``GET /models``, the upstream's JSON as sent."""
        return await self._call("GET", "/models")

    async def aclose(self) -> None:
        """Close the connection pool (the router's shutdown)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _pool(self) -> httpx.AsyncClient:
        # Connections belong to the loop that opened them: a router served again on a new loop gets a new pool.
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = httpx.AsyncClient(headers=self._headers, timeout=self.timeout_s)
            self._loop = loop
        return self._client

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await self._pool().request(method, url, json=body)
        except (TimeoutError, httpx.TimeoutException):
            logger.warning("upstream %s %s: no answer within %s s", method, url, self.timeout_s)
            raise UpstreamError(
                504, f"the upstream model server did not answer within {self.timeout_s:g} s", "upstream_timeout"
            ) from None
        except httpx.HTTPError as error:
            logger.warning("upstream %s %s unreachable: %s", method, url, type(error).__name__)
            raise UpstreamError(
                502, f"the upstream model server could not be reached ({type(error).__name__})", "upstream_error"
            ) from None
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.status_code >= 400:
            raise _status_error(response.status_code, payload, response.headers.get("retry-after"))
        if not isinstance(payload, dict):
            raise UpstreamError(502, "the upstream's reply is not a JSON object", "upstream_error")
        return payload


def _status_error(status: int, payload: Any, retry_after: str | None) -> UpstreamError:
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    detail = message if isinstance(message, str) else "no message"
    if status >= 500:
        return UpstreamError(502, f"the upstream model server failed (HTTP {status}): {detail}", "upstream_error")
    kind = error.get("type") if isinstance(error, dict) and isinstance(error.get("type"), str) else "upstream_error"
    return UpstreamError(status, detail, kind, headers={"Retry-After": retry_after} if retry_after else None)
