"""A Search-R1-compatible retrieval server over any :class:`~evigraph.tools.search.SearchTool`.

Wire format (``search_r1/search/retrieval_server.py``, see research notes §2.1)::

    POST /retrieve  {"queries": [str, ...], "topk": int | null, "return_scores": bool = false}
    →               {"result": [[item, ...] per query]}

An item is ``{"document": doc, "score": float}`` with ``return_scores``, else the bare ``doc``, where
``doc = {"id", "contents", "title", "text"}`` (:func:`document_of`: ``contents`` in Search-R1's
``"Title"\ntext`` layout, which its client parses). ``GET /health`` answers ``{"status": "ok"}``.

Concurrent requests are batched (:class:`~evigraph.tools.batching.SearchBatcher`): requests arriving within
``batch_window_s`` of the first, up to ``max_queries`` queries, become one ``search.batch_search`` with the
largest ``topk``, run in a worker thread; each request gets its own ``topk`` back. The searcher may be BM25,
dense or hybrid (``evigraph corpus serve --retrieval``); the payload is the same. Upstream binds 0.0.0.0; we
bind 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Sequence

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr, ValidationError

from evigraph.errors import ConfigError
from evigraph.tools.batching import SearchBatcher
from evigraph.tools.search import SearchTool
from evigraph.trajectory import Evidence

__all__ = ("MAX_QUERIES", "RetrieveRequest", "create_app", "document_of", "serve")

logger = logging.getLogger(__name__)

MAX_QUERIES = 8192
"""Default limit of queries per request: Search-R1 sends a whole rollout batch in one POST (512 × 5 = 2,560
in its default config; 1,024 × 5 with larger batches)."""

_SENTENCE_SUFFIX = re.compile(r"_sentence_\d+\Z")
"""What grouped entries add to their document's id (:mod:`evigraph.corpora.entries`)."""


class RetrieveRequest(BaseModel):
    """Body of ``POST /retrieve`` (Search-R1's ``QueryRequest``), strictly typed."""

    model_config = ConfigDict(strict=True)

    queries: list[StrictStr]
    topk: StrictInt | None = None
    """Hits per query; ``null`` or absent → the server's ``default_topk``."""
    return_scores: StrictBool = False


def document_of(hit: Evidence) -> dict[str, str]:
    r"""Search-R1's ``doc`` for one hit: ``id``, ``contents``, ``title`` and ``text``.

    Search-R1's own client reads only ``contents``: the first line is the title and the rest the text (its
    corpora store ``"Title"\ntext``). So ``contents`` is written that way, the title quoted on the first line
    and the entry's text after it; ``title`` carries the title and ``text`` the entry's exact stored text, for
    clients that read fields (ours). The title is the one the corpus stores; else, for text already in
    Search-R1's layout (a quoted first line), that line (``contents`` is then the stored text itself); else the
    document id (the entry id without its ``_sentence_<k>`` suffix).

    Example:
        >>> doc = document_of(Evidence(id="Hog_sentence_0", text="It was lit in 1852.", title="Hog Island Light"))
        >>> doc["contents"], doc["title"], doc["text"]
        ('"Hog Island Light"\nIt was lit in 1852.', 'Hog Island Light', 'It was lit in 1852.')
    """
    first, newline, _ = hit.text.partition("\n")
    if not hit.title and newline and len(first) > 1 and first.startswith('"') and first.endswith('"'):
        return {"id": hit.id, "contents": hit.text, "title": first[1:-1], "text": hit.text}
    title = hit.title or _SENTENCE_SUFFIX.sub("", hit.id)
    return {"id": hit.id, "contents": f'"{title}"\n{hit.text}', "title": title, "text": hit.text}


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body of {declared} bytes exceeds the limit of {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():  # also bounds chunked bodies that declare no length
        body += chunk
        if len(body) > limit:
            raise HTTPException(413, f"request body exceeds the limit of {limit} bytes")
    return bytes(body)


def create_app(
    search: SearchTool,
    *,
    default_topk: int = 3,
    max_queries: int = MAX_QUERIES,
    max_query_chars: int = 2000,
    max_topk: int = 50,
    batch_window_s: float = 0.002,
) -> FastAPI:
    """A FastAPI app serving ``search`` with Search-R1's ``/retrieve`` shapes.

    Args:
        search: the retriever; its ``batch_search`` runs in a worker thread, one batch at a time.
        default_topk: hits per query when a request's ``topk`` is null or absent (Search-R1's ``--topk``).
        max_queries: most queries in one request (413 above), also the most in one batched call. The default
            fits Search-R1 training batches (``train_batch_size × n_agent`` queries in one POST, e.g. 512 × 5).
        max_query_chars: longest query in characters (413 above).
        max_topk: largest accepted ``topk`` (422 outside ``1..max_topk``).
        batch_window_s: how long the batcher waits after a request for others to join its batch.

    Raises:
        ConfigError: a limit is out of range.
    """
    if not 1 <= default_topk <= max_topk or max_queries < 1 or max_query_chars < 1 or batch_window_s < 0:
        raise ConfigError(
            "need 1 ≤ default_topk ≤ max_topk, max_queries ≥ 1, max_query_chars ≥ 1 and batch_window_s ≥ 0, got "
            f"default_topk={default_topk}, max_topk={max_topk}, max_queries={max_queries}, "
            f"max_query_chars={max_query_chars}, batch_window_s={batch_window_s}"
        )
    # A JSON string may spend up to 6 bytes per character (\uXXXX escapes); the rest is room for the envelope.
    max_body_bytes = max_queries * (6 * max_query_chars + 8) + 1024
    batcher = SearchBatcher(search, max_queries=max_queries, window_s=batch_window_s)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await batcher.close()

    app = FastAPI(title="evigraph retrieval server", lifespan=lifespan)
    body_schema = {"content": {"application/json": {"schema": RetrieveRequest.model_json_schema()}}, "required": True}

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/retrieve", openapi_extra={"requestBody": body_schema})
    async def retrieve(request: Request) -> JSONResponse:
        body = await _read_body(request, max_body_bytes)
        try:
            parsed = RetrieveRequest.model_validate_json(body)
        except ValidationError as error:
            errors = error.errors(include_url=False, include_context=False)
            raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in errors]) from None
        k = default_topk if parsed.topk is None else parsed.topk
        if not 1 <= k <= max_topk:
            raise HTTPException(422, f"topk must be between 1 and {max_topk}, got {k}")
        if len(parsed.queries) > max_queries:
            raise HTTPException(413, f"{len(parsed.queries)} queries exceed the limit of {max_queries} per request")
        too_long = [i for i, q in enumerate(parsed.queries) if len(q) > max_query_chars]
        if too_long:
            raise HTTPException(
                413, f"query {too_long[0]} has {len(parsed.queries[too_long[0]])} characters; limit {max_query_chars}"
            )
        if not parsed.queries:
            return JSONResponse({"result": []})
        try:
            hits = await batcher.submit(parsed.queries, k)
        except Exception as error:
            raise HTTPException(500, f"search failed: {type(error).__name__}: {error}") from None
        return JSONResponse({"result": [_items(per_query, parsed.return_scores) for per_query in hits]})

    return app


def _items(hits: Sequence[Evidence], with_scores: bool) -> list[object]:
    if with_scores:
        return [{"document": document_of(h), "score": h.score if h.score is not None else 0.0} for h in hits]
    return [document_of(h) for h in hits]


def serve(
    search: SearchTool,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    default_topk: int = 3,
    max_queries: int = MAX_QUERIES,
) -> None:
    """Run :func:`create_app` under uvicorn until interrupted (loopback only unless ``host`` says otherwise)."""
    import uvicorn

    app = create_app(search, default_topk=default_topk, max_queries=max_queries)
    uvicorn.run(app, host=host, port=port, log_level="info")
