"""A :class:`~evigraph.tools.search.SearchTool` that asks a Search-R1-style retrieval server over HTTP.

Works with :mod:`evigraph.tools.retrieval_server` and with Search-R1's / Veri-R1's own servers: it posts
``{"queries", "topk", "return_scores": true}`` to ``{base_url}/retrieve`` (the URL may be given with or without
the ``/retrieve`` path) and maps each returned document back to ``Evidence``: the ``text`` field where the
server sends one (ours does), else ``contents``; the ``title`` field, else the first line of ``contents``
without quotes (Search-R1's layout). Upstream BM25 servers send no ``id``; the title stands in for it then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Sequence
from typing import Any

import httpx

from evigraph.errors import ConfigError, ToolError
from evigraph.trajectory import Evidence

__all__ = ("RemoteSearch",)

_RETRY_STATUS = frozenset({502, 503, 504})


class RemoteSearch:
    """Search through a retrieval server.

    Args:
        base_url: the server's root, ``http://127.0.0.1:8000``, or its endpoint, ``http://127.0.0.1:8000/retrieve``
            (the form Search-R1 configs use); recorded on each ``Evidence.source``.
        timeout_s: per-request timeout in seconds.
        max_retries: extra attempts after a connection failure, a timeout or a 502/503/504 (with backoff).
            Other 4xx/5xx answers fail at once.
        transport: answers both the sync and the async client in place of the network (tests); ``None`` for
            httpx's own.

    Raises:
        ConfigError: ``timeout_s`` ≤ 0 or ``max_retries`` < 0.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 30,
        max_retries: int = 2,
        transport: httpx.MockTransport | None = None,
    ) -> None:
        if timeout_s <= 0 or max_retries < 0:
            raise ConfigError(f"need timeout_s > 0 and max_retries ≥ 0, got {timeout_s} and {max_retries}")
        self.base_url = base_url.rstrip("/").removesuffix("/retrieve")
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self._transport = transport
        self._client = httpx.Client(base_url=self.base_url, timeout=timeout_s, transport=transport)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RemoteSearch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @staticmethod
    def _payload(queries: Sequence[str], k: int) -> dict[str, Any]:
        if k < 1:
            raise ConfigError(f"k must be ≥ 1, got {k}")
        return {"queries": list(queries), "topk": k, "return_scores": True}

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Evidence]]:
        """Top-``k`` entries per query, in query order, from one request."""
        payload = self._payload(queries, k)
        if not payload["queries"]:
            return []
        plan = self._attempts(len(payload["queries"]))
        delay = next(plan)
        while True:
            if delay:
                time.sleep(delay)
            try:
                outcome: httpx.Response | httpx.TransportError = self._client.post("/retrieve", json=payload)
            except httpx.TransportError as error:
                outcome = error
            try:
                delay = plan.send(outcome)
            except StopIteration as final:
                return final.value

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return self.batch_search([query], k)[0]

    async def abatch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Evidence]]:
        """:meth:`batch_search` without blocking the event loop."""
        payload = self._payload(queries, k)
        if not payload["queries"]:
            return []
        async with httpx.AsyncClient(
            base_url=self.base_url, timeout=self.timeout_s, transport=self._transport
        ) as client:
            plan = self._attempts(len(payload["queries"]))
            delay = next(plan)
            while True:
                if delay:
                    await asyncio.sleep(delay)
                try:
                    outcome: httpx.Response | httpx.TransportError = await client.post("/retrieve", json=payload)
                except httpx.TransportError as error:
                    outcome = error
                try:
                    delay = plan.send(outcome)
                except StopIteration as final:
                    return final.value

    async def asearch(self, query: str, k: int = 3) -> list[Evidence]:
        return (await self.abatch_search([query], k))[0]

    def _attempts(
        self, n_queries: int
    ) -> Generator[float, httpx.Response | httpx.TransportError, list[list[Evidence]]]:
        """The retry policy, written once for the sync and the async driver (which only wait, post and report).

        Yields the seconds to wait before each attempt (none before the first, then 0.1 s doubling) and is sent
        that attempt's outcome: a transport error or a 502/503/504 asks for another attempt while
        ``max_retries`` allows; any other response ends the plan with the hits :meth:`_parse` reads from it.

        Raises:
            ToolError: every attempt failed (names the server, the number of attempts and the last failure), or the
                final answer was another 4xx/5xx or malformed.
        """
        for attempt in range(self.max_retries + 1):
            outcome = yield 0.0 if attempt == 0 else 0.1 * 2 ** (attempt - 1)
            if isinstance(outcome, httpx.Response) and outcome.status_code not in _RETRY_STATUS:
                return self._parse(outcome, n_queries)
            failure = (
                _message(outcome) if isinstance(outcome, httpx.Response) else f"{type(outcome).__name__}: {outcome}"
            )
        raise ToolError(f"retrieval server {self.base_url} failed after {self.max_retries + 1} attempts: {failure}")

    def _parse(self, response: httpx.Response, n_queries: int) -> list[list[Evidence]]:
        if response.is_error:
            raise ToolError(f"retrieval server {self.base_url} refused the request: {_message(response)}")
        try:
            result = response.json()["result"]
            if not isinstance(result, list) or len(result) != n_queries:
                raise ValueError(f"expected {n_queries} result lists")
            return [[self._evidence(item) for item in per_query] for per_query in result]
        except (ValueError, KeyError, TypeError) as error:
            raise ToolError(f"retrieval server {self.base_url} sent a malformed answer: {error}") from None

    def _evidence(self, item: dict[str, Any]) -> Evidence:
        document, score = (item["document"], item.get("score")) if "document" in item else (item, None)
        contents = document["contents"]
        if not isinstance(contents, str):
            raise ValueError(f"a document without contents: {document!r:.200}")
        title = document.get("title") or contents.partition("\n")[0].strip('"')
        doc_id = document.get("id") or title
        text = document.get("text") if isinstance(document.get("text"), str) else contents
        if not isinstance(doc_id, str) or not doc_id:
            raise ValueError(f"a document without a usable id: {document!r:.200}")
        return Evidence(
            id=doc_id,
            text=text,
            title=title or None,
            score=None if score is None else float(score),
            source=self.base_url,
        )


def _message(response: httpx.Response) -> str:
    """The server's own explanation (FastAPI's ``detail``) with the status code."""
    try:
        detail = response.json().get("detail", response.text)
    except (ValueError, AttributeError):
        detail = response.text
    if isinstance(detail, list):  # validation errors: say which field and why
        detail = "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg')}" for e in detail)
    return f"HTTP {response.status_code}: {str(detail)[:500]}"
