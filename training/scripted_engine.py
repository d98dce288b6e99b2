"""Drive an agent's training episodes on CPU exactly as OpenRLHF would, without vLLM: stand-ins for vLLM's
``SamplingParams`` and for the rollout actor's ``generate`` (token ids in, one ``RequestOutput`` out), replaying
scripted replies with stop strings, EOS and the token cap honoured. The tests, the executor benchmark and users
checking their own agent's token layout use them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

__all__ = ("LOGPROB", "ScriptedEngine", "ScriptedSamplingParams")

LOGPROB = -0.25
"""The log-probability reported for every scripted token."""


@dataclass
class ScriptedSamplingParams:
    """The fields of vLLM's ``SamplingParams`` our executor reads or sets."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    seed: int | None = None
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    max_tokens: int | None = 1024
    stop: list[str] | None = None
    include_stop_str_in_output: bool = False
    logprobs: int | None = None
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True


@dataclass
class ScriptedEngine:
    """``RolloutRayActor.generate``: each call returns the next scripted reply, tokenised, cut after its first
    stop string (kept), else closed with EOS, and cut at ``max_tokens`` (``finish_reason="length"``)."""

    tokenizer: Any
    replies: Sequence[str] | Callable[[list[int]], str]
    latency_s: float = 0.0
    """Simulated generation time per call (``asyncio.sleep``: other episodes run meanwhile)."""
    calls: list[tuple[list[int], Any]] = field(default_factory=list)

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        self.calls.append((list(prompt_token_ids), sampling_params))
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        text = self.replies(prompt_token_ids) if callable(self.replies) else self.replies[len(self.calls) - 1]
        stops = [(text.find(s), s) for s in sampling_params.stop or () if s in text]
        stop_reason: str | None = None
        if stops:
            position, stop_reason = min(stops)
            ids = self.tokenizer.encode(text[: position + len(stop_reason)], add_special_tokens=False)
        else:
            ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id]
        finish = "stop"
        if sampling_params.max_tokens is not None and len(ids) > sampling_params.max_tokens:
            ids, finish, stop_reason = ids[: sampling_params.max_tokens], "length", None
        logprobs = None
        if sampling_params.logprobs is not None:
            logprobs = [{t: SimpleNamespace(logprob=LOGPROB)} for t in ids]
        text = self.tokenizer.decode(
            ids, skip_special_tokens=bool(getattr(sampling_params, "skip_special_tokens", True))
        )
        output = SimpleNamespace(
            token_ids=ids, text=text, finish_reason=finish, stop_reason=stop_reason, logprobs=logprobs
        )
        return SimpleNamespace(outputs=[output])
