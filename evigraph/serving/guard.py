"""A guarded OpenAI-compatible endpoint: ``POST /v1/chat/completions`` and ``GET /v1/models`` in front of any
OpenAI-compatible upstream, every answer checked by a verifier before it leaves.

::

    from fastapi import FastAPI
    from evigraph.embed import Verifier
    from evigraph.serving.guard import guard_router

    app = FastAPI()
    verifier = Verifier("seva", model="openai:qwen2.5-7b@http://127.0.0.1:8000/v1")
    app.include_router(guard_router(verifier, upstream="http://127.0.0.1:8000/v1", mode="block"))

A request goes to the upstream as sent (model, messages, tools, sampling ...; only ``stream`` is taken off, see
below). The upstream's answer is read with the request's last turn -- its last user message as the question, the
assistant's tool calls after it with the tool messages that answer them, and the request's ``documents`` -- as a
:class:`~evigraph.conversation.Conversation`, which the agent's ``conversation_inputs`` makes its inputs, exactly
as :class:`~evigraph.embed.middleware.VerificationMiddleware` reads a LangChain agent's turn
(:mod:`evigraph.embed.turn`). Then, by ``mode``, an answer that did not pass is

- ``repair``: sent back to the upstream once, with the middleware's repair note as a user message after it; the
  new answer is checked and returned (``action: repair`` when it passed, ``annotate`` when it still failed);
- ``block``: replaced by the middleware's blocked message (``finish_reason: content_filter``, no logprobs, and a
  verdict without the fields that may quote it -- ``detail``, ``spans``, ``evidence``, step texts: not one token of
  it leaves);
- ``annotate``: returned as it is.

The verdict travels with the answer: the completion's ``evigraph`` field (:class:`GuardResult`: the action, the
:class:`~evigraph.verification.Verification` as JSON, the repairs made) and the headers ``X-Evigraph-Verdict``
(``passed``, ``failed`` or ``error``) and ``X-Evigraph-Action``. A reply that calls tools is a step, not an
answer: it goes out unchecked (``action: skip``, no verdict header). A verifier that fails (an exception, a backend
error, a turn it cannot read: nothing to attribute to) gives ``verdict: error`` and the answer annotated, in every
mode, never a 500: the client decides what an unchecked answer is worth.

**Streaming.** With ``stream: true`` the guard still asks the upstream for one whole reply: the tokens are held
until the verdict anyway, so streaming them in would only save the guard a buffer, and a whole reply brings its
errors as a status before the guard's own stream opens (so 502 and 504 hold for streams too), its tool calls
assembled and its usage. The stream opens with the role chunk once the upstream answered, then -- after the
verdict -- carries the released, repaired or blocked text word by word, the tool calls, the finish chunk, a usage
chunk when ``stream_options.include_usage`` asks for one, and ``data: [DONE]``; the last chunk before ``[DONE]``
carries the ``evigraph`` field (headers left before the verdict existed). Every chunk is one ``json.dumps`` line.

**Errors** are OpenAI-shaped (``{"error": {"message", "type", "param", "code"}}``): 400 for a request that does
not parse (naming the field), 502 when the upstream cannot be reached or fails, 504 past ``timeout_s``, the
upstream's own 4xx passed on. A client that goes away stops the work: the upstream call and the check in flight
are cancelled, streaming or not.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator
from typing import Any, Literal, TypeVar, get_args

import httpx
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, ValidationError, computed_field

from evigraph.embed.turn import (
    ConversationReader,
    OnFail,
    averify_conversation,
    blocked_message,
    choose_action,
    conversation_reader,
    one_line,
    repair_message,
)
from evigraph.embed.verifier import Verifier
from evigraph.errors import ConfigError
from evigraph.serving.disconnect import CLIENT_CLOSED, ClientGone, until_disconnected
from evigraph.serving.gate import record_of
from evigraph.serving.guard_openai import (
    DONE,
    ChatRequest,
    Completion,
    chunk,
    completion_chunks,
    conversation_of_request,
    first_error_field,
    openai_error,
    sse,
)
from evigraph.serving.guard_upstream import Upstream, UpstreamError
from evigraph.verification import Verification

__all__ = ("ACTION_HEADER", "VERDICT_HEADER", "GuardResult", "guard_router")

logger = logging.getLogger(__name__)

VERDICT_HEADER = "X-Evigraph-Verdict"
ACTION_HEADER = "X-Evigraph-Action"

GuardAction = Literal["pass", "repair", "block", "annotate", "skip"]
T = TypeVar("T")


class GuardResult(BaseModel):
    """What the guard did with an answer: the completion's ``evigraph`` field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: GuardAction
    """``pass`` (it passed), ``repair`` (the repaired answer passed), ``block`` (replaced), ``annotate`` (it goes out
    failed, or unchecked after a verifier error), ``skip`` (a tool call: not an answer, not checked)."""
    verification: Verification | None = None
    """The verdict on the answer returned (after a repair: on the repaired one); ``None`` for ``skip``."""
    repairs: int = 0
    """Repair calls made to the upstream (0 or 1)."""
    repair_error: str | None = None
    """Why a repair brought no new answer (the upstream failed, or answered with a tool call); the first answer
    then goes out annotated."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> Literal["passed", "failed", "error"] | None:
        """``X-Evigraph-Verdict``: ``error`` when the verifier could not check (``verification.error``)."""
        if self.verification is None:
            return None
        if self.verification.error:
            return "error"
        return "passed" if self.verification.passed else "failed"

    def headers(self) -> dict[str, str]:
        """``X-Evigraph-Verdict`` (not for ``skip``) and ``X-Evigraph-Action``."""
        verdict = {VERDICT_HEADER: self.verdict} if self.verdict else {}
        return {**verdict, ACTION_HEADER: self.action}


class _Guard:
    """Checks an upstream's answer and acts on the verdict (the module docstring)."""

    def __init__(self, verifier: Verifier, reader: ConversationReader, upstream: Upstream, mode: OnFail) -> None:
        self.verifier = verifier
        self.reader = reader
        self.upstream = upstream
        self.mode: OnFail = mode

    async def check(
        self, request: ChatRequest, body: dict[str, Any], payload: dict[str, Any], completion: Completion
    ) -> tuple[dict[str, Any], GuardResult]:
        """The completion JSON to return and what was done; ``body`` is what went to the upstream."""
        answer = completion.answer
        if answer.tool_calls:
            return payload, GuardResult(action="skip")
        text = answer.content or ""
        verdict = await self._verify(request, text)
        action = "annotate" if verdict.error else choose_action(verdict, self.mode, can_repair=True)
        if action == "block":
            return _blocked(payload, verdict), GuardResult(action="block", verification=_without_quotes(verdict))
        if action != "repair":
            return payload, GuardResult(action=action, verification=verdict)
        note = [{"role": "assistant", "content": text}, {"role": "user", "content": repair_message(verdict)}]
        try:
            repaired_payload, repaired = await self.upstream.chat({**body, "messages": [*body["messages"], *note]})
        except UpstreamError as error:
            return payload, GuardResult(action="annotate", verification=verdict, repairs=1, repair_error=error.message)
        if repaired.answer.tool_calls:
            failed = "the upstream answered the repair note with a tool call"
            return payload, GuardResult(action="annotate", verification=verdict, repairs=1, repair_error=failed)
        second = await self._verify(request, repaired.answer.content or "")
        action = "repair" if second.passed else "annotate"
        return repaired_payload, GuardResult(action=action, verification=second, repairs=1)

    async def answer(
        self, request: Request, chat: ChatRequest, body: dict[str, Any], payload: dict[str, Any], completion: Completion
    ) -> tuple[dict[str, Any], GuardResult]:
        """:meth:`check`, cancelled when the client leaves; the verdict goes to ``evigraph serve``'s request log."""
        final, result = await until_disconnected(request, self.check(chat, body, payload, completion))
        record = record_of(request.scope)
        if record is not None and result.verification is not None:
            record.outcomes.append(result.verification.passed)
        metrics = getattr(request.app.state, "metrics", None)  # set by `evigraph serve`; a bare app has none
        if metrics is not None and result.verification is not None:
            metrics.verdict(result.verification, tokens=0)
        return final, result

    async def _verify(self, request: ChatRequest, answer: str) -> Verification:
        try:
            conversation = conversation_of_request(request, answer)
            return await averify_conversation(self.verifier, self.reader, conversation)
        except Exception as error:  # the client gets its answer annotated with the failure, never a 500
            logger.exception("verifier %s failed on an answer", self.verifier.name)
            return Verification(agent=self.verifier.name, passed=False, error=one_line(error))


def _blocked(payload: dict[str, Any], verdict: Verification) -> dict[str, Any]:
    # The whole choice is replaced: its logprobs, token ids or reasoning would carry the blocked answer.
    message = {"role": "assistant", "content": blocked_message(verdict)}
    return {
        **payload,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "content_filter"}],
    }


def _without_quotes(verdict: Verification) -> Verification:
    """``verdict`` without the fields that may quote the checked answer (the agent's output, flagged spans, evidence
    quotes, step texts, the disagreement line): what a blocked answer's verdict may carry."""
    steps = [step.model_copy(update={"text": ""}) for step in verdict.steps]
    return verdict.model_copy(update={"detail": {}, "spans": [], "evidence": [], "steps": steps, "disagreement": None})


def guard_router(
    verifier: Verifier,
    *,
    upstream: str,
    mode: Literal["repair", "block", "annotate"] = "repair",
    api_key: str | None = None,
    timeout_s: float = 60.0,
) -> APIRouter:
    """The guarded endpoint's routes (see the module docstring), to mount on any FastAPI app.

    Args:
        verifier: checks every answer; its agent must declare ``conversation_inputs``.
        upstream: the OpenAI-compatible server's API root, e.g. ``http://127.0.0.1:8000/v1``.
        mode: what happens to an answer that did not pass: ``repair``, ``block`` or ``annotate``.
        api_key: the upstream's bearer token (never logged nor returned).
        timeout_s: the deadline of one upstream call (504 past it).

    Raises:
        ConfigError: a bad ``mode``, ``upstream`` or ``timeout_s``, or an agent that cannot read a conversation.
    """
    if mode not in get_args(OnFail):
        raise ConfigError(f"must be one of {', '.join(get_args(OnFail))}, got {mode!r}", source="mode")
    if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
        raise ConfigError(f"must be a positive number of seconds, got {timeout_s!r}", source="timeout_s")
    try:
        url = httpx.URL(upstream)
    except (httpx.InvalidURL, TypeError) as error:
        raise ConfigError(f"not a URL: {upstream!r} ({error})", source="upstream") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(f"must be an http(s) URL like http://127.0.0.1:8000/v1, got {upstream!r}", source="upstream")
    client = Upstream(upstream, api_key=api_key, timeout_s=float(timeout_s))
    guard = _Guard(verifier, conversation_reader(verifier.name), client, mode)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await client.aclose()

    router = APIRouter(lifespan=lifespan, tags=["guard"])

    @router.get("/v1/models")
    async def models() -> Response:
        """The upstream's models, as it lists them."""
        try:
            return JSONResponse(await client.models())
        except UpstreamError as error:
            return openai_error(error.status, error.message, error.kind, headers=error.headers)

    @router.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        """A chat completion from the upstream, checked (the module docstring)."""
        if (record := record_of(request.scope)) is not None:
            record.agent = verifier.name  # the log line names the guard's agent
        try:
            body = json.loads(await request.body())
        except (ValueError, RecursionError):
            return openai_error(400, "the request body is not valid JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return openai_error(400, "the request body must be a JSON object", "invalid_request_error")
        try:
            chat = ChatRequest.model_validate(body)
        except ValidationError as error:
            where, why = first_error_field(error)
            return openai_error(400, f"{where}: {why}", "invalid_request_error", param=where)
        forwarded = {key: value for key, value in body.items() if key not in ("stream", "stream_options")}
        try:
            payload, completion = await until_disconnected(request, client.chat(forwarded))
            if chat.stream:
                return StreamingResponse(
                    _stream(request, guard, chat, forwarded, payload, completion),
                    media_type="text/event-stream",
                    # A buffering proxy (nginx) would hold the stream; it may already hold it for the verdict.
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                )
            final, result = await guard.answer(request, chat, forwarded, payload, completion)
        except UpstreamError as error:
            return openai_error(error.status, error.message, error.kind, headers=error.headers)
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)
        return JSONResponse({**final, "evigraph": result.model_dump(mode="json")}, headers=result.headers())

    return router


async def _stream(
    request: Request,
    guard: _Guard,
    chat: ChatRequest,
    body: dict[str, Any],
    payload: dict[str, Any],
    completion: Completion,
) -> AsyncIterator[str]:
    """The guarded answer as ``chat.completion.chunk`` events (the module docstring, **Streaming**)."""
    yield sse(chunk(completion, {"role": "assistant", "content": ""}))
    try:
        final, result = await guard.answer(request, chat, body, payload, completion)
        include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        events = list(
            completion_chunks(completion, final, evigraph=result.model_dump(mode="json"), include_usage=include_usage)
        )
    except ClientGone:
        return
    except Exception as error:  # the headers are gone: an OpenAI-shaped error event instead of a torn stream
        logger.exception("guarded stream failed")
        yield sse({"error": {"message": one_line(error), "type": "server_error", "param": None, "code": 500}})
        yield DONE
        return
    # Released at once, in one write: the events are all known once the verdict is (the client still reads them
    # one by one).
    yield "".join(sse(event) for event in events) + DONE
