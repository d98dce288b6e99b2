"""One training episode = one run of the agent's own compiled graph (the rollout *is* the graph).

:meth:`GraphExecutor.episode` runs the graph on any token-level generator in strict token mode, with the run's
sequence budget, scores it with the configured reward and returns one engine-neutral
:class:`~evigraph.training.episode.Episode`; each engine converts that once. OpenRLHF constructs the agent file's
``AgentExecutor`` with no arguments inside every vLLM rollout actor and calls ``execute`` once per sample, the
samples of a prompt concurrently on one event loop: :meth:`GraphExecutor.execute` binds an
:class:`~.engine.EngineGenerator` to the actor's engine, runs :meth:`~GraphExecutor.episode` and returns
OpenRLHF's response dict (:func:`~.samples.openrlhf_sample`). The TRL engine calls :meth:`~GraphExecutor.episode`
with the live model (:mod:`.trl_rollout`). The executor is built once per process from a :class:`RolloutConfig`
(on OpenRLHF read from the JSON file :data:`CONFIG_ENV` names, which ``evigraph train`` puts into Ray's
``runtime_env``) and compiles the graph once. On OpenRLHF retrieval goes to one ``evigraph corpus serve`` process
through :class:`~evigraph.tools.remote_search.RemoteSearch` (no JVM in any rollout actor: ``retriever_url``); a
single-process engine searches a corpus in process (``corpus``).

The label is the JSON string the data converters write: ``{"input": {...graph input...}, "gold": {...}}``.
The sample's reward is the configured reward of the agent (its ``scalar``, or the ``outcome`` component); the
per-step values of a process reward become the episode's steps (exact token spans, a value per type). A reward
that defines ``is_negative(gold)`` (RLSeek: no gold span) marks each episode's class for CAPO.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evigraph.errors import ConfigError
from evigraph.generators.base import BaseGenerator, Generator
from evigraph.generators.chat_format import ChatFormat
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.graphs.kit.context import RunContext
from evigraph.rewards import AgentReward, Rewards
from evigraph.training.engine import EngineGenerator
from evigraph.training.episode import Episode, EpisodeStep
from evigraph.training.reward_mix import RewardMix, build_mix
from evigraph.training.samples import openrlhf_sample
from evigraph.trajectory import Segment, Trajectory

__all__ = ("CONFIG_ENV", "GraphExecutor", "RolloutConfig", "load_rollout_config", "record_provenance")

_StepValues = tuple[int, tuple[int, int], dict[str, float]]
"""A rewarded step: its index, its token span (sequence coordinates) and its value per type."""

CONFIG_ENV = "EVIGRAPH_ROLLOUT_CONFIG"
"""The environment variable holding the path of the rollout config inside the rollout actors."""


class RolloutConfig(BaseModel):
    """What every rollout actor needs to run the agent (written by ``evigraph train``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    """The registered agent whose graph is the rollout."""
    agent_config: dict[str, Any] = Field(default_factory=dict)
    """Its config (validated by the agent's config model)."""
    reward: str | None = None
    """Which of the agent's rewards (default: its first)."""
    reward_options: dict[str, Any] = Field(default_factory=dict)
    """Options of a configurable reward (StepGap's preset and λ)."""
    outcome: str | None = None
    """The reward component that is the sample's reward (default: the reward's scalar). StepGap's dense mode
    takes ``em`` here and adds the step brackets itself."""
    step_value: str | None = None
    """The per-step value the trainer's dense modes read (e.g. StepGap's ``bracket``, RLSeek's ``quote``);
    ``None``: no per-step lists."""
    retriever_url: str | None = None
    """The retrieval server for agents that search (``evigraph corpus serve``): remote search."""
    corpus: str | None = None
    """A corpus name or directory the executor searches in process (one-process engines); never with
    ``retriever_url``."""
    retrieval: str | None = None
    """How the run's corpus is searched: ``bm25`` (``None``), ``dense`` or ``hybrid``
    (:data:`~evigraph.tools.search.RETRIEVALS`). The executor applies it to ``corpus``; beside ``retriever_url``
    it records what the served corpus was started with (``evigraph corpus serve --retrieval``, the server's
    own choice), so one rollout config serves both engines of ``evigraph train --corpus``."""
    judge: str | None = None
    """A frozen judge for agents whose graph grades its own steps (StepGap): a model spec such as
    ``openai:MODEL@http://127.0.0.1:8001/v1``. The policy being trained never grades itself."""
    nli: str | None = None
    """An NLI checkpoint directory for agents with the ``nli`` resource (default: the judge's fallback)."""
    mix: RewardMix | None = None
    """Checker-based process rewards mixed in (:mod:`evigraph.training.reward_mix`)."""
    run_dir: str | None = None
    """The training run's folder: each rollout actor records there which checker versions scored its samples."""

    @model_validator(mode="after")
    def _one_search(self) -> RolloutConfig:
        if self.corpus and self.retriever_url:
            raise ValueError("give corpus (search in process) or retriever_url (a server), not both")
        from evigraph.tools.search import RETRIEVALS

        if self.retrieval is not None and self.retrieval not in RETRIEVALS:
            raise ValueError(f"retrieval {self.retrieval!r}: expected one of {', '.join(RETRIEVALS)}")
        return self


def load_rollout_config(path: str | os.PathLike[str] | None = None) -> RolloutConfig:
    """The rollout config at ``path`` (default: the file :data:`CONFIG_ENV` names).

    Raises:
        ConfigError: no path, an unreadable file, or a config that does not validate (the message names it).
    """
    source = path if path is not None else os.environ.get(CONFIG_ENV)
    if not source:
        raise ConfigError(f"no rollout config: set {CONFIG_ENV} to the JSON file `evigraph train` wrote")
    try:
        return RolloutConfig.model_validate_json(Path(source).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"rollout config {source}: {error}") from None
    except ValidationError as error:
        raise ConfigError(f"rollout config {source}: {error}") from None


class GraphExecutor:
    """Runs one agent's graph per OpenRLHF sample (see the module docstring).

    Args:
        config: what to run.
        resources: tools to build the graph with (tests pass fakes); by default a ``search`` resource is a
            :class:`~evigraph.tools.remote_search.RemoteSearch` on ``config.retriever_url``, or a search of
            ``config.corpus`` in process (``config.retrieval``: BM25, dense or hybrid).
    """

    def __init__(self, config: RolloutConfig, *, resources: dict[str, Any] | None = None) -> None:
        from evigraph.registry import get_agent

        self.config = config
        self._formats: dict[int, ChatFormat] = {}
        agent = get_agent(config.agent).load()
        config_model = agent.require("config")
        try:
            agent_config = config_model.model_validate(config.agent_config)
        except ValidationError as error:
            raise ConfigError(f"agent_config of {config.agent}: {error}") from None
        self.reward: AgentReward = agent.reward(config.reward)
        if config.reward_options:
            configure = getattr(self.reward, "configure", None)
            if configure is None:
                raise ConfigError(f"reward {self.reward.__name__} takes no options")
            self.reward = configure(self.reward.options.model_validate(config.reward_options))  # type: ignore[attr-defined]
        self.mixed = build_mix(config.mix) if config.mix is not None and config.mix.process else None
        if self.mixed is not None and config.run_dir is not None:
            record_provenance(Path(config.run_dir), [service.provenance for *_, service in self.mixed.terms])
        builder = agent.require("graph_builder")
        tools = resources if resources is not None else self._resources(agent.spec, builder)
        try:
            self.graph = builder(None, config=agent_config, **tools)
        except ConfigError as error:
            if "search" in agent.spec.resources and tools.get("search") is None:
                raise ConfigError(
                    f"{error} (training: set corpus, or retriever_url to an `evigraph corpus serve` address)"
                ) from None
            raise

    def _resources(self, spec: Any, builder: Any) -> dict[str, Any]:
        import inspect

        resources: dict[str, Any] = {}
        if "judge" in inspect.signature(builder).parameters:
            if self.config.judge is None:
                raise ConfigError(
                    f"{spec.name} grades its own steps with a judge: give the rollout config a frozen judge "
                    "(--set judge=openai:MODEL@URL); the policy being trained must not grade itself"
                )
            from evigraph.config import GeneratorConfig
            from evigraph.generators.factory import make_generator

            resources["judge"] = make_generator(GeneratorConfig(model=self.config.judge))
        if "search" in spec.resources:
            from evigraph.tools.search import open_search

            url, corpus = self.config.retriever_url, self.config.corpus
            # A server searches the way it was started: retrieval applies to an in-process corpus only.
            retrieval = self.config.retrieval if corpus else None
            # neither: the graph decides whether its variant needs one
            resources["search"] = (
                open_search(corpus=corpus, retriever_url=url, retrieval=retrieval) if url or corpus else None
            )
        if "nli" in spec.resources:
            from evigraph.tools.nli import make_nli

            resources["nli"] = make_nli(self.config.nli) if self.config.nli else None  # None: the judge's fallback
        return resources

    async def execute(
        self,
        prompt: str,
        label: str,
        sampling_params: Any,
        max_length: int,
        hf_tokenizer: Any,
        llm_engine: Any,
        images: Any = None,
        **_: Any,
    ) -> dict[str, Any]:
        """One OpenRLHF sample: the graph's :meth:`episode` on OpenRLHF's engine (its sampling params are the
        trainer's), as OpenRLHF's response dict."""
        generator = EngineGenerator(
            llm_engine, hf_tokenizer, sampling_params, context_window=max_length, chat_format=self._format(hf_tokenizer)
        )
        episode = await self.episode(label, generator, max_length=max_length)
        return openrlhf_sample(episode, prompt=prompt, label=label, max_length=max_length, images=images)

    async def episode(
        self, label: str, generator: Generator, *, max_length: int, sampling: SamplingParams | None = None
    ) -> Episode:
        """One episode: the graph's run on the label's input with ``generator`` as the policy (strict tokens, the
        sampled tokens' logprobs on every turn, ``max_length`` tokens in all), scored by the configured reward.

        Args:
            label: the JSON label of the data converters (``{"input": ..., "gold": ...}``).
            generator: any token-level evigraph generator (OpenRLHF's engine, the live model under TRL).
            max_length: the sequence budget.
            sampling: the trainer's temperature / top-p / seed for every turn (``None``: the graph's own, or what
                the generator applies itself); stop strings and per-turn caps stay the graph's.

        Raises:
            ConfigError: a label that is not the converters' JSON.
            TokenContractError: a text backend (no exact token ids).
        """
        inputs, gold = _read_label(label)
        context = RunContext(
            generator=_WithLogprobs(generator), sampling=sampling, strict_tokens=True, max_sequence_tokens=max_length
        )
        state = await self.graph.ainvoke(inputs, context=context)
        trajectory: Trajectory = state["trajectory"]
        target = self.reward.gold_schema.model_validate(gold)
        rewards = self.reward(trajectory, target)
        logs = {f"{self.config.agent}/{k}": v for k, v in rewards.as_dict().items()}
        is_negative = getattr(self.reward, "is_negative", None)
        negative = bool(is_negative(target)) if is_negative is not None else None
        outcome = rewards.as_dict()[self.config.outcome] if self.config.outcome else rewards.value
        values = self._step_values(trajectory, rewards)
        if self.mixed is not None:
            outcome, typed, mixed_logs = await self.mixed(trajectory, rewards, outcome)
            logs.update(mixed_logs)
            values = _merge(values, trajectory, typed, [t.name for t, *_ in self.mixed.terms])
        kinds = {step.index: step.kind for step in trajectory.steps}
        steps = [
            EpisodeStep(index=index, kind=kinds.get(index, "step"), span=span, values=typed_values)
            for index, span, typed_values in values
        ]
        return Episode.of(trajectory, outcome=outcome, max_length=max_length, steps=steps, logs=logs, negative=negative)

    def _format(self, tokenizer: Any) -> ChatFormat:
        """One chat format per tokenizer for the actor's lifetime (its render and encode caches are shared)."""
        key = id(tokenizer)
        if key not in self._formats or self._formats[key].tokenizer is not tokenizer:
            self._formats[key] = ChatFormat(tokenizer)
        return self._formats[key]

    def _step_values(self, trajectory: Trajectory, rewards: Rewards) -> list[_StepValues]:
        """``(step index, token span, {step_value: value})`` of every rewarded step with a span."""
        name = self.config.step_value
        if name is None:
            return []
        spans = {s.index: s.token_span for s in trajectory.steps}
        values = []
        for step in rewards.steps:
            span = step.token_span or spans.get(step.index)
            if span is not None and name in step.values:
                values.append((step.index, tuple(span), {name: step.values[name]}))
        return values  # type: ignore[return-value]


class _WithLogprobs(BaseGenerator):
    """A training episode's policy: ``inner`` asked for the sampled tokens' logprobs on every turn, since every
    training sample carries them (TRL's importance weights, OpenRLHF's ``rollout_log_probs``)."""

    can_continue_policy = True

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.name = inner.name
        self.chat_format = inner.chat_format
        self.context_window = inner.context_window

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        return await self.inner.continue_transcript(transcript, params.model_copy(update={"logprobs": True}))


def record_provenance(run_dir: Path, checkers: list[dict[str, Any]]) -> Path:
    """Write which checkers (name, evigraph version, config hash, judge, NLI) score this actor's samples, so the
    run's rewards can be recomputed and audited: ``RUN_DIR/provenance/<host>-<pid>.json``."""
    import socket

    from evigraph.files import atomic_write

    path = run_dir / "provenance" / f"{socket.gethostname()}-{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"checkers": checkers}, indent=2) + "\n")
    return path


def _merge(
    own: list[_StepValues], trajectory: Trajectory, typed: dict[int, dict[str, float]], names: list[str]
) -> list[_StepValues]:
    """The agent's own step values and the mixed-in terms' on one list, every step carrying every type (0.0
    where a type gave it nothing), so each sample of the run has the same per-type lists."""
    by_span: dict[tuple[int, int], tuple[int, dict[str, float]]] = {
        span: (index, dict(values)) for index, span, values in own
    }
    for step in trajectory.steps:
        if step.token_span is not None and step.index in typed:
            by_span.setdefault(tuple(step.token_span), (step.index, {}))[1].update(typed[step.index])  # type: ignore[arg-type]
    every = sorted({name for _, values in by_span.values() for name in values} | set(names))
    return [
        (index, span, {name: values.get(name, 0.0) for name in every})
        for span, (index, values) in sorted(by_span.items())
    ]


def _read_label(label: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``{"input": {...}, "gold": {...}}`` from the label string."""
    try:
        record = json.loads(label)
    except (TypeError, json.JSONDecodeError) as error:
        raise ConfigError(f"the sample's label is not the JSON evigraph's converters write: {error}") from None
    if not isinstance(record, dict) or not isinstance(record.get("input"), dict):
        raise ConfigError('the sample\'s label must be {"input": {...}, "gold": {...}}')
    return record["input"], record.get("gold") or {}
