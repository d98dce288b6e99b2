"""A real, local, deterministic stand-in for ``vllm serve`` (stdlib only), for the OpenAI-compatible client.

It listens on ``127.0.0.1`` on a free port in a background thread and answers ``POST /v1/chat/completions``
the way vLLM does:

- "Generation" is deterministic: the words of the last message, lower-cased, in reverse order, then the
  end-of-sequence (so the prompt decides the reply and the reply is short). Each word is one "token".
- ``max_tokens`` / ``max_completion_tokens`` cap the tokens (``finish_reason: "length"``).
- ``stop`` strings are checked after every token, as vLLM does; the first one found ends the turn with
  ``finish_reason: "stop"`` and ``stop_reason`` naming it, and is cut off unless
  ``include_stop_str_in_output`` is true. An end-of-sequence stop has ``stop_reason: null``.
- ``logprobs: true`` returns ``choices[0].logprobs.content`` with one fixed, negative value per token; with
  ``return_tokens_as_token_ids: true`` each ``token`` is ``"token_id:N"`` and its text stays in ``bytes``, as vLLM
  writes them (ids are given to pieces in order of first use, stable for the server's life).
- ``response_format`` ``json_schema`` returns a JSON object that satisfies the schema; vLLM's
  ``structured_outputs: {"regex": ...}`` returns a string matching the regex (literal alternatives only).
- Unknown model names get vLLM's 404; every request body and its headers are recorded.
- :meth:`FakeOpenAIServer.script` replaces the "generation" with scripted replies (a queue, or a function of the
  messages), so a client can drive an agent; stop strings and the token cap still apply to them.

Switches make it misbehave on purpose: :meth:`FakeOpenAIServer.fail_next` returns an error status for the
next requests; ``drop_stop_string`` makes it ignore ``include_stop_str_in_output`` (as OpenAI's own API
does), ``report_stop_reason=False`` hides which stop string fired, and ``ignore_stop`` ignores ``stop``.
``logprobs_support`` says what a ``logprobs`` request gets: ``"vllm"`` (the above), ``"text"`` (tokens as text
even when ids are asked for, as OpenAI's API), ``"none"`` (``logprobs: null``, as servers without them) or
``"malformed"`` (entries without a ``logprob``).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ("FakeOpenAIServer", "RecordedRequest", "fake_reply_text")

_WORD = re.compile(r"\w+")
_PIECE = re.compile(r"\s*\S+")
_ROLES = {"system", "developer", "user", "assistant", "tool"}


def fake_reply_text(messages: list[dict[str, Any]]) -> str:
    """What the fake model "wants" to say to ``messages`` before any stop string or cap applies."""
    content = messages[-1].get("content") if messages else ""
    words = _WORD.findall(str(content).lower())
    return " ".join(reversed(words)) or "empty"


def _logprob(index: int) -> float:
    return -0.1 * (index % 5 + 1)


def _example_for(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """A value satisfying ``schema`` (the subset pydantic emits: refs, enums, unions, objects, scalars)."""
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return _example_for(target, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return _example_for(options[0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {name: _example_for(sub, root) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [_example_for(schema.get("items") or {}, root) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * max(schema.get("minLength", 0), 1)
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return min(max(0.5, schema.get("minimum", 0.5)), schema.get("maximum", 0.5))
    if kind == "boolean":
        return True
    return None


def _match_regex(regex: str, natural: str) -> str | None:
    """The natural reply if it matches, else the first literal alternative of ``regex`` that does."""
    pattern = re.compile(regex)
    if pattern.fullmatch(natural):
        return natural
    core = regex.removeprefix("^").removesuffix("$")
    if core.startswith("(") and core.endswith(")"):
        core = core[1:-1].removeprefix("?:")
    for alternative in core.split("|"):
        literal = re.sub(r"\\(.)", r"\1", alternative)
        if pattern.fullmatch(literal):
            return literal
    return None


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client dropping a kept-alive connection is normal
            super().handle_error(request, client_address)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it (header names lower-cased)."""

    path: str
    headers: dict[str, str]
    body: Any


class FakeOpenAIServer:
    """The fake server; use as a context manager or call :meth:`start` and :meth:`close`.

    Args:
        model: the only model name it serves (others get HTTP 404, like vLLM).
    """

    def __init__(self, model: str = "fake-model") -> None:
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.drop_stop_string = False
        self.report_stop_reason = True
        self.ignore_stop = False
        self.logprobs_support: Literal["vllm", "text", "none", "malformed"] = "vllm"
        self.vocabulary: dict[str, int] = {}
        """Piece → the token id the server gave it (``return_tokens_as_token_ids``)."""
        self._failures: deque[tuple[int, str]] = deque()
        self._script: Callable[[list[dict[str, Any]]], str] | None = None
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers offer
            timeout = 10
            disable_nagle_algorithm = True  # headers and body go out separately; no 40 ms delayed-ACK stall

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                status, payload = server.handle(self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai-server", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- switches and records ----------------------------------------------------------------------
    def fail_next(self, status: int, message: str = "injected failure", *, times: int = 1) -> None:
        """Answer the next ``times`` requests with ``status`` and an OpenAI-style error body."""
        with self._lock:
            self._failures.extend([(status, message)] * times)

    def script(self, replies: Iterable[str] | Callable[[list[dict[str, Any]]], str]) -> None:
        """Answer with ``replies`` in order (or ``replies(messages)`` for every request) instead of the reversed
        words; when a queue runs out, requests get HTTP 500 naming the request."""
        if callable(replies):
            self._script = replies
            return
        queue = deque(replies)

        def next_reply(_messages: list[dict[str, Any]]) -> str:
            if not queue:
                raise LookupError(f"no scripted reply left for request {len(self.requests)}")
            return queue.popleft()

        self._script = next_reply

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._failures.clear()
            self._script = None
        self.drop_stop_string = False
        self.report_stop_reason = True
        self.ignore_stop = False
        self.logprobs_support = "vllm"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests]

    # -- the endpoint ------------------------------------------------------------------------------
    @staticmethod
    def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
        kind = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError"}.get(status, "ServerError")
        return status, {"error": {"message": message, "type": kind, "param": None, "code": status}}

    def handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        try:
            body: Any = json.loads(raw or b"null")
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        with self._lock:
            self.requests.append(RecordedRequest(path=path, headers=headers, body=body))
            failure = self._failures.popleft() if self._failures else None
        if failure is not None:
            return self._error(*failure)
        if path.rstrip("/") != "/v1/chat/completions":
            return self._error(404, f"no route {path}")
        if not isinstance(body, dict):
            return self._error(400, "the request body must be a JSON object")
        if body.get("model") != self.model:
            return self._error(404, f"The model `{body.get('model')}` does not exist.")
        messages = body.get("messages")
        if not (isinstance(messages, list) and messages):
            return self._error(400, "messages must be a non-empty list")
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in _ROLES:
                return self._error(400, f"unsupported message {message!r}")
        with self._lock:
            script = self._script
        if script is not None:
            try:
                scripted = script(messages)
            except LookupError as error:
                return self._error(500, str(error))
            return 200, self._complete(body, messages, scripted)
        return 200, self._complete(body, messages)

    def _entry(self, piece: str, index: int, *, as_ids: bool) -> dict[str, Any]:
        """One ``logprobs.content`` entry, shaped as vLLM's ``_create_chat_logprobs`` writes it."""
        if self.logprobs_support == "malformed":
            return {"token": piece, "bytes": None}
        token = piece
        if as_ids:
            with self._lock:
                token = f"token_id:{self.vocabulary.setdefault(piece, 1000 + len(self.vocabulary))}"
        return {"token": token, "logprob": _logprob(index), "bytes": list(piece.encode()), "top_logprobs": []}

    def _complete(
        self, body: dict[str, Any], messages: list[dict[str, Any]], scripted: str | None = None
    ) -> dict[str, Any]:
        natural = fake_reply_text(messages) if scripted is None else scripted
        response_format = body.get("response_format") or {}
        structured = body.get("structured_outputs") or {}
        if scripted is not None:  # a scripted reply is what the "model" says, guided or not
            response_format = structured = {}
        if response_format.get("type") == "json_schema":
            schema = response_format["json_schema"]["schema"]
            natural = json.dumps(_example_for(schema, schema))
        elif structured.get("regex"):
            natural = _match_regex(structured["regex"], natural) or natural

        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 16
        stops = [] if self.ignore_stop else list(body.get("stop") or [])
        if isinstance(body.get("stop"), str) and not self.ignore_stop:
            stops = [body["stop"]]
        keep_stop = bool(body.get("include_stop_str_in_output")) and not self.drop_stop_string

        pieces = _PIECE.findall(natural)
        text = ""
        emitted: list[str] = []
        finish, stop_reason = "stop", None  # end of sequence unless a stop string or the cap ends it
        for index, piece in enumerate(pieces):
            if index >= max_tokens:
                finish = "length"
                break
            text += piece
            emitted.append(piece)
            found = [(text.find(s), s) for s in stops if s in text]
            if found:
                position, stop = min(found)
                text = text[: position + len(stop)] if keep_stop else text[:position]
                stop_reason = stop
                break

        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "logprobs": None,
            "finish_reason": finish,
            "stop_reason": stop_reason if self.report_stop_reason else None,
        }
        if body.get("logprobs") and self.logprobs_support != "none":
            as_ids = bool(body.get("return_tokens_as_token_ids")) and self.logprobs_support == "vllm"
            choice["logprobs"] = {"content": [self._entry(piece, i, as_ids=as_ids) for i, piece in enumerate(emitted)]}
        prompt_tokens = sum(len(_WORD.findall(str(m.get("content", "")))) for m in messages)
        return {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(emitted),
                "total_tokens": prompt_tokens + len(emitted),
            },
        }
