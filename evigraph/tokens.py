"""The token contract between graphs and training: exact ids, spans inside policy text, rollout logprobs, and the
whole-sequence budget.

Training (multi-turn GRPO) needs the exact token sequence the policy saw and produced, the ranges of the policy's
own tokens, and -- for typed step rewards -- where each step sits in those tokens. Inference can live with
approximations (a chat API returns text only). So every helper here has a **strict** mode, used by training: any
fallback to text, and any re-encoding of text the policy produced, raises :class:`~evigraph.errors.TokenContractError`
instead of silently degrading the trajectory.

- :func:`token_format` -- the generator's :class:`~evigraph.generators.chat_format.ChatFormat` (what a token-level
  backend declares), or an error in strict mode.
- :func:`token_decoder` -- ids → text for the ids a generator returns: its chat format's, or (a text backend that
  returns ids, vLLM behind its OpenAI API) the one it learnt from its replies.
- :class:`TokenOffsets` / :func:`char_span_to_token_span` -- character offsets inside one policy segment's text to
  the half-open token span that produced them (RLSeek's ``## Step N`` blocks, StepGap's step blocks).
- :func:`rollout_logprobs` -- per-token logprobs of the whole sequence, policy tokens from the backend and 0.0
  elsewhere (OpenRLHF's ``rollout_log_probs``).
- :func:`plan_turn` -- whether the next turn still fits a whole-sequence budget, or must be the forced final turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from evigraph.errors import TokenContractError
from evigraph.trajectory import Segment

if TYPE_CHECKING:
    from evigraph.generators.base import Generator
    from evigraph.generators.chat_format import ChatFormat

__all__ = (
    "TokenOffsets",
    "TurnPlan",
    "char_span_to_token_span",
    "plan_turn",
    "rollout_logprobs",
    "token_decoder",
    "token_format",
    "token_probability_at",
)

Decode = Callable[[list[int]], str]
"""Token ids → text, with special tokens kept and no clean-up (``ChatFormat.decode``)."""


def token_format(generator: Generator, *, strict: bool) -> ChatFormat | None:
    """The chat format of a token-level backend; ``None`` for a text backend unless ``strict``.

    Raises:
        TokenContractError: ``strict`` and the generator is a text backend (it returns no exact token ids).
    """
    chat_format = generator.chat_format
    if chat_format is None and strict:
        raise TokenContractError(
            f"{generator.name} is a text backend (no chat_format): a strict run needs a token-level backend "
            "(transformers, vLLM, or a scripted generator given a tokenizer)"
        )
    return chat_format


def token_decoder(generator: Generator) -> Decode | None:
    """How to turn the token ids ``generator`` returns back into text (to find the token of a label in a reply):
    the chat format's decode on token backends; on a text backend, its ``decode_token_ids`` where it has one (the
    OpenAI-compatible client and chat models learn one from vLLM's ``token_id:N`` replies); else ``None``."""
    if generator.chat_format is not None:
        return generator.chat_format.decode
    decode = getattr(generator, "decode_token_ids", None)
    return decode if callable(decode) else None


class TokenOffsets:
    """Where each character of ``decode(token_ids)`` came from, for one run of generated tokens.

    Token boundaries need not fall on character boundaries: a byte-level BPE token can hold half of a multi-byte
    character, or the end of one character and the start of the next. A character *belongs* to every token that
    holds one of its bytes. Positions are found by decoding prefixes of the ids (cached, binary search), so this
    works for any tokenizer whose decoding of a prefix is a prefix of the full decoding except for an
    incomplete last character -- byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM2) and SentencePiece with byte
    fallback both are. Limitation: a literal U+FFFD in the text that is split across tokens is taken as complete
    one token early.

    Args:
        token_ids: the generated ids (one policy segment's ``token_ids``).
        decode: ids → text with special tokens kept and no clean-up (``ChatFormat.decode``).
    """

    def __init__(self, token_ids: Sequence[int], decode: Decode) -> None:
        self.token_ids = list(token_ids)
        self._decode = decode
        self._prefix: dict[int, str] = {}
        self.text = self._prefix_text(len(self.token_ids))

    def _prefix_text(self, k: int) -> str:
        if k not in self._prefix:
            self._prefix[k] = self._decode(self.token_ids[:k]) if k else ""
        return self._prefix[k]

    def complete_chars(self, k: int) -> int:
        """How many characters of :attr:`text` the first ``k`` tokens produce completely."""
        return _common_prefix_length(self._prefix_text(k), self.text)

    def _started(self, k: int, char: int) -> bool:
        """Whether the first ``k`` tokens hold at least one byte of character ``char``."""
        complete = self.complete_chars(k)
        # A partial character shows as replacement characters past the complete prefix.
        return complete > char or (complete == char and len(self._prefix_text(k)) > char)

    def token_span(self, start: int, end: int) -> tuple[int, int]:
        """The smallest half-open token range ``[t0, t1)`` holding every byte of ``text[start:end]``.

        An empty range (``start == end``) maps to the empty token range at the first token boundary at or
        after ``start``.

        Raises:
            ValueError: offsets outside ``0 <= start <= end <= len(text)``.
        """
        if not 0 <= start <= end <= len(self.text):
            raise ValueError(f"character span [{start}, {end}) is outside the text (length {len(self.text)})")
        n = len(self.token_ids)
        t1 = _first(0, n, lambda k: self.complete_chars(k) >= end)
        if start == end:
            boundary = _first(0, n, lambda k: self.complete_chars(k) >= start)
            return boundary, boundary
        t0 = _first(1, n, lambda k: self._started(k, start)) - 1
        return t0, t1


def _common_prefix_length(prefix: str, text: str) -> int:
    if text.startswith(prefix):  # the usual case: no partial character at the end
        return len(prefix)
    lo, hi = 0, min(len(prefix), len(text))  # invariant: prefix[:lo] == text[:lo], and not beyond hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text.startswith(prefix[:mid]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _first(lo: int, hi: int, predicate: Callable[[int], bool]) -> int:
    """The smallest ``k`` in ``[lo, hi]`` with ``predicate(k)`` (monotone; ``predicate(hi)`` must hold)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if predicate(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def char_span_to_token_span(token_ids: Sequence[int], start: int, end: int, decode: Decode) -> tuple[int, int]:
    """The token span (relative to ``token_ids``) of ``decode(token_ids)[start:end]``; see :class:`TokenOffsets`.

    Example:
        >>> pieces = ["Ste", "p 1", ": a", "\\n## Step 2", ": b"]  # a tokenizer whose ids index these pieces
        >>> decode = lambda ids: "".join(pieces[i] for i in ids)
        >>> text = decode([0, 1, 2, 3, 4])
        >>> start = text.index("## Step 2")
        >>> char_span_to_token_span([0, 1, 2, 3, 4], start, len(text), decode)  # the step shares token 3's "\\n"
        (3, 5)
    """
    return TokenOffsets(token_ids, decode).token_span(start, end)


def token_probability_at(offsets: TokenOffsets, logprobs: Sequence[float], char: int) -> float | None:
    """``exp(logprob)`` of the generated token that starts character ``char`` of ``offsets.text``: the
    probability the model gave a decision written there (a label, a JSON boolean).

    Returns ``None`` when ``logprobs`` does not line up with the ids or ``char`` is outside the text.

    Example:
        >>> import math
        >>> pieces = ['{"ok": ', "tr", "ue}"]
        >>> offsets = TokenOffsets([0, 1, 2], lambda ids: "".join(pieces[i] for i in ids))
        >>> round(token_probability_at(offsets, [0.0, math.log(0.9), 0.0], offsets.text.index("true")), 4)
        0.9
    """
    if len(logprobs) != len(offsets.token_ids) or not 0 <= char < len(offsets.text):
        return None
    first, _ = offsets.token_span(char, char + 1)
    return math.exp(logprobs[first])


def rollout_logprobs(segments: Sequence[Segment], *, strict: bool = True) -> list[float]:
    """Per-token log-probabilities aligned with the whole sequence: the backend's logprobs on policy tokens,
    0.0 on prompt and environment tokens (the layout of OpenRLHF's ``rollout_log_probs``).

    Raises:
        TokenContractError: a segment has no token ids, or (``strict``) a policy segment has no logprobs;
            without ``strict`` such a segment gets 0.0 per token.
    """
    values: list[float] = []
    for index, segment in enumerate(segments):
        if segment.token_ids is None:
            raise TokenContractError(f"segment {index} ({segment.origin}) has no token ids")
        if segment.origin == "policy" and segment.logprobs is None:
            if strict:
                raise TokenContractError(f"policy segment {index} has no logprobs (sample with logprobs=True)")
            values.extend([0.0] * len(segment.token_ids))
        elif segment.origin == "policy":
            values.extend(segment.logprobs or ())
        else:
            values.extend([0.0] * len(segment.token_ids))
    return values


class TurnPlan(NamedTuple):
    """What the next policy turn may do under a whole-sequence budget."""

    final: bool
    """The turn must be the final (answer) turn: after it, nothing more would fit."""
    max_new_tokens: int
    """Its cap: the per-turn cap, or less when fewer tokens are left."""


def plan_turn(
    *,
    used: int,
    turn_cap: int,
    final_cap: int,
    max_observation: int,
    limit: int | None,
) -> TurnPlan | None:
    """Plan the next turn of a run whose whole sequence (prompt, turns and observations) may hold ``limit`` tokens.

    A turn may be an ordinary one only if, after it, the largest observation the environment may add *and* a
    complete final turn still fit; otherwise it is the forced final turn, capped at what is left. So a run that
    reaches the budget ends with the agent's final (answer) turn instead of running out of context mid-turn.

    Args:
        used: tokens in the sequence so far.
        turn_cap: the per-turn cap of an ordinary turn.
        final_cap: the per-turn cap of the final turn.
        max_observation: the most tokens one environment turn adds (chat wrapper included).
        limit: the budget; ``None`` = unbounded (every turn gets ``turn_cap``).

    Returns:
        The plan, or ``None`` when not a single token is left (the prompt alone fills the budget).

    Example:
        >>> plan_turn(used=3000, turn_cap=512, final_cap=512, max_observation=800, limit=4096)
        TurnPlan(final=True, max_new_tokens=512)
        >>> plan_turn(used=1000, turn_cap=512, final_cap=512, max_observation=800, limit=4096)
        TurnPlan(final=False, max_new_tokens=512)
    """
    if limit is None:
        return TurnPlan(final=False, max_new_tokens=turn_cap)
    left = limit - used
    if left <= 0:
        return None
    if turn_cap + max_observation + final_cap <= left:
        return TurnPlan(final=False, max_new_tokens=turn_cap)
    return TurnPlan(final=True, max_new_tokens=min(final_cap, left))
