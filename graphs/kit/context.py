"""What a caller may change per run of a compiled graph, and the policy call every graph makes.

A graph is compiled once with its tools and options; a trainer or a host agent passes the rest per run as
LangGraph's run context::

    graph = build_veri_r1_graph(None, search)             # no generator bound at compile time
    await graph.ainvoke(inputs, context=RunContext(generator=engine, strict_tokens=True, max_sequence_tokens=4096))

- ``generator``: the policy of this run (OpenRLHF hands its engine to each ``execute`` call), else the one the
  graph was built with;
- ``sampling``: temperature / top-p / seed of this run (stop strings and per-turn caps stay the protocol's);
- ``max_sequence_tokens``: a whole-sequence budget (OpenRLHF's ``max_length``); the backend's own context
  window applies too. Runs that reach it end with the agent's forced final turn (:func:`evigraph.tokens.plan_turn`);
- ``strict_tokens``: training mode -- any fallback to text or re-encoding of policy text raises
  :class:`~evigraph.errors.TokenContractError` (:mod:`evigraph.tokens`).

A graph embedded in a host graph with a context of its own ignores that context and uses its defaults.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from langgraph.errors import GraphBubbleUp
from typing_extensions import TypedDict

from evigraph.errors import ConfigError, TokenContractError
from evigraph.generators.base import Generator
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.text_budget import count_tokens
from evigraph.tokens import Decode, plan_turn, token_decoder, token_format
from evigraph.trajectory import Segment, Timing, TrajectoryError

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from evigraph.generators.chat_format import ChatFormat

__all__ = ("RunContext", "RunScope", "TurnResult", "TurnsState", "timing_of")

_SAMPLING_FIELDS = ("temperature", "top_p", "seed")


@dataclass(frozen=True, slots=True)
class RunContext:
    """Per-run settings of any evigraph graph (see the module docstring)."""

    generator: Generator | None = None
    sampling: SamplingParams | None = None
    max_sequence_tokens: int | None = None
    strict_tokens: bool = False

    def __post_init__(self) -> None:
        if self.max_sequence_tokens is not None and self.max_sequence_tokens < 1:
            raise ConfigError(f"max_sequence_tokens must be >= 1, got {self.max_sequence_tokens}")


class TurnsState(TypedDict, total=False):
    """State keys of a graph that runs policy turns itself (mix into the graph's state schema); a
    :class:`TurnResult` updates them (:meth:`TurnResult.update`) and :func:`timing_of` reads them."""

    transcript: tuple[Segment, ...]
    error: TrajectoryError | None
    started_at: float
    generate_s: float
    generated_tokens: int


class TurnResult(NamedTuple):
    """One policy call: the continuation, or the failure to record on the trajectory; and its duration."""

    continuation: Continuation | None
    error: TrajectoryError | None
    seconds: float

    def update(self, state: TurnsState) -> dict[str, Any]:
        """The state update after this turn: the turn appended to the transcript (or the failure recorded), the
        time and the tokens it took added to the run's."""
        spent = state.get("generate_s", 0.0) + self.seconds
        if self.continuation is None:
            return {"error": self.error, "generate_s": spent}
        return {
            "transcript": (*state.get("transcript", ()), self.continuation.to_segment()),
            "generate_s": spent,
            "generated_tokens": state.get("generated_tokens", 0) + self.continuation.generated_tokens,
        }


def timing_of(state: TurnsState) -> Timing:
    """The run's :class:`~evigraph.trajectory.Timing` from its :class:`TurnsState` (``started_at`` set at the
    first node)."""
    started = state["started_at"]
    return Timing(
        started_at=started,
        wall_s=time.time() - started,
        generate_s=state.get("generate_s", 0.0),
        generated_tokens=state.get("generated_tokens", 0),
    )


@dataclass(frozen=True, slots=True)
class RunScope:
    """The settings in force for one run: the graph's defaults overlaid with the run's :class:`RunContext`."""

    generator: Generator
    chat_format: ChatFormat | None
    strict: bool
    limit: int | None
    """The whole-sequence budget: the smaller of the run's ``max_sequence_tokens`` and the context window."""
    sampling: SamplingParams | None

    @classmethod
    def resolve(cls, runtime: Runtime[Any] | None, default: Generator | None) -> RunScope:
        """The scope of the running graph (``runtime`` is the node's injected LangGraph runtime).

        Raises:
            ConfigError: no generator at all (none at compile time and none in the run's context).
            TokenContractError: a strict run on a text backend.
        """
        context = getattr(runtime, "context", None)
        if not isinstance(context, RunContext):
            context = _DEFAULT_CONTEXT
        generator = context.generator or default
        if generator is None:
            raise ConfigError("no generator: build the graph with one, or pass RunContext(generator=...) per run")
        limits = [n for n in (context.max_sequence_tokens, generator.context_window) if n is not None]
        return cls(
            generator=generator,
            chat_format=token_format(generator, strict=context.strict_tokens),
            strict=context.strict_tokens,
            limit=min(limits) if limits else None,
            sampling=context.sampling,
        )

    @property
    def decode(self) -> Decode | None:
        """ids → text for this run's generated ids (:func:`evigraph.tokens.token_decoder`): what a label's
        confidence is read with, also on a text backend that returns ids (vLLM behind its OpenAI API)."""
        return self.chat_format.decode if self.chat_format is not None else token_decoder(self.generator)

    def guided(self, choice: bool | None, *, guide_kind: str | None = None) -> bool:
        """Weak-model mode for this run: the agent's ``choice``, or with ``None`` the generator's default. With
        ``guide_kind`` the mode also needs a guide of that kind, so it holds only where the backend supports one
        and never in a strict run (the reply a trainer scores must be the policy's own)."""
        wanted = self.generator.constrained if choice is None else choice
        if guide_kind is None:
            return wanted
        return wanted and not self.strict and guide_kind in getattr(self.generator, "supported_guides", ())

    def params(self, template: SamplingParams, **protocol: Any) -> SamplingParams:
        """``template`` (the graph's stops and caps) with this run's sampling and the turn's ``protocol`` fields."""
        update = dict(protocol)
        if self.sampling is not None:
            update.update({name: getattr(self.sampling, name) for name in _SAMPLING_FIELDS})
        return template.model_copy(update=update) if update else template

    async def generate(self, transcript: Sequence[Segment], params: SamplingParams) -> TurnResult:
        """One policy turn. A backend failure becomes a :class:`TrajectoryError` (a failed rollout is data); a
        strict run whose backend returned no token ids raises."""
        started = time.perf_counter()
        try:
            continuation = await self.generator.continue_transcript(transcript, params)
        except GraphBubbleUp:
            raise  # an interrupt (human in the loop) or a command is LangGraph's control flow, not a failure
        except Exception as error:
            failure = TrajectoryError(type=type(error).__name__, message=str(error), where="generate")
            return TurnResult(None, failure, time.perf_counter() - started)
        if self.strict and continuation.token_ids is None:
            raise TokenContractError(f"{self.generator.name} returned a turn without token ids in a strict run")
        return TurnResult(continuation, None, time.perf_counter() - started)

    async def single_turn(self, transcript: Sequence[Segment], params: SamplingParams) -> TurnResult:
        """One policy turn that must fit the run's budget: capped at ``params.max_new_tokens`` or at what the
        budget leaves after ``transcript`` (:func:`evigraph.tokens.plan_turn` with no observation to follow).
        A transcript that already fills the budget is a ``BudgetExhausted`` failure, not a call."""
        if self.limit is not None:
            cap = params.max_new_tokens
            plan = plan_turn(
                used=self.prompt_tokens(transcript), turn_cap=cap, final_cap=cap, max_observation=0, limit=self.limit
            )
            if plan is None:
                message = f"the prompt alone fills the sequence budget of {self.limit} tokens"
                return TurnResult(None, TrajectoryError(type="BudgetExhausted", message=message, where="budget"), 0.0)
            if plan.max_new_tokens != cap:
                params = params.model_copy(update={"max_new_tokens": plan.max_new_tokens})
        return await self.generate(transcript, params)

    def prompt_tokens(self, prompt: Sequence[Segment]) -> int:
        """Tokens of the prompt messages (generation prompt included); see :meth:`count`."""
        if self.chat_format is None:
            return sum(count_tokens(s.text) for s in prompt)
        return len(self.chat_format.prompt_ids(prompt))

    def count(self, segment: Segment, previous: Segment) -> int:
        """Tokens a policy or environment ``segment`` adds after ``previous``: exact on token backends,
        whitespace pieces on text backends (an over-count for most tokenizers, so on the safe side)."""
        if self.chat_format is None:
            return count_tokens(segment.text)
        return len(self.chat_format.segment_ids(segment, previous, strict=self.strict))


_DEFAULT_CONTEXT = RunContext()
