"""The policy of a training rollout: OpenRLHF's vLLM rollout actor behind the :class:`Generator` interface.

Inside ``AgentExecutor.execute`` OpenRLHF hands over ``llm_engine`` (its ``RolloutRayActor``, whose ``async
generate(prompt_token_ids, sampling_params, multi_modal_data=None)`` returns one vLLM ``RequestOutput``), the
Hugging Face tokenizer and the run's vLLM ``SamplingParams``. :class:`EngineGenerator` renders each transcript
with :class:`~evigraph.generators.chat_format.ChatFormat` (policy turns go back as the exact ids they were
sampled as), sends the ids, and maps the output exactly as the in-process vLLM backend does
(:func:`~evigraph.generators.vllm.to_continuation`: text decoded from the ids, the stop string kept, EOS ids
kept, logprobs of the sampled tokens).

Per turn, *sampling* fields (temperature, top-p, top-k, min-p, seed, penalties) are the trainer's -- the ones
OpenRLHF passed -- and *protocol* fields (stop strings, the turn cap) are the graph's; the sampled tokens'
logprobs are always asked for, since every training sample carries them. A new params
object is built for every turn (OpenRLHF mutates the one it passes), through the same class, so this module
never imports vLLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evigraph.errors import GeneratorError
from evigraph.generators.base import BaseGenerator
from evigraph.generators.chat_format import ChatFormat, TokenizerLike
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.generators.vllm import to_continuation
from evigraph.trajectory import Segment

__all__ = ("SAMPLING_FIELDS", "EngineGenerator", "turn_params")

SAMPLING_FIELDS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
)
"""Fields of vLLM's ``SamplingParams`` that come from the trainer's settings."""


def turn_params(base: Any, params: SamplingParams) -> Any:
    """A fresh vLLM params object for one turn: ``base``'s sampling fields, ``params``' protocol fields."""
    fields = {name: getattr(base, name) for name in SAMPLING_FIELDS if getattr(base, name, None) is not None}
    return type(base)(
        **fields,
        max_tokens=params.max_new_tokens,
        stop=list(params.stop),
        include_stop_str_in_output=True,  # our convention: the stop string stays in the turn
        logprobs=0 if params.logprobs else None,  # 0 = the sampled token's own logprob only
        skip_special_tokens=False,
        spaces_between_special_tokens=False,
    )


class EngineGenerator(BaseGenerator):
    """OpenRLHF's rollout engine as a token-level generator (see the module docstring).

    Args:
        engine: ``llm_engine`` as ``execute`` receives it.
        tokenizer: ``hf_tokenizer`` as ``execute`` receives it (it must have a chat template).
        sampling: the vLLM ``SamplingParams`` ``execute`` receives (read, never changed).
        context_window: the run's ``max_length``: a graph's runs stay inside it.
        chat_format: a :class:`ChatFormat` of ``tokenizer`` to share (its caches) across episodes.
        name: shown in trajectories.
    """

    can_continue_policy = True

    def __init__(
        self,
        engine: Any,
        tokenizer: TokenizerLike,
        sampling: Any,
        *,
        context_window: int | None = None,
        chat_format: ChatFormat | None = None,
        name: str = "openrlhf-engine",
    ) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.chat_format = chat_format or ChatFormat(tokenizer)
        self.sampling = sampling
        self.context_window = context_window
        self.name = name

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        params = params.model_copy(update={"logprobs": True})  # a training sample always carries rollout logprobs
        prompt_ids = list(self.chat_format.render(transcript, strict=True).token_ids)
        output = await self.engine.generate(prompt_ids, turn_params(self.sampling, params))
        outputs = getattr(output, "outputs", None)
        if not outputs:
            raise GeneratorError(f"{self.name}: the engine returned no output")
        return to_continuation(outputs[0], params=params, decode=self._decode, prompt_tokens=len(prompt_ids))

    def _decode(self, token_ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(token_ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)
