"""Token-exact rendering of a transcript: the one convention shared by inference, rollouts and SFT export.

- Prompt segments (system/user messages) render through the tokenizer's chat template with the generation
  prompt appended.
- A policy segment contributes exactly the token ids the model generated (stop string included; a token that
  ran past the stop string stays whole). Segments from text-only backends are tokenized as a fallback.
- An environment segment renders as a **new user turn**: the assistant end-of-turn marker, the user header,
  the content, the user end-of-turn marker and the next assistant header. The wrapper is derived from the
  tokenizer's own chat template (so it matches what the template would print for that conversation), and
  tokenized *separately* from the policy tokens, exactly as OpenRLHF's multi-turn executor does. If the
  policy turn already ended with the end-of-sequence token (e.g. ``<|im_end|>``), that marker is not
  repeated.

The environment content must already be escaped (see :mod:`evigraph.protocol.escaping`); special-token
text inside it would otherwise be tokenized as a special token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from evigraph.errors import ConfigError, TokenContractError
from evigraph.trajectory import Segment

__all__ = ("ChatFormat", "RenderedTranscript", "TokenizerLike")

_ASSISTANT_SENTINEL = "\u2063EVIGRAPH_ASSISTANT\u2063"
_ENV_SENTINEL = "\u2063EVIGRAPH_ENV\u2063"


class TokenizerLike(Protocol):
    """The slice of a Hugging Face tokenizer this module uses."""

    eos_token: str | None

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, token_ids: Sequence[int], **kwargs: Any) -> str: ...


@dataclass(frozen=True)
class RenderedTranscript:
    """The exact token sequence of a transcript and each segment's half-open span in it."""

    token_ids: list[int]
    spans: list[tuple[int, int]]

    def action_ranges(self, segments: Sequence[Segment]) -> list[tuple[int, int]]:
        return [span for span, seg in zip(self.spans, segments, strict=True) if seg.origin == "policy"]


class ChatFormat:
    """Renders transcripts for one tokenizer. Build once per model; methods are cheap (cached)."""

    def __init__(self, tokenizer: TokenizerLike) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError("the tokenizer has no chat template; evigraph needs an instruct/chat model")
        self.tokenizer = tokenizer
        self.turn_close, self.turn_open = self._derive_environment_wrapper()
        eos = tokenizer.eos_token or ""
        self._eos_text = eos
        eos_id = getattr(tokenizer, "eos_token_id", None)
        self._eos_ids = frozenset({eos_id} if isinstance(eos_id, int) else set())
        # After an EOS-terminated policy turn the close marker would appear twice; strip it once.
        drop_eos = bool(eos) and self.turn_close.startswith(eos)
        self.turn_close_after_eos = self.turn_close[len(eos) :] if drop_eos else self.turn_close
        self._encode_cached = lru_cache(maxsize=4096)(self._encode)
        self._render_messages = lru_cache(maxsize=1024)(self._render_messages_uncached)

    def _derive_environment_wrapper(self) -> tuple[str, str]:
        conversation = [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": _ASSISTANT_SENTINEL},
            {"role": "user", "content": _ENV_SENTINEL},
        ]
        rendered = self.tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
        a = rendered.find(_ASSISTANT_SENTINEL)
        e = rendered.find(_ENV_SENTINEL)
        if a < 0 or e < a:
            raise ConfigError("cannot derive the environment-turn wrapper from this chat template")
        before_env = rendered[a + len(_ASSISTANT_SENTINEL) : e]
        after_env = rendered[e + len(_ENV_SENTINEL) :]
        return before_env, after_env

    def _ends_with_eos(self, segment: Segment) -> bool:
        """Whether a policy turn already ends with the end-of-sequence token (then its close marker is not repeated).

        Decided by content, not ``finish_reason``: a text-only backend reports "eos" without the marker text.
        """
        if segment.token_ids:
            return segment.token_ids[-1] in self._eos_ids
        return bool(self._eos_text) and segment.text.endswith(self._eos_text)

    def _encode(self, text: str) -> tuple[int, ...]:
        return tuple(self.tokenizer.encode(text, add_special_tokens=False))

    # -- text ---------------------------------------------------------------------------------------
    def prompt_text(self, prompt: Sequence[Segment]) -> str:
        # Every turn of a run re-renders the same prompt: the template is applied once per distinct prompt.
        return self._render_messages(tuple((s.chat_role, s.text) for s in prompt))

    def _render_messages_uncached(self, messages: tuple[tuple[str, str], ...]) -> str:
        conversation = [{"role": role, "content": content} for role, content in messages]
        return self.tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)

    def environment_text(self, content: str, *, after_eos: bool = False) -> str:
        """The exact text appended for an environment turn (what OpenRLHF's ``environment_feedback`` gets)."""
        close = self.turn_close_after_eos if after_eos else self.turn_close
        return f"{close}{content}{self.turn_open}"

    # -- tokens -------------------------------------------------------------------------------------
    def decode(self, token_ids: Sequence[int]) -> str:
        """Ids → text exactly as generated: special tokens kept, no clean-up of spaces."""
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def prompt_ids(self, prompt: Sequence[Segment]) -> tuple[int, ...]:
        """The ids of the prompt messages, generation prompt included."""
        return self._encode_cached(self.prompt_text(prompt))

    def segment_ids(self, segment: Segment, previous: Segment, *, strict: bool = False) -> Sequence[int]:
        """The ids one policy or environment segment adds after ``previous`` (how :meth:`render` builds the
        sequence, exposed so a graph can count its tokens as the run goes).

        Raises:
            TokenContractError: ``strict`` and a policy segment carries no ids (re-encoding the policy's text
                can give other ids than the model produced, which is wrong for training).
            ConfigError: a prompt segment here, or two environment segments in a row.
        """
        if segment.origin == "policy":
            if segment.token_ids is not None:
                return segment.token_ids
            if strict:
                raise TokenContractError("a policy segment has no token ids; a strict run never re-encodes policy text")
            return self._encode_cached(segment.text)
        if segment.origin == "environment":
            if previous.origin == "environment":
                raise ConfigError("merge consecutive environment segments into one segment")
            after_eos = previous.origin == "policy" and self._ends_with_eos(previous)
            return self._encode_cached(self.environment_text(segment.text, after_eos=after_eos))
        raise ConfigError("prompt segments must all come before policy/environment ones")

    def render(self, transcript: Sequence[Segment], *, strict: bool = False) -> RenderedTranscript:
        """Exact token ids of ``transcript`` plus per-segment spans.

        Prompt ids sit on the last prompt segment (earlier prompt segments get empty spans); policy segments
        use their stored ``token_ids``. A policy segment without ids (from a text backend) is encoded from its
        text, unless ``strict`` (see :meth:`segment_ids`).
        """
        n_prompt = 0
        while n_prompt < len(transcript) and transcript[n_prompt].origin == "prompt":
            n_prompt += 1
        if n_prompt == 0:
            raise ConfigError("a transcript starts with prompt segments")
        ids: list[int] = list(self.prompt_ids(transcript[:n_prompt]))
        spans: list[tuple[int, int]] = [(0, 0)] * (n_prompt - 1) + [(0, len(ids))]
        previous = transcript[n_prompt - 1]
        for segment in transcript[n_prompt:]:
            start = len(ids)
            ids.extend(self.segment_ids(segment, previous, strict=strict))
            spans.append((start, len(ids)))
            previous = segment
        return RenderedTranscript(token_ids=ids, spans=spans)

    def segment_token_ids(self, transcript: Sequence[Segment], *, strict: bool = False) -> list[Segment]:
        """A copy of ``transcript`` whose segments carry their exact token ids (for storage and SFT export)."""
        rendered = self.render(transcript, strict=strict)
        return [
            seg.model_copy(update={"token_ids": rendered.token_ids[a:b]})
            for seg, (a, b) in zip(transcript, rendered.spans, strict=True)
        ]
