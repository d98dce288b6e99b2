"""The TRL engine's rollout: the agent's graph on the live policy, as ``GRPOTrainer``'s ``rollout_func``.

Each prompt of a generation batch is one episode run by :class:`~evigraph.training.executor.GraphExecutor` --
the very path OpenRLHF's rollout actors take (strict tokens, the sequence budget, the configured reward, the
per-step lists) -- with :class:`PolicyEngine` in the place of the vLLM actor: the model the trainer is updating,
generating through :class:`~evigraph.generators.transformers.TransformersGenerator` on its current weights (the
samples of a batch run concurrently and share ``generate`` calls). Each finished episode (OpenRLHF's response
dict) becomes TRL's fields by :func:`trl_sample`: the tokens before the first policy turn are the prompt, the rest
is the completion, ``env_mask`` is 0 on its environment tokens (observations, notes: no loss, no length), and
the per-token advantages of the configured mode are computed from the same :class:`~.advantages.Rollout`
records OpenRLHF's patch builds (:mod:`.advantage_patch`), aligned with the completion tokens.

The dataset's ``prompt`` column holds each record's label JSON (``{"input": ..., "gold": ...}``), since TRL
hands ``rollout_func`` the prompts only; the graph renders the real prompt itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError
from evigraph.generators.transformers import TransformersGenerator
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.training.advantage_patch import NEGATIVE_KEY
from evigraph.training.advantages import AdvantageConfig, Rollout, advantages
from evigraph.training.executor import GraphExecutor
from evigraph.training.samples import STEP_INDEX_KEY, STEP_TYPE_PREFIX, STEP_VALUE_KEY, steps_from_lists, typed_values
from evigraph.training.scripted_engine import ScriptedSamplingParams

__all__ = ("OUTCOME_KEY", "GraphRollout", "PolicyEngine", "TrlSample", "per_token_advantages", "trl_sample")

OUTCOME_KEY = "evigraph_outcome"
"""Extra key of the rollout output: each sample's outcome reward (what the trainer's reward function returns)."""
LOGS_KEY = "evigraph_logs"
"""Extra key: each sample's scalar logs (reward components, counters), logged per step as ``rewards/<name>``."""


class PolicyEngine:
    """A :class:`TransformersGenerator` behind OpenRLHF's rollout-actor call (``generate(prompt_token_ids,
    sampling_params)`` → one vLLM-like ``RequestOutput``), so ``GraphExecutor.execute`` runs unchanged."""

    def __init__(self, generator: TransformersGenerator) -> None:
        self.generator = generator

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        params = SamplingParams(
            max_new_tokens=sampling_params.max_tokens,
            temperature=sampling_params.temperature,
            top_p=sampling_params.top_p,
            seed=sampling_params.seed,
            stop=tuple(sampling_params.stop or ()),
            logprobs=sampling_params.logprobs is not None,
        )
        return SimpleNamespace(outputs=[vllm_output(await self.generator.continue_ids(prompt_token_ids, params))])


def vllm_output(continuation: Continuation) -> SimpleNamespace:
    """A continuation as vLLM's ``CompletionOutput`` (what :func:`~evigraph.generators.vllm.to_continuation`
    reads back): EOS is ``finish_reason="stop"`` without a stop string."""
    finish = "length" if continuation.finish_reason == "length" else "stop"
    logprobs = None
    if continuation.logprobs is not None:
        pairs = zip(continuation.token_ids or (), continuation.logprobs, strict=True)
        logprobs = [{token: SimpleNamespace(logprob=value)} for token, value in pairs]
    return SimpleNamespace(
        token_ids=list(continuation.token_ids or ()),
        text=continuation.text,
        finish_reason=finish,
        stop_reason=continuation.stop_string,
        logprobs=logprobs,
    )


class TrlSample(BaseModel):
    """One episode in TRL's terms, with the advantage record of its tokens."""

    model_config = ConfigDict(frozen=True)

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    """1 on policy tokens, 0 on environment tokens of the completion."""
    outcome: float
    logs: dict[str, float]
    rollout: Rollout
    """In OpenRLHF's mask coordinates (position ``t`` scores token ``t + 1``), as :mod:`.advantage_patch` reads it."""


def trl_sample(sample: Mapping[str, Any], *, group: int) -> TrlSample:
    """An OpenRLHF response dict (:func:`~evigraph.training.samples.openrlhf_sample`) as TRL's fields.

    Example (a 2-token prompt, a policy turn, an observation, a policy turn):
        >>> s = trl_sample({"observation_tokens": [1, 2, 3, 4, 5, 6], "action_ranges": [(2, 4), (5, 6)],
        ...     "rollout_log_probs": [0, 0, -.5, -.5, 0, -.1], "reward": 1.0, "extra_logs": {"a/b": 2.0}}, group=0)
        >>> s.prompt_ids, s.completion_ids, s.env_mask, s.logprobs
        ([1, 2], [3, 4, 5, 6], [1, 1, 0, 1], [-0.5, -0.5, 0.0, -0.1])
        >>> s.rollout.action_mask, s.logs
        ((0, 1, 1, 0, 1), {'a/b': 2.0})
    """
    tokens = [int(t) for t in sample["observation_tokens"]]
    ranges = [(int(a), int(b)) for a, b in sample["action_ranges"] if b > a]
    # No policy token at all (the budget ran out first): the last token stands in, masked, so TRL's tensors hold.
    first = ranges[0][0] if ranges else len(tokens) - 1
    if first < 1:
        raise ConfigError(f"an episode of {len(tokens)} tokens has no prompt before its first policy token")
    policy = [0] * len(tokens)
    for start, end in ranges:
        policy[start:end] = [1] * (end - start)
    logprobs = [float(x) for x in sample["rollout_log_probs"]]
    extra = dict(sample.get("extra_logs") or {})
    width = len(tokens) - 1
    steps: list[tuple[int, int, float]] = []
    types: list[dict[str, float]] = []
    if STEP_INDEX_KEY in extra and STEP_VALUE_KEY in extra:
        index = _padded(extra[STEP_INDEX_KEY], width)
        steps = steps_from_lists(index, _padded(extra[STEP_VALUE_KEY], width))
        typed = {
            k[len(STEP_TYPE_PREFIX) :]: _padded(v, width) for k, v in extra.items() if k.startswith(STEP_TYPE_PREFIX)
        }
        types = typed_values(index, typed) if typed else []
    rollout = Rollout(
        group=group,
        outcome=float(sample["reward"]),
        action_mask=tuple(policy[1:]),
        steps=tuple(steps),
        step_types=tuple(types),
        negative=bool(extra.get(NEGATIVE_KEY, 0.0)),
    )
    logs = {k: float(v) for k, v in extra.items() if isinstance(v, int | float) and k != NEGATIVE_KEY}
    return TrlSample(
        prompt_ids=tokens[:first],
        completion_ids=tokens[first:],
        logprobs=logprobs[first:],
        env_mask=policy[first:],
        outcome=float(sample["reward"]),
        logs=logs,
        rollout=rollout,
    )


def _padded(values: Sequence[float], width: int) -> list[float]:
    """A per-step list to the episode's full width (OpenRLHF cuts them at ``max_length``)."""
    values = list(values)[:width]
    return values + [0.0] * (width - len(values))


def per_token_advantages(samples: Sequence[TrlSample], config: AdvantageConfig) -> list[list[float]]:
    """Each sample's advantages on its completion tokens (0 on environment tokens), for ``config``'s mode over
    the samples' groups."""
    computed = advantages([s.rollout for s in samples], config)
    # Mask position t scores token t + 1, so completion token j (sequence position first + j) sits at first + j - 1.
    return [values[len(s.prompt_ids) - 1 :] for s, values in zip(samples, computed, strict=True)]


class GraphRollout:
    """TRL's ``rollout_func``: every prompt of the batch one run of the agent's graph on the live policy.

    Args:
        executor: the agent's graph and reward (built once per run).
        max_length: the sequence budget of an episode (OpenRLHF's ``max_length``); the model's context caps it.
        num_generations: samples per prompt (consecutive in TRL's batches: one group each).
    """

    def __init__(self, executor: GraphExecutor, *, max_length: int, num_generations: int) -> None:
        self.executor = executor
        self.max_length = max_length
        self.num_generations = num_generations
        self.last: list[TrlSample] = []
        """The samples of the latest batch (the trainer's advantages read them)."""
        self._generator: TransformersGenerator | None = None

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        from trl.models.utils import unwrap_model_for_generation

        from evigraph.embed.loop import run_sync

        groups = [i // self.num_generations for i in range(len(prompts))]
        for i, group in enumerate(groups):
            if prompts[i] != prompts[group * self.num_generations]:
                raise ConfigError(f"rollout batch row {i}: its prompt differs from its group's first")
        args = trainer.args
        sampling = _sampling(args)
        checkpointing = args.gradient_checkpointing_kwargs
        with unwrap_model_for_generation(
            trainer.model_wrapped, trainer.accelerator, gradient_checkpointing_kwargs=checkpointing
        ) as model:
            generator = self._policy(model, trainer.processing_class)
            budget = min(self.max_length, generator.context_window or self.max_length)
            engine = PolicyEngine(generator)

            async def episodes() -> list[dict[str, Any]]:
                return await asyncio.gather(
                    *(
                        self.executor.execute(str(p), str(p), sampling, budget, generator.tokenizer, engine)
                        for p in prompts
                    )
                )

            responses = run_sync(episodes)
        self.last = [trl_sample(r, group=g) for r, g in zip(responses, groups, strict=True)]
        return {
            "prompt_ids": [s.prompt_ids for s in self.last],
            "completion_ids": [s.completion_ids for s in self.last],
            "logprobs": [s.logprobs for s in self.last],
            "env_mask": [s.env_mask for s in self.last],
            OUTCOME_KEY: [s.outcome for s in self.last],
            LOGS_KEY: [s.logs for s in self.last],
        }

    def _policy(self, model: Any, tokenizer: Any) -> TransformersGenerator:
        """One generator per live model (its stop-string criteria are cached across batches)."""
        if self._generator is None or self._generator.model is not model:
            self.close()
            self._generator = TransformersGenerator.from_model(model, tokenizer, max_batch_size=64)
        return self._generator

    def close(self) -> None:
        if self._generator is not None:
            self._generator.close()
            self._generator = None


def _sampling(args: Any) -> ScriptedSamplingParams:
    """The trainer's sampling settings as the vLLM-style params the executor passes on (seed ``None``: every
    sample of a group draws its own tokens)."""
    if (args.top_k or 0) > 0 or args.min_p or (args.repetition_penalty or 1.0) != 1.0:
        raise ConfigError("the TRL engine samples with temperature and top_p only: leave top_k, min_p and "
                          "repetition_penalty at their defaults")  # fmt: skip
    return ScriptedSamplingParams(temperature=args.temperature, top_p=args.top_p, seed=None)
