"""The TRL engine's rollout: the agent's graph on the live policy, as ``GRPOTrainer``'s ``rollout_func``.

Each prompt of a generation batch is one episode run by :meth:`~evigraph.training.executor.GraphExecutor.episode`
-- the path OpenRLHF's rollout actors take too (strict tokens, the sequence budget, the configured reward, the
steps with their token spans) -- on the model the trainer is updating: a
:class:`~evigraph.generators.transformers.TransformersGenerator` over its current weights (the samples of a batch
run concurrently and share ``generate`` calls), sampling with the trainer's ``temperature`` and ``top_p`` and a
seed per sample (:func:`episode_seed`: the same command draws the same samples) as
:class:`~evigraph.graphs.kit.context.RunContext`'s ``sampling`` (stop strings and turn caps stay the graph's).
:meth:`GraphRollout._policy` picks that generator; it is the one place to plug in another.

Each :class:`~evigraph.training.episode.Episode` becomes TRL's fields once, by :func:`trl_sample`: the tokens
before the first policy token are the prompt, the rest is the completion, ``env_mask`` is 0 on its environment
tokens (observations, notes: no loss, no length). The advantage record (:class:`~.advantages.Rollout`) is built
in **completion coordinates**: position ``j`` of its mask and step spans is completion token ``j``, the token
TRL's loss weighs at column ``j`` (``completion_ids[j]``, predicted from the position before it). So the
advantage of completion token ``j`` is entry ``j`` of :func:`per_token_advantages`, with no shift.

The dataset's ``prompt`` column holds each record's label JSON (``{"input": ..., "gold": ...}``), since TRL
hands ``rollout_func`` the prompts only; the graph renders the real prompt itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError
from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.training.advantages import AdvantageConfig, Rollout, advantages
from evigraph.training.episode import Episode
from evigraph.training.executor import GraphExecutor

__all__ = ("LOGS_KEY", "OUTCOME_KEY", "GraphRollout", "TrlSample", "episode_seed", "per_token_advantages", "trl_sample")

OUTCOME_KEY = "evigraph_outcome"
"""Extra key of the rollout output: each sample's outcome reward (what the trainer's reward function returns)."""
LOGS_KEY = "evigraph_logs"
"""Extra key: each sample's scalar logs (reward components, counters), logged per step as ``rewards/<name>``."""


class TrlSample(BaseModel):
    """One episode in TRL's terms, with the advantage record of its completion tokens."""

    model_config = ConfigDict(frozen=True)

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    """1 on policy tokens, 0 on environment tokens of the completion."""
    outcome: float
    logs: dict[str, float]
    rollout: Rollout
    """In completion coordinates: mask position ``j`` and step spans index ``completion_ids[j]``."""


def trl_sample(episode: Episode, *, group: int, end_id: int | None = None) -> TrlSample:
    """An episode as TRL's fields (see the module docstring).

    TRL reads a completion whose last token is not an end-of-sequence id as cut off by its length cap: it logs it
    as clipped and, with ``mask_truncated_completions``, drops it from the loss. A graph's run ends at a stop
    string, not at EOS, so with ``end_id`` a run that was not truncated gets that id appended as an environment
    token (no loss, advantage 0): TRL then tells finished runs from truncated ones by the episode's own flag.

    Example (a 2-token prompt, a policy turn with one step, an observation token, a policy turn):
        >>> from evigraph.training.episode import EpisodeStep
        >>> step = EpisodeStep(index=0, kind="search", span=(2, 4), values={"quote": 0.5, "gap": -1.0})
        >>> s = trl_sample(Episode(id="t", token_ids=(1, 2, 3, 4, 5, 6), policy_mask=(0, 0, 1, 1, 0, 1),
        ...     logprobs=(0, 0, -.5, -.5, 0, -.1), outcome=1.0, steps=(step,), logs={"a/b": 2.0}), group=0)
        >>> s.prompt_ids, s.completion_ids, s.env_mask, s.logprobs
        ([1, 2], [3, 4, 5, 6], [1, 1, 0, 1], [-0.5, -0.5, 0.0, -0.1])
        >>> s.rollout.action_mask, s.rollout.steps, s.logs
        ((1, 1, 0, 1), ((0, 2, -0.5),), {'a/b': 2.0})
    """
    tokens, policy = list(episode.token_ids), list(episode.policy_mask)
    # No policy token at all (the budget ran out first): the last token stands in, masked, so TRL's tensors hold.
    first = min(episode.prompt_length, len(tokens) - 1)
    if first < 1:
        raise ConfigError(f"an episode of {len(tokens)} tokens has no prompt before its first policy token")
    steps = [step for step in episode.steps if step.span[1] > first]
    logprobs = list(episode.logprobs)
    if end_id is not None and not episode.truncated and tokens[-1] != end_id:
        tokens, policy, logprobs = [*tokens, end_id], [*policy, 0], [*logprobs, 0.0]
    rollout = Rollout(
        group=group,
        outcome=episode.outcome,
        action_mask=tuple(policy[first:]),
        steps=tuple((max(s.span[0] - first, 0), s.span[1] - first, s.value) for s in steps),
        step_types=tuple(dict(s.values) for s in steps),
        negative=bool(episode.negative),
    )
    return TrlSample(
        prompt_ids=tokens[:first],
        completion_ids=tokens[first:],
        logprobs=logprobs[first:],
        env_mask=policy[first:],
        outcome=episode.outcome,
        logs=dict(episode.logs),
        rollout=rollout,
    )


def per_token_advantages(samples: Sequence[TrlSample], config: AdvantageConfig) -> list[list[float]]:
    """Each sample's advantage per completion token (entry ``j``: token ``completion_ids[j]``; 0 on environment
    tokens), for ``config``'s mode over the samples' groups."""
    return advantages([s.rollout for s in samples], config)


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
        self._generator: Any = None
        self._calls = (-1, 0)
        """(global step, rollout calls already made at it): a step can generate more than once."""

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        from trl.models.utils import unwrap_model_for_generation

        from evigraph.event_loop import run_sync

        groups = [i // self.num_generations for i in range(len(prompts))]
        for i, group in enumerate(groups):
            if prompts[i] != prompts[group * self.num_generations]:
                raise ConfigError(f"rollout batch row {i}: its prompt differs from its group's first")
        sampling = _sampling(trainer.args)
        step = trainer.state.global_step
        self._calls = (step, self._calls[1] + 1 if self._calls[0] == step else 0)
        # Without vLLM every sample gets its own seed (see ``episode_seed``); TRL's vLLM engine seeds its own.
        seeds = [None if getattr(trainer.args, "use_vllm", False) else
                 episode_seed(trainer.args.seed, step, self._calls[1], i) for i in range(len(prompts))]  # fmt: skip

        async def episodes(generator: Generator) -> list[Episode]:
            budget = min(self.max_length, generator.context_window or self.max_length)
            return await asyncio.gather(
                *(
                    self.executor.episode(
                        str(p), generator, max_length=budget, sampling=sampling.model_copy(update={"seed": seed})
                    )
                    for p, seed in zip(prompts, seeds, strict=True)
                )
            )

        if getattr(trainer.args, "use_vllm", False):  # TRL's engine; TRL synced its weights before this call
            generator = self._policy(None, trainer)
            finished = run_sync(lambda: episodes(generator))
        else:
            checkpointing = trainer.args.gradient_checkpointing_kwargs
            with unwrap_model_for_generation(
                trainer.model_wrapped, trainer.accelerator, gradient_checkpointing_kwargs=checkpointing
            ) as model:
                generator = self._policy(model, trainer)
                finished = run_sync(lambda: episodes(generator))
        end_ids = getattr(trainer, "eos_token_ids", None) or [trainer.processing_class.eos_token_id]
        self.last = [trl_sample(e, group=g, end_id=end_ids[0]) for e, g in zip(finished, groups, strict=True)]
        return {
            "prompt_ids": [s.prompt_ids for s in self.last],
            "completion_ids": [s.completion_ids for s in self.last],
            "logprobs": [s.logprobs for s in self.last],
            "env_mask": [s.env_mask for s in self.last],
            OUTCOME_KEY: [s.outcome for s in self.last],
            LOGS_KEY: [s.logs for s in self.last],
        }

    def _policy(self, model: Any, trainer: Any) -> Generator:
        """The generator the graph's policy turns run on: TRL's own vLLM engine when ``trainer.args.use_vllm``
        (:mod:`.trl_vllm`; ``model`` unused), else one :class:`TransformersGenerator` per live model (its
        stop-string criteria are cached across batches)."""
        from evigraph.generators.transformers import TransformersGenerator

        if getattr(trainer.args, "use_vllm", False):
            from evigraph.training.trl_vllm import TrlVllmGenerator, vllm_policy

            if not isinstance(self._generator, TrlVllmGenerator):
                self.close()
                self._generator = vllm_policy(trainer, trainer.processing_class)
            return self._generator
        if self._generator is None or getattr(self._generator, "model", None) is not model:
            self.close()
            self._generator = TransformersGenerator.from_model(model, trainer.processing_class, max_batch_size=64)
        return self._generator

    def close(self) -> None:
        close = getattr(self._generator, "close", None)
        if close is not None:
            close()
        self._generator = None


def episode_seed(seed: int, step: int, call: int, row: int) -> int:
    """The sampling seed of one rollout sample: the run's ``seed``, the optimiser step, the rollout call within it
    and the sample's row. Each sample draws its own tokens (a group's samples differ), and the same command draws the
    same tokens again however the concurrent episodes happen to share ``generate`` calls (the transformers backend
    samples a seeded row from its own noise, so batching cannot change it)."""
    value = 0
    for part in (seed, step, call, row):
        value = (value * 1_000_003 + part) % (1 << 63)
    return value


def _sampling(args: Any) -> SamplingParams:
    """The trainer's sampling settings for every policy turn (the seed is set per sample, :func:`episode_seed`);
    the graph's protocol fields (stops, turn caps) stay its own."""
    if not getattr(args, "use_vllm", False) and (
        (args.top_k or 0) > 0 or args.min_p or (args.repetition_penalty or 1.0) != 1.0
    ):
        raise ConfigError("without vLLM the TRL engine samples with temperature and top_p only: leave top_k, min_p and "
                          "repetition_penalty at their defaults")  # fmt: skip
    return SamplingParams(temperature=args.temperature, top_p=args.top_p, seed=None)
