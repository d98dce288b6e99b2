"""Per-token logprobs (and token ids) as OpenAI-compatible servers report them, read without trusting the server.

Text backends (:class:`~evigraph.generators.openai_compat.OpenAICompatibleGenerator`,
:class:`~evigraph.generators.langchain_model.ChatModelGenerator`) get the generated tokens back in one of two shapes:

- chat completions: ``choices[0].logprobs.content[i]`` = ``{"token", "logprob", "bytes", "top_logprobs"}``;
- (legacy) completions: ``choices[0].logprobs`` = ``{"tokens": [...], "token_logprobs": [...], ...}``.

vLLM with ``return_tokens_as_token_ids: true`` writes each ``token`` as ``"token_id:N"`` and keeps the token's text
in ``bytes`` (its UTF-8 encoding); those ids make a policy segment keep its logprobs (a segment holds logprobs only
aligned with ids), so label confidences and exact generated-token counts work against ``vllm serve``. The ids are
the server's; a decode for them is learnt from the same replies (:class:`ServerVocabulary`), since a text backend
has no tokenizer.

Nothing here raises on server text: a reply whose logprobs are absent or malformed yields ``None`` and the caller
says so once (:class:`LogprobNotice`).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

__all__ = ("LogprobNotice", "ServerTokens", "ServerVocabulary", "TokenLogprob", "read_server_tokens")

logger = logging.getLogger(__name__)

_TOKEN_ID = re.compile(r"token_id:(\d+)")


class TokenLogprob(BaseModel):
    """One generated token as a server reports it (the fields evigraph reads; others are ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    token: str = ""
    logprob: float
    bytes: list[int] | None = None

    @field_validator("logprob")
    @classmethod
    def _a_number(cls, value: float) -> float:
        # -inf is a real answer (probability 0; vLLM clamps it to -9999.0 anyway); NaN and +inf are not.
        if math.isnan(value) or value > 1e-6:
            raise ValueError(f"not a log-probability: {value}")
        return value

    @field_validator("bytes")
    @classmethod
    def _bytes(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and any(not 0 <= b <= 255 for b in value):
            raise ValueError("bytes must be 0..255")
        return value

    @property
    def token_id(self) -> int | None:
        """The id of a ``"token_id:N"`` token (vLLM's ``return_tokens_as_token_ids``), else ``None``."""
        match = _TOKEN_ID.fullmatch(self.token)
        return int(match.group(1)) if match else None

    @property
    def piece(self) -> bytes | None:
        """The token's text as UTF-8: its ``bytes``, else the token itself unless that is an id placeholder."""
        if self.bytes is not None:
            return bytes(self.bytes)
        return None if self.token_id is not None else self.token.encode()


_ENTRIES = TypeAdapter(list[TokenLogprob])


class ServerTokens(BaseModel):
    """The generated tokens of one reply: one logprob each, their ids where the server gave every one."""

    model_config = ConfigDict(frozen=True)

    logprobs: list[float]
    token_ids: list[int] | None = None
    pieces: list[bytes | None] = Field(default_factory=list)
    """Each token's text as UTF-8, ``None`` where the server did not say (an id without ``bytes``)."""


def _entries(found: object) -> list[Any]:
    """The per-token entries of a ``logprobs`` field in either shape (a bare list is the chat shape's content).

    Raises:
        ValueError: neither shape.
    """
    if isinstance(found, Mapping) and isinstance(found.get("content"), list):
        return list(found["content"])
    if isinstance(found, Mapping) and isinstance(found.get("tokens"), list):
        tokens, values = found["tokens"], found.get("token_logprobs")
        if not isinstance(values, list) or len(values) != len(tokens):
            raise ValueError("tokens and token_logprobs do not line up")
        return [{"token": t, "logprob": v} for t, v in zip(tokens, values, strict=True)]
    if isinstance(found, list):
        return found
    raise ValueError(f"an unknown logprobs shape ({type(found).__name__})")


def read_server_tokens(found: object, kept_chars: int | None = None) -> ServerTokens | None:
    """The tokens of a reply's ``logprobs`` field; ``None`` when it is absent (``None`` or empty).

    With ``kept_chars``, only the tokens that produced the first ``kept_chars`` characters count: a reply cut at a
    stop string keeps whole tokens, as token backends do.

    Raises:
        ValueError: the field is there but malformed (a missing or non-numeric ``logprob``, an unknown shape), or
            the cut cannot be placed because some token's text is unknown.
    """
    if found is None or found == {} or found == []:
        return None
    try:
        entries = _ENTRIES.validate_python(_entries(found))
    except ValidationError as error:
        first = error.errors()[0]
        raise ValueError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if not entries:
        return None
    if kept_chars is not None:
        kept: list[TokenLogprob] = []
        seen = 0
        for entry in entries:
            if seen >= kept_chars:
                break
            piece = entry.piece
            if piece is None:
                raise ValueError("a token without its text: the stop-string cut cannot be placed")
            kept.append(entry)
            seen += len(piece.decode("utf-8", errors="replace"))
        entries = kept
    ids = [entry.token_id for entry in entries]
    return ServerTokens(
        logprobs=[entry.logprob for entry in entries],
        token_ids=None if any(i is None for i in ids) else [i for i in ids if i is not None],
        pieces=[entry.piece for entry in entries],
    )


class ServerVocabulary:
    """Token id → text, learnt from the replies of one server (their ``token_id:N`` tokens and ``bytes``).

    A text backend has no tokenizer, yet the agents need one to find the token that starts a label in a reply
    (:class:`~evigraph.tokens.TokenOffsets`). Every id this decodes came from one of its own replies, so it is
    known unless the server left that token's ``bytes`` out; an unknown id decodes to nothing. At most one entry
    per vocabulary item is held.
    """

    def __init__(self) -> None:
        self._pieces: dict[int, bytes] = {}

    def learn(self, tokens: ServerTokens) -> None:
        if tokens.token_ids is None:
            return
        for token_id, piece in zip(tokens.token_ids, tokens.pieces, strict=False):
            if piece is not None:
                self._pieces[token_id] = piece

    def decode(self, token_ids: Sequence[int]) -> str:
        """The text of ``token_ids`` (bytes joined first, so a character split across tokens comes out whole)."""
        return b"".join(self._pieces.get(i, b"") for i in token_ids).decode("utf-8", errors="replace")

    def __len__(self) -> int:
        return len(self._pieces)


class LogprobNotice:
    """Says once per generator that its server's logprobs are missing, malformed or without token ids.

    Per call would flood a run's log; never would leave a user with ``confidence: null`` and no reason.
    """

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self.given = False

    def missing(self, problem: str, lost: str) -> None:
        if self.given:
            return
        self.given = True
        logger.warning("%s: %s %s; %s (said once per generator)", self.name, self.url, problem, lost)
