"""The graph's policy over TRL's vLLM engine (``training/trl_vllm.py``), on CPU against a recording stand-in of
``trl.generation.vllm_generation.VLLMGeneration``: the ids sent are the rendered transcript, the protocol fields
are set for each call and restored, concurrent turns share calls, outputs map to continuations exactly, and a
Veri-R1 training episode runs end to end with the stand-in's tokens as its trajectory."""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from evigraph.errors import ConfigError, GeneratorError
from evigraph.generators.types import Continuation, Guide, SamplingParams
from evigraph.training.executor import GraphExecutor, RolloutConfig
from evigraph.training.trl_vllm import TrlVllmGenerator, engine_continuation, vllm_policy
from evigraph.trajectory import Segment
from tests.agents.veri_r1.test_graph import ANSWER_REFUTE, CLAIM, PLAN, DictSearch

# vLLM's SamplingParams fields the stand-in accepts (an unknown key fails there as SamplingParams(**kwargs) would).
VLLM_SAMPLING_FIELDS = frozenset(
    {
        "n", "repetition_penalty", "temperature", "top_p", "top_k", "min_p", "max_tokens", "logprobs", "seed",
        "presence_penalty", "frequency_penalty", "stop", "stop_token_ids", "ignore_eos", "min_tokens",
        "include_stop_str_in_output", "skip_special_tokens", "spaces_between_special_tokens", "structured_outputs",
    }
)  # fmt: skip


def logprob_of(position: int, token: int) -> float:
    """The stand-in's logprob of a sampled token (distinct per position and id, so alignment is checked)."""
    return -0.05 - (token % 13) / 100 - position / 1000


@dataclass
class Call:
    prompts: list[list[int]]
    images: Any
    num_generations: int
    sampling: dict[str, Any]
    """vLLM's sampling settings as TRL builds them from the engine's attributes in this mode."""
    completions: list[list[int]]


class RecordingVLLMGeneration:
    """A stand-in for TRL 1.16's ``VLLMGeneration`` (``trl/generation/vllm_generation.py``), checked against it
    by :func:`test_the_stand_in_has_trls_interface`:

    - the attributes ``generate`` reads (``__init__``, lines 265-281: ``mode``, ``structured_outputs_regex``,
      ``enable_sleep_mode``, ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``repetition_penalty``,
      ``max_completion_length``, ``logprobs``, ``generation_kwargs``) and ``accelerator.num_processes``;
    - ``generate(prompts, images, num_generations, profiler=None)`` (line 550) returning ``(prompt_ids,
      completion_ids, logprobs, logprob_token_ids)`` (line 754), logprobs of shape (B, T, k) rank-sorted (lines
      70-99; ``vllm_client.parse_logprobs`` in server mode);
    - the sampling settings merged as TRL merges them: colocate mode lines 662-683 (``generation_kwargs`` updated
      into vLLM's ``SamplingParams``), server mode lines 617-631 and ``vllm_client.py`` lines 431-455
      (``generation_kwargs`` updated into the ``/v1/completions`` body);
    - vLLM's stopping: an EOS id ends the completion (kept), else the token that completes a stop string in the
      detokenized output (kept whole, whatever ``include_stop_str_in_output`` says about the text), else
      ``max_tokens``.

    The scripted ``policy`` maps a prompt's ids to the reply text; the reply then runs until EOS.
    """

    def __init__(
        self,
        tokenizer: Any,
        policy: Callable[[list[int]], str],
        *,
        mode: str = "colocate",
        delay_s: float = 0.0,
        top_n: int | None = None,
    ) -> None:
        self.tokenizer, self.policy, self.delay_s, self.top_n = tokenizer, policy, delay_s, top_n
        self.accelerator = SimpleNamespace(num_processes=1, is_main_process=True, process_index=0)
        self.mode = mode
        self.structured_outputs_regex: str | None = None
        self.enable_sleep_mode = False
        self.tensor_parallel_size = 1
        self.repetition_penalty, self.temperature, self.top_p, self.top_k, self.min_p = 1.0, 0.7, 0.95, 0, 0.0
        self.max_completion_length = 256
        self.logprobs: int | None = 0  # GRPOTrainer passes logprobs=0
        self.generation_kwargs: dict[str, Any] = {}
        self.calls: list[Call] = []

    def _sampling(self, num_generations: int) -> dict[str, Any]:
        settings = {
            "n": 1 if self.mode == "colocate" else num_generations,
            "repetition_penalty": self.repetition_penalty,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "min_p": 0.0 if self.min_p is None else self.min_p,
            "max_tokens": self.max_completion_length,
            "logprobs": self.logprobs,
        }
        settings.update(self.generation_kwargs)
        unknown = set(settings) - VLLM_SAMPLING_FIELDS
        if unknown:
            raise TypeError(f"SamplingParams got unexpected keyword arguments {sorted(unknown)}")
        return settings

    def _complete(self, prompt: list[int], sampling: dict[str, Any]) -> list[int]:
        text = self.policy(prompt)
        planned = [*self.tokenizer.encode(text, add_special_tokens=False), self.tokenizer.eos_token_id]
        skip = sampling.get("skip_special_tokens", True)
        ids: list[int] = []
        for token in planned:
            ids.append(token)
            if token == self.tokenizer.eos_token_id and not sampling.get("ignore_eos"):
                break
            output = self.tokenizer.decode(ids, skip_special_tokens=skip)
            if any(stop in output for stop in sampling.get("stop") or ()):
                break
            if len(ids) == sampling["max_tokens"]:
                break
        return ids

    def _logprobs(self, ids: list[int], k: int | None) -> tuple[list[list[float]], list[list[int]]]:
        values, ranked_ids = [], []
        for position, token in enumerate(ids):
            ranked = [(logprob_of(position, token), token)]
            if k:  # top-k: a likelier token first, so the sampled one is not always at rank 0
                ranked = [(-0.01, (token + 1) % len(self.tokenizer)), *ranked][: k + 1]
            values.append([v for v, _ in ranked])
            ranked_ids.append([t for _, t in ranked])
        return values, ranked_ids

    def generate(
        self,
        prompts: list[list[int]],
        images: list[list | None] | None,
        num_generations: int,
        profiler: Any = None,
    ) -> tuple:
        sampling = self._sampling(num_generations)
        if self.delay_s:
            time.sleep(self.delay_s)
        prompt_ids = [list(p) for p in prompts for _ in range(num_generations)]
        completions = [self._complete(p, sampling) for p in prompt_ids]
        self.calls.append(Call([list(p) for p in prompts], images, num_generations, sampling, completions))
        if sampling["logprobs"] is None:
            return prompt_ids, completions, None, None
        k = self.top_n if self.top_n is not None else sampling["logprobs"]
        pairs = [self._logprobs(ids, k) for ids in completions]
        return prompt_ids, completions, [p[0] for p in pairs], [p[1] for p in pairs]


def replies(tokenizer: Any, *texts: str) -> Callable[[list[int]], str]:
    """A policy answering the n-th turn of an episode (n = environment turns so far) with ``texts[n]``."""

    def policy(prompt: list[int]) -> str:
        turn = tokenizer.decode(prompt).count("<|im_start|>user") - 1
        return texts[min(turn, len(texts) - 1)]

    return policy


@pytest.fixture
def tokenizer(qwen2_style_tokenizer: Any) -> Any:
    return qwen2_style_tokenizer


def make(tokenizer: Any, policy: Callable[[list[int]], str] | None = None, **kwargs: Any) -> RecordingVLLMGeneration:
    return RecordingVLLMGeneration(tokenizer, policy or (lambda prompt: "<search>tower</search> trailing"), **kwargs)


def transcript(tokenizer: Any) -> list[Segment]:
    reply = "<search>Hog Island</search>"
    return [
        Segment(origin="prompt", role="user", text=f"Verify: {CLAIM}"),
        Segment(origin="policy", text=reply, token_ids=tokenizer.encode(reply, add_special_tokens=False)),
        Segment(origin="environment", text="<information>Hog Island Light stood on Hog Island.</information>"),
    ]


def test_the_stand_in_has_trls_interface() -> None:
    """The stand-in's ``generate`` and the attributes it reads are TRL's (read from the installed source)."""
    real = pytest.importorskip("trl.generation.vllm_generation")
    client = pytest.importorskip("trl.generation.vllm_client")
    assert list(inspect.signature(real.VLLMGeneration.generate).parameters) == list(
        inspect.signature(RecordingVLLMGeneration.generate).parameters
    )
    init = inspect.signature(real.VLLMGeneration.__init__).parameters
    for name in ("mode", "structured_outputs_regex", "enable_sleep_mode", "temperature", "top_p", "top_k", "min_p",
                 "repetition_penalty", "max_completion_length", "logprobs", "generation_kwargs"):  # fmt: skip
        assert name in init, name
    source = inspect.getsource(real.VLLMGeneration.generate)
    for needle in (
        "max_completion_length = self.max_completion_length",
        '"logprobs": self.logprobs',
        "generation_kwargs.update(self.generation_kwargs)",  # colocate: merged into SamplingParams
        "SamplingParams(**generation_kwargs)",
        '"generation_kwargs": self.generation_kwargs',  # server: handed to the client
        "return prompt_ids, completion_ids, logprobs, logprob_token_ids",
    ):
        assert needle in source, needle
    assert "sampling_params.update(generation_kwargs or {})" in inspect.getsource(client.VLLMClient.generate)
    assert "sorted(lp.items(), key=lambda x: x[1].rank)" in inspect.getsource(real.extract_logprobs)


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_ids_in_are_the_rendered_transcript_and_the_protocol_fields_are_set_then_restored(
    tokenizer: Any, mode: str
) -> None:
    engine = make(tokenizer, mode=mode)
    engine.generation_kwargs = original = {"presence_penalty": 0.1}
    generator = TrlVllmGenerator(engine, tokenizer)
    segments = transcript(tokenizer)
    params = SamplingParams(max_new_tokens=40, temperature=0.0, stop=("</search>", "</answer>"))
    result = asyncio.run(generator.continue_transcript(segments, params))
    generator.close()

    (call,) = engine.calls
    assert call.prompts == [generator.chat_format.render(segments, strict=True).token_ids]
    assert call.images is None and call.num_generations == 1
    sampling = call.sampling
    assert sampling["stop"] == ["</search>", "</answer>"] and sampling["max_tokens"] == 40
    assert sampling["include_stop_str_in_output"] is True and sampling["skip_special_tokens"] is False
    assert sampling["logprobs"] == 0 and sampling["n"] == 1
    assert sampling["temperature"] == 0.7 and sampling["top_p"] == 0.95  # the trainer's, not the graph's 0.0
    assert sampling["presence_penalty"] == 0.1  # the trainer's own generation_kwargs ride along
    # Restored: the very dict, and the fields TRL's own generation would read.
    assert engine.generation_kwargs is original and original == {"presence_penalty": 0.1}
    assert engine.max_completion_length == 256 and engine.logprobs == 0
    assert result.finish_reason == "stop" and result.stop_string == "</search>"
    assert result.token_ids == call.completions[0] and result.text == "<search>tower</search>"
    assert result.prompt_tokens == len(call.prompts[0])


def test_concurrent_turns_share_one_call_per_protocol_setting(tokenizer: Any) -> None:
    engine = make(tokenizer, policy=lambda prompt: f"<search>{tokenizer.decode(prompt).split()[-2]}</search>")
    generator = TrlVllmGenerator(engine, tokenizer)
    search, answer = SamplingParams(max_new_tokens=32, stop=("</search>",)), SamplingParams(max_new_tokens=16)

    async def turns() -> list[Continuation]:
        asks = [(f"claim {i} now", search if i < 3 else answer) for i in range(5)]
        calls = [generator.continue_ids(tokenizer.encode(text, add_special_tokens=False), p) for text, p in asks]
        return await asyncio.gather(*calls)

    results = asyncio.run(turns())
    generator.close()
    assert [len(c.prompts) for c in engine.calls] == [3, 2] and generator.engine_calls == 2
    assert [(c.sampling["stop"], c.sampling["max_tokens"]) for c in engine.calls] == [(["</search>"], 32), ([], 16)]
    # Each turn gets its own row back (the reply names the prompt's own number).
    assert [r.text.split("</search>")[0] for r in results[:3]] == ["<search>0", "<search>1", "<search>2"]
    assert all(r.finish_reason == "eos" and r.text.endswith("<|im_end|>") for r in results[3:])


def test_turns_that_arrive_during_a_call_join_the_next_one(tokenizer: Any) -> None:
    engine = make(tokenizer, delay_s=0.2)
    generator = TrlVllmGenerator(engine, tokenizer, batch_wait_s=0.0)
    a, b = SamplingParams(stop=("</search>",)), SamplingParams(stop=("</answer>",))
    prompt = tokenizer.encode("hello", add_special_tokens=False)

    async def turns() -> list[Continuation]:
        first = asyncio.ensure_future(generator.continue_ids(prompt, a))
        await asyncio.sleep(0.05)  # the first call is running now
        later = [generator.continue_ids([*prompt, i + 10], p) for i, p in enumerate((a, b, a))]
        return [await first, *await asyncio.gather(*later)]

    asyncio.run(turns())
    generator.close()
    # After the lone first turn: the oldest waiting turn's setting with every turn of it, then the other one.
    assert [len(c.prompts) for c in engine.calls] == [1, 2, 1]
    assert [c.sampling["stop"] for c in engine.calls] == [["</search>"], ["</search>"], ["</answer>"]]


def test_finish_reasons_text_and_logprobs_map_exactly(tokenizer: Any) -> None:
    eos = tokenizer.eos_token_id
    texts = {"s": "<think>go</think><search>Hog Island</search> more", "e": "Label: REFUTE", "l": "a b c d e f g h"}
    engine = make(tokenizer, policy=lambda prompt: texts[tokenizer.decode(prompt)])
    generator = TrlVllmGenerator(engine, tokenizer)
    params = SamplingParams(max_new_tokens=5, stop=("</search>",))
    long = SamplingParams(max_new_tokens=64, stop=("</search>",))

    async def turns() -> list[Continuation]:
        asks = [("s", long), ("e", long), ("l", params)]
        return await asyncio.gather(*(generator.continue_ids(tokenizer.encode(k), p) for k, p in asks))

    stop, end, cut = asyncio.run(turns())
    generator.close()
    assert (stop.finish_reason, stop.stop_string) == ("stop", "</search>")
    assert stop.text == "<think>go</think><search>Hog Island</search>"
    assert (end.finish_reason, end.token_ids[-1], end.text) == ("eos", eos, "Label: REFUTE<|im_end|>")
    assert cut.finish_reason == "length" and len(cut.token_ids) == 5
    for result in (stop, end, cut):
        assert result.text == tokenizer.decode(result.token_ids, skip_special_tokens=False)
        assert result.logprobs == [logprob_of(i, t) for i, t in enumerate(result.token_ids)]
        assert result.to_segment().logprobs == result.logprobs


def test_logprobs_are_found_by_id_when_the_engine_returns_top_n(tokenizer: Any) -> None:
    engine = make(tokenizer, top_n=1)  # rank 0 is another token, the sampled one second
    generator = TrlVllmGenerator(engine, tokenizer)
    result = generator.continue_sync(
        [Segment(origin="prompt", role="user", text="q")], SamplingParams(stop="</search>")
    )
    generator.close()
    assert result.logprobs == [logprob_of(i, t) for i, t in enumerate(result.token_ids)]


def test_the_pure_mapping_refuses_what_does_not_align(tokenizer: Any) -> None:
    decode = lambda ids: tokenizer.decode(ids, skip_special_tokens=False)  # noqa: E731
    ids = tokenizer.encode("<search>x</search>", add_special_tokens=False)
    ranked = [[-0.1] for _ in ids]
    params = SamplingParams(max_new_tokens=len(ids), stop="</search>")
    ok = engine_continuation(ids, ranked, [[t] for t in ids], params=params, eos_ids=frozenset({0}), decode=decode)
    assert ok.finish_reason == "stop" and ok.token_ids == ids
    with pytest.raises(GeneratorError, match="capped at 2"):
        engine_continuation(ids, ranked, [[t] for t in ids], params=params.model_copy(update={"max_new_tokens": 2}),
                            eos_ids=frozenset({0}), decode=decode)  # fmt: skip
    with pytest.raises(GeneratorError, match="no logprob for the sampled token at position 0"):
        engine_continuation(ids, ranked, [[t + 1] for t in ids], params=params, eos_ids=frozenset(), decode=decode)
    nan = engine_continuation(ids, [[None]] * len(ids), [[t] for t in ids], params=params, eos_ids=frozenset(),
                              decode=decode)  # fmt: skip
    assert nan.logprobs is not None and all(math.isnan(v) for v in nan.logprobs)  # as TRL keeps them


def test_the_context_window_cuts_the_cap_and_refuses_a_full_prompt(tokenizer: Any) -> None:
    engine = make(tokenizer, policy=lambda prompt: "a b c d e f g h i j k l m n o p")
    generator = TrlVllmGenerator(engine, tokenizer, context_window=12)
    prompt = tokenizer.encode("one two three four", add_special_tokens=False)
    result = asyncio.run(generator.continue_ids(prompt, SamplingParams(max_new_tokens=100)))
    assert engine.calls[0].sampling["max_tokens"] == 12 - len(prompt) and result.finish_reason == "length"
    with pytest.raises(ConfigError, match="the context is 12"):
        asyncio.run(generator.continue_ids(list(range(12)), SamplingParams()))
    generator.close()


def test_engine_failures_reach_every_turn_of_the_call(tokenizer: Any) -> None:
    engine = make(tokenizer)
    engine.generate = lambda **_: (_ for _ in ()).throw(RuntimeError("CUDA out of memory"))  # type: ignore[method-assign]
    generator = TrlVllmGenerator(engine, tokenizer)

    async def turns() -> list[Any]:
        asks = [generator.continue_ids([1, 2, i], SamplingParams()) for i in range(3)]
        return await asyncio.gather(*asks, return_exceptions=True)

    errors = asyncio.run(turns())
    assert all(isinstance(e, GeneratorError) and "CUDA out of memory" in str(e) for e in errors)
    assert engine.max_completion_length == 256 and engine.generation_kwargs == {}  # restored after a failure too
    generator.close()
    with pytest.raises(GeneratorError, match="closed"):
        asyncio.run(generator.continue_ids([1], SamplingParams()))


def test_what_the_engine_cannot_do_is_refused_when_built(tokenizer: Any) -> None:
    engine = make(tokenizer)
    engine.structured_outputs_regex = r"\d+"
    with pytest.raises(ConfigError, match="vllm_structured_outputs_regex"):
        TrlVllmGenerator(engine, tokenizer)
    engine = make(tokenizer)
    engine.accelerator.num_processes = 2
    with pytest.raises(ConfigError, match="one training process only, not 2"):
        TrlVllmGenerator(engine, tokenizer)
    engine = make(tokenizer)
    engine.generation_kwargs = {"seed": 1, "stop_token_ids": [5], "frequency_penalty": 0.2}
    with pytest.raises(ConfigError, match=r"'seed'.*'stop_token_ids'") as error:
        TrlVllmGenerator(engine, tokenizer)
    assert "frequency_penalty" not in str(error.value)
    engine = make(tokenizer, mode="remote")
    with pytest.raises(ConfigError, match="'colocate' or 'server'"):
        TrlVllmGenerator(engine, tokenizer)
    with pytest.raises(ConfigError, match="not TRL's VLLMGeneration"):
        TrlVllmGenerator(SimpleNamespace(generate=None), tokenizer)
    generator = TrlVllmGenerator(make(tokenizer), tokenizer)
    with pytest.raises(ConfigError, match="guide"):
        generator.continue_sync(transcript(tokenizer), SamplingParams(guide=Guide.pattern("a+")))
    generator.close()


def test_vllm_policy_follows_use_vllm(tokenizer: Any) -> None:
    assert vllm_policy(SimpleNamespace(args=SimpleNamespace(use_vllm=False)), tokenizer, context_window=None) is None
    engine = make(tokenizer)
    engine.llm = SimpleNamespace(llm_engine=SimpleNamespace(model_config=SimpleNamespace(max_model_len=2048)))
    trainer = SimpleNamespace(args=SimpleNamespace(use_vllm=True), vllm_generation=engine, eos_token_ids=[7])
    generator = vllm_policy(trainer, tokenizer, context_window=None)
    assert generator is not None and generator.engine is engine and generator.context_window == 2048
    assert generator.eos_ids == {7, tokenizer.eos_token_id}
    generator.close()
    assert vllm_policy(trainer, tokenizer, context_window=512).context_window == 512  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="no vllm_generation"):
        vllm_policy(SimpleNamespace(args=SimpleNamespace(use_vllm=True)), tokenizer, context_window=None)


def policy_runs(mask: tuple[int, ...]) -> list[tuple[int, int]]:
    """The half-open spans of consecutive 1s."""
    runs, start = [], None
    for position, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = position
        elif not bit and start is not None:
            runs.append((start, position))
            start = None
    return runs


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_a_veri_r1_episode_batch_runs_end_to_end_on_the_engines_tokens(tokenizer: Any, mode: str) -> None:
    """The TRL rollout's path: ``GraphExecutor.episode`` with the generator as the policy, a batch at once."""
    script = replies(
        tokenizer,
        f"{PLAN}\n<search>Hog Island Light</search>",
        "<think>It is in Virginia. When was it first lit?</think>\n<search>Hog Island Light first lit</search>",
        ANSWER_REFUTE,
    )
    engine = make(tokenizer, policy=script, mode=mode)
    generator = TrlVllmGenerator(engine, tokenizer, batch_wait_s=0.05)
    search = DictSearch()
    config = RolloutConfig(agent="veri-r1", agent_config={"max_searches": 2})
    executor = GraphExecutor(config, resources={"search": search})
    gold = {"label": "REFUTES", "evidence": ["Hog Island Light_sentence_0", "Hog Island Light_sentence_3"]}
    label = json.dumps({"input": {"claim": CLAIM}, "gold": gold})
    sampling = SamplingParams(temperature=0.9, top_p=0.8, seed=None)  # the trainer's: the engine keeps its own

    async def batch() -> list[Any]:
        return await asyncio.gather(
            *(executor.episode(label, generator, max_length=4096, sampling=sampling) for _ in range(4))
        )

    episodes = asyncio.run(batch())
    generator.close()
    # Three rounds of turns, each one engine call carrying the turn of every episode.
    assert [len(c.prompts) for c in engine.calls] == [4, 4, 4] and len(search.queries) == 8
    assert all(c.sampling["temperature"] == 0.7 and c.sampling["top_p"] == 0.95 for c in engine.calls)
    returned = {tuple(p): ids for c in engine.calls for p, ids in zip(c.prompts, c.completions, strict=True)}
    for episode in episodes:
        tokens, logprobs = list(episode.token_ids), list(episode.logprobs)
        runs = policy_runs(episode.policy_mask)
        assert len(runs) == 3 and episode.outcome > 0 and not episode.truncated
        for start, end in runs:
            assert tokens[start:end] == returned[tuple(tokens[:start])]  # the engine's ids, untouched
            assert logprobs[start:end] == [logprob_of(i, t) for i, t in enumerate(tokens[start:end])]
