"""A client for OpenAI-compatible chat servers, first of all ``vllm serve``.

The transcript goes out as chat messages by :attr:`~evigraph.trajectory.Segment.chat_role` (prompt
segments as system/user, policy segments as assistant turns, environment segments as new user turns -- the
project's single transcript convention). This is a *text* backend: replies carry no token ids, so rollouts
that need exact tokens use a token backend instead.

What the request contains, and why:

- ``max_tokens`` and ``max_completion_tokens`` both carry ``max_new_tokens`` (older servers know only the
  first, OpenAI deprecated it for the second; vLLM accepts both).
- ``temperature``, ``top_p`` and ``seed`` are always sent, so the server's own defaults never decide them.
  Start vLLM with ``--generation-config vllm``: otherwise the model's ``generation_config.json`` is applied
  and its ``max_new_tokens`` silently caps every request.
- ``stop`` plus ``include_stop_str_in_output: true`` (a vLLM extension, only sent when there are stop
  strings). evigraph's rule is that the stop string that fired stays at the end of the text; see
  :func:`settle_stop` for how servers that drop it anyway are handled.
- ``logprobs: true`` when asked for, with vLLM's ``return_tokens_as_token_ids: true`` (``token_ids=True``, the
  default): the per-token values come from ``choices[0].logprobs.content``, each token as ``"token_id:N"`` with its
  text in ``bytes`` (:mod:`evigraph.generators.server_tokens`). With the ids a reply's policy segment keeps its
  logprobs, so label confidences and exact generated-token counts work against ``vllm serve``; a server that
  returns no logprobs, or no ids, is named once in a warning saying what is lost.
- Guides: JSON goes in ``response_format`` (``json_schema``, ``strict``), a regex in vLLM's
  ``structured_outputs: {"regex": ...}``. The legacy ``guided_json``/``guided_regex`` fields are never
  sent: current vLLM ignores them with only a server-side warning and returns *unconstrained* output.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import weakref
from collections.abc import Sequence
from typing import Any

import httpx

from evigraph.errors import GeneratorError
from evigraph.event_loop import run_sync
from evigraph.generators.base import BaseGenerator
from evigraph.generators.server_tokens import LogprobNotice, ServerTokens, ServerVocabulary, read_server_tokens
from evigraph.generators.types import Continuation, FinishReason, Guide, SamplingParams
from evigraph.trajectory import Segment

__all__ = ("OpenAICompatibleGenerator", "settle_stop")

logger = logging.getLogger(__name__)

_API_KEY_ENV = ("EVIGRAPH_API_KEY", "OPENAI_API_KEY")
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")
_MAX_BACKOFF_S = 8.0
_NO_CONFIDENCE = "label confidences are not computed and policy turns keep no logprobs"


def settle_stop(
    text: str,
    stops: Sequence[str],
    *,
    fired: str | None = None,
    length: bool = False,
) -> tuple[str, FinishReason, str | None]:
    """Apply the rule "the stop string that fired stays at the end of the text" to a text reply.

    Text backends cannot be trusted to agree on stop strings, so the reply is settled here:

    1. If a stop string occurs in ``text``, the text is cut right after the earliest one and the turn
       ended there (this also covers servers and chat models that ignore ``stop`` altogether).
    2. Else, if the backend reports which stop string ended the turn (``fired``; vLLM's ``stop_reason``),
       it dropped that string from the text: it is appended again.
    3. Else the turn hit the token cap (``length``) or ended on its own (``eos``).

    A backend that drops the stop string *and* does not say which one fired is indistinguishable from an
    end-of-sequence stop; such replies come back as ``eos``.

    Args:
        text: the reply as the backend returned it.
        stops: the stop strings that were requested.
        fired: the stop string the backend says fired, if it says so.
        length: whether the backend reports that the token cap ended the turn.

    Returns:
        ``(text, finish_reason, stop_string)``.
    """
    best: tuple[int, str] | None = None
    for stop in stops:
        position = text.find(stop)
        if position >= 0 and (best is None or position < best[0]):
            best = (position, stop)
    if best is not None:
        return text[: best[0] + len(best[1])], "stop", best[1]
    if fired is not None and fired in stops:
        return text + fired, "stop", fired
    return text, ("length" if length else "eos"), None


def _server_message(response: httpx.Response) -> str:
    """The error message a server put in its body (OpenAI, vLLM and FastAPI shapes), else the raw text."""
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
        for key in ("message", "detail"):
            if data.get(key):
                return str(data[key])
    return str(data)[:500]


def _schema_name(schema: dict[str, Any]) -> str:
    # OpenAI requires ^[A-Za-z0-9_-]{1,64}$ here; vLLM does not care.
    title = str(schema.get("title") or "response")
    return _SCHEMA_NAME.sub("_", title)[:64] or "response"


class OpenAICompatibleGenerator(BaseGenerator):
    """Generates through an OpenAI-compatible ``/chat/completions`` endpoint (vLLM, SGLang, llama.cpp ...).

    Args:
        base_url: the API root including the version, e.g. ``http://127.0.0.1:8000/v1`` (requests go to
            ``{base_url}/chat/completions``).
        model: the served model name (vLLM's ``--served-model-name``).
        api_key: sent as ``Authorization: Bearer ...``; defaults to ``EVIGRAPH_API_KEY``, then
            ``OPENAI_API_KEY``; no header when none is set (vLLM without ``--api-key``).
        timeout_s: per-request timeout (connect, read, write and waiting for a pooled connection).
        max_retries: extra attempts after a connection error, a timeout or a 5xx reply, with exponential
            backoff. A 4xx reply is never retried.
        name: shown in traces; defaults to ``openai:<model>``.
        token_ids: with logprobs, also ask for the token ids (vLLM's ``return_tokens_as_token_ids``). Turn off for
            a server that rejects fields it does not know; its turns then keep no logprobs (see the module doc).

    Attributes:
        retry_backoff_s: the first backoff delay; it doubles per retry, up to 8 s.
        max_connections: the HTTP connection pool size (read when the client is first used). vLLM batches
            concurrent requests, so rollouts should keep many in flight.

    Raises (at call time):
        GeneratorError: the server could not be reached, kept failing, rejected the request (the message
            includes the server's own explanation) or returned a malformed reply.
    """

    supported_guides = frozenset({"json", "regex"})
    can_continue_policy = False  # chat APIs cannot continue an assistant turn

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        name: str | None = None,
        token_ids: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        self.name = name or f"openai:{model}"
        self.retry_backoff_s = 0.5
        self.max_connections = 256
        key = api_key
        for variable in _API_KEY_ENV:
            key = key or os.environ.get(variable) or None
        self._api_key = key
        self._client: httpx.AsyncClient | None = None
        self._client_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self.token_ids = token_ids
        self.vocabulary = ServerVocabulary()
        """The text of every token id the server returned so far (what :meth:`decode_token_ids` reads)."""
        self._notice = LogprobNotice(self.name, f"{self.base_url}/chat/completions")

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatibleGenerator(base_url={self.base_url!r}, model={self.model!r})"

    # -- HTTP -------------------------------------------------------------------------------------------
    def _http(self) -> httpx.AsyncClient:
        """The client for the running event loop.

        An ``httpx.AsyncClient`` is tied to the loop it first ran on, and :meth:`continue_sync` starts a new
        loop per call, so a client from another loop is replaced rather than reused.
        """
        loop = asyncio.get_running_loop()
        current = self._client_loop() if self._client_loop is not None else None
        if self._client is None or self._client.is_closed or current is not loop:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s),
                limits=httpx.Limits(
                    max_connections=self.max_connections,
                    max_keepalive_connections=min(64, self.max_connections),
                ),
            )
            self._client_loop = weakref.ref(loop)
        return self._client

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}/chat/completions"
        client = self._http()
        attempts = self.max_retries + 1
        failure = ""
        for attempt in range(attempts):
            if attempt:
                delay = min(self.retry_backoff_s * 2 ** (attempt - 1), _MAX_BACKOFF_S)
                logger.warning("%s: %s; retry %d/%d in %.1fs", self.name, failure, attempt, self.max_retries, delay)
                await asyncio.sleep(delay)
            try:
                response = await client.post(url, json=body)
            except httpx.TransportError as error:
                failure = f"cannot reach {url} ({type(error).__name__}: {error or 'no detail'})"
                continue
            if response.status_code >= 500:
                failure = f"{url} answered HTTP {response.status_code}: {_server_message(response)}"
                continue
            if response.status_code >= 400:
                raise GeneratorError(
                    f"{self.name}: {url} rejected the request (HTTP {response.status_code}): "
                    f"{_server_message(response)}"
                )
            try:
                data = response.json()
            except ValueError:
                raise GeneratorError(f"{self.name}: {url} returned a body that is not JSON") from None
            if not isinstance(data, dict):
                raise GeneratorError(f"{self.name}: {url} returned JSON that is not an object")
            return data
        raise GeneratorError(f"{self.name}: gave up after {attempts} attempt(s): {failure}")

    # -- request and reply ------------------------------------------------------------------------------
    def request_body(self, transcript: Sequence[Segment], params: SamplingParams) -> dict[str, Any]:
        """The JSON body sent for one call (public so users can see exactly what goes over the wire)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": s.chat_role, "content": s.text} for s in transcript],
            "max_tokens": params.max_new_tokens,
            "max_completion_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "n": 1,
            "stream": False,
        }
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
            body["include_stop_str_in_output"] = True
        if params.logprobs:
            body["logprobs"] = True
            if self.token_ids:
                body["return_tokens_as_token_ids"] = True
        if params.guide is not None:
            body.update(self._guide_fields(params.guide))
        return body

    @staticmethod
    def _guide_fields(guide: Guide) -> dict[str, Any]:
        if guide.kind == "json":
            schema = guide.json_schema or {}
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": _schema_name(schema), "schema": schema, "strict": True},
                }
            }
        return {"structured_outputs": {"regex": guide.regex}}

    def _parse_reply(self, data: dict[str, Any], params: SamplingParams) -> Continuation:
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise GeneratorError(f"{self.name}: the reply has no choices[0].message: {str(data)[:300]}") from None
        raw_text = content if isinstance(content, str) else ""
        finish = choice.get("finish_reason")
        # vLLM names the stop string in `stop_reason` (an int there means a stop token: an EOS-like end).
        stop_reason = choice.get("stop_reason")
        fired = stop_reason if finish == "stop" and isinstance(stop_reason, str) else None
        text, finish_reason, stop_string = settle_stop(raw_text, params.stop, fired=fired, length=finish == "length")
        if finish not in {"stop", "length", None}:
            logger.debug("%s: finish_reason %r read as %r", self.name, finish, finish_reason)

        tokens = (
            self._tokens(choice, kept_chars=len(text) if len(text) < len(raw_text) else None)
            if params.logprobs
            else None
        )
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
        return Continuation(
            text=text,
            finish_reason=finish_reason,
            stop_string=stop_string,
            token_ids=tokens.token_ids if tokens is not None else None,
            logprobs=tokens.logprobs if tokens is not None else None,
            prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
            completion_tokens=completion_tokens if isinstance(completion_tokens, int) else None,
        )

    def _tokens(self, choice: dict[str, Any], *, kept_chars: int | None) -> ServerTokens | None:
        """The reply's generated tokens, or ``None`` (said once) when the server gave no usable logprobs."""
        try:
            tokens = read_server_tokens(choice.get("logprobs"), kept_chars)
        except ValueError as error:  # server text never fails a turn: the reply's text is still good
            self._notice.missing(f"returned malformed logprobs ({error})", _NO_CONFIDENCE)
            return None
        if tokens is None:
            self._notice.missing("returned no logprobs", _NO_CONFIDENCE)
            return None
        if tokens.token_ids is None:
            why = "token_ids=False" if not self.token_ids else "it ignored vLLM's return_tokens_as_token_ids"
            self._notice.missing(
                f"returned logprobs without token ids ({why})",
                "policy turns keep no logprobs (a segment holds them aligned with ids), so label confidences are "
                "not computed and generated-token counts are the server's",
            )
        else:
            self.vocabulary.learn(tokens)
        return tokens

    def decode_token_ids(self, token_ids: Sequence[int]) -> str:
        """Text of token ids this server returned (:class:`~evigraph.generators.server_tokens.ServerVocabulary`):
        what agents find a label's token with on this text backend (:func:`evigraph.tokens.token_decoder`)."""
        return self.vocabulary.decode(token_ids)

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        data = await self._post(self.request_body(transcript, params))
        return self._parse_reply(data, params)

    def continue_sync(self, transcript: Sequence[Segment], params: SamplingParams) -> Continuation:
        """Blocking call; the HTTP client lives and dies with the call (a later async caller runs on its own loop)."""

        async def call() -> Continuation:
            try:
                return await self.continue_transcript(transcript, params)
            finally:
                await self.aclose()

        return run_sync(call)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        owner = self._client_loop() if self._client_loop is not None else None
        # A client from a loop that is gone cannot be closed from this one; dropping it is all we can do.
        if client is not None and not client.is_closed and owner is asyncio.get_running_loop():
            await client.aclose()
