"""A test double with real-backend semantics, for tests and for users who script an agent's replies.

Replies come from a queue or from a function of the transcript. Stop strings behave as on the real backends
(the reply is cut right after the first stop string, which stays in the text), ``max_new_tokens`` counts
whitespace-delimited pieces, and an optional per-call delay simulates model latency without blocking the
event loop -- which is what the rollout-concurrency benchmark measures.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from evigraph.errors import GeneratorError
from evigraph.generators.base import BaseGenerator, check_transcript
from evigraph.generators.chat_format import ChatFormat, TokenizerLike
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.trajectory import Segment

__all__ = ("Reply", "ScriptedCall", "ScriptedGenerator")

Reply = str | Callable[[list[Segment], SamplingParams], "str | Awaitable[str]"]
Scores = Callable[[list[Segment], list[str]], Sequence[float]]
_PIECE = re.compile(r"\s*\S+")


@dataclass(frozen=True)
class ScriptedCall:
    """One recorded call: what the graph sent."""

    transcript: list[Segment]
    params: SamplingParams


def _cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, str | None]:
    best: tuple[int, str] | None = None
    for stop in stops:
        position = text.find(stop)
        if position >= 0 and (best is None or position < best[0]):
            best = (position, stop)
    if best is None:
        return text, None
    return text[: best[0] + len(best[1])], best[1]


def _cut_at_cap(text: str, max_new_tokens: int) -> tuple[str, bool]:
    pieces = _PIECE.findall(text)
    if len(pieces) <= max_new_tokens:
        return text, False
    return "".join(pieces[:max_new_tokens]), True


class ScriptedGenerator(BaseGenerator):
    """Replays scripted replies.

    Args:
        replies: a sequence consumed in order (each item a string or a function of
            ``(transcript, params)``), or one function answering every call.
        delay_s: simulated latency per call (``asyncio.sleep``; other runs proceed meanwhile).
        tokenizer: makes this a token-level backend: replies get real token ids (and fixed logprobs when
            asked for), ``max_new_tokens`` counts tokens, and a tokenizer with a chat template becomes
            :attr:`chat_format`, so graphs store exact training sequences as with a real model.
        logprob: the log-probability reported for every generated token when ``params.logprobs``.
        scores: what :meth:`score_continuations` returns, as a function of ``(transcript, continuations)``;
            without it a continuation scores ``logprob`` per token (per whitespace piece without a tokenizer),
            the same fixed value generated tokens get.
        name: shown in traces and ``evigraph info``.

    Raises (at call time):
        GeneratorError: the queue is exhausted -- a test that expected fewer calls.
    """

    can_continue_policy = True

    def __init__(
        self,
        replies: Iterable[Reply] | Callable[[list[Segment], SamplingParams], str | Awaitable[str]],
        *,
        delay_s: float = 0.0,
        tokenizer: TokenizerLike | None = None,
        logprob: float = -0.05,
        scores: Scores | None = None,
        name: str = "scripted",
    ) -> None:
        if callable(replies):
            self._function: Reply | None = replies
            self._queue: deque[Reply] = deque()
        else:
            self._function = None
            self._queue = deque(replies)
        self.delay_s = delay_s
        self.tokenizer = tokenizer
        if tokenizer is not None and getattr(tokenizer, "chat_template", None):
            self.chat_format = ChatFormat(tokenizer)
        self.logprob = logprob
        self.scores = scores
        self.name = name
        self.calls: list[ScriptedCall] = []

    @property
    def remaining(self) -> int:
        return len(self._queue)

    async def _next_reply(self, transcript: list[Segment], params: SamplingParams) -> str:
        reply = self._function
        if reply is None:
            if not self._queue:
                raise GeneratorError(f"{self.name}: no scripted reply left for call {len(self.calls)}")
            reply = self._queue.popleft()
        if callable(reply):
            produced = reply(transcript, params)
            if inspect.isawaitable(produced):
                produced = await produced
            reply = produced
        if not isinstance(reply, str):
            raise GeneratorError(f"{self.name}: a scripted reply must be a string, got {type(reply).__name__}")
        return reply

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        self.calls.append(ScriptedCall(transcript=transcript, params=params))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        reply = await self._next_reply(transcript, params)
        text, stop = _cut_at_stop(reply, params.stop)
        token_ids = logprobs = None
        if self.tokenizer is None:
            text, capped = _cut_at_cap(text, params.max_new_tokens)
        else:
            token_ids = list(self.tokenizer.encode(text, add_special_tokens=False))
            capped = len(token_ids) > params.max_new_tokens
            if capped:
                token_ids = token_ids[: params.max_new_tokens]
                text = self.tokenizer.decode(token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            if params.logprobs:
                logprobs = [self.logprob] * len(token_ids)
        if capped:
            finish, stop = "length", None
        else:
            finish = "stop" if stop else "eos"
        return Continuation(text=text, finish_reason=finish, stop_string=stop, token_ids=token_ids, logprobs=logprobs)

    async def score_continuations(self, transcript: Sequence[Segment], continuations: Sequence[str]) -> list[float]:
        """Scripted scores (see ``scores``), so the :class:`~evigraph.generators.base.ContinuationScorer` users
        can be tested without a model.

        Raises:
            GeneratorError: ``scores`` returned a different number of values than continuations.
        """
        check_transcript(transcript, allow_trailing_policy=True)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.scores is not None:
            values = [float(v) for v in self.scores(list(transcript), list(continuations))]
            if len(values) != len(continuations):
                raise GeneratorError(
                    f"{self.name}: scripted scores gave {len(values)} values for {len(continuations)} continuations"
                )
            return values
        if self.tokenizer is not None:
            return [self.logprob * len(self.tokenizer.encode(c, add_special_tokens=False)) for c in continuations]
        return [self.logprob * len(_PIECE.findall(c)) for c in continuations]
