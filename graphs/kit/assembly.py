"""The generic end of every graph run: exact token ids on the segments, token spans on the steps, the reward.

A graph's ``finish`` node decides what the run concluded (the agent's own logic) and hands the transcript,
its steps and that output to :func:`assemble_trajectory`, which does the rest the same way for every agent.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from evigraph.errors import ConfigError, TokenContractError
from evigraph.graphs.kit.context import RunScope
from evigraph.rewards import AgentReward
from evigraph.tokens import TokenOffsets
from evigraph.trajectory import RewardComponent, Segment, Step, Timing, Trajectory, TrajectoryError, segment_spans

__all__ = (
    "answer_step",
    "assemble_trajectory",
    "exact_segments",
    "score_trajectory",
    "with_token_spans",
)

logger = logging.getLogger(__name__)


def answer_step(transcript: Sequence[Segment]) -> list[Step]:
    """A one-turn agent's steps: its last policy turn as one ``answer`` step over the whole turn (the token span
    an outcome or process reward sits on); none when there is no turn."""
    indices = [i for i, s in enumerate(transcript) if s.origin == "policy"]
    if not indices:
        return []
    text = transcript[indices[-1]].text
    return [Step(index=0, kind="answer", text=text, segment_index=indices[-1], char_span=(0, len(text)))]


def exact_segments(transcript: Sequence[Segment], scope: RunScope) -> list[Segment]:
    """The transcript with every segment's exact token ids, on token backends.

    Text backends keep the text-only transcript. On a token backend, a transcript the chat template cannot
    render stays text-only with a warning -- or, in a strict run, raises.

    Raises:
        TokenContractError: a strict run whose transcript cannot be rendered exactly.
    """
    if scope.chat_format is None:
        return list(transcript)
    try:
        return scope.chat_format.segment_token_ids(transcript, strict=scope.strict)
    except ConfigError as error:
        if scope.strict:
            raise TokenContractError(f"the transcript cannot be rendered exactly: {error}") from error
        logger.warning("trajectory stored without token ids: %s", error)
        return list(transcript)


def with_token_spans(steps: Sequence[Step], segments: Sequence[Segment], scope: RunScope) -> list[Step]:
    """Fill each step's ``token_span`` in whole-sequence coordinates: its segment's span, or -- for a step with
    a ``char_span`` -- the exact tokens of those characters inside the segment (:class:`~evigraph.tokens.TokenOffsets`).

    Steps stay without spans when some segment has no ids (text backends).

    Raises:
        TokenContractError: a strict run and some segment has no ids.
    """
    spans = segment_spans(segments)
    if spans is None:
        if scope.strict:
            raise TokenContractError("a strict run produced segments without token ids")
        return list(steps)
    offsets: dict[int, TokenOffsets] = {}
    filled = []
    for step in steps:
        index = step.segment_index
        if index is None or not 0 <= index < len(segments):
            filled.append(step)
            continue
        ids = segments[index].token_ids or []
        if step.char_span is None:
            first, last = 0, len(ids)
        else:
            if scope.chat_format is None:  # ids without a tokenizer cannot be mapped to characters
                filled.append(step)
                continue
            if index not in offsets:
                offsets[index] = TokenOffsets(ids, scope.chat_format.decode)
            first, last = offsets[index].token_span(*step.char_span)
        start = spans[index][0]
        filled.append(step.model_copy(update={"token_span": (start + first, start + last)}))
    return filled


def assemble_trajectory(
    *,
    agent: str,
    run_id: str,
    inputs: dict[str, Any],
    transcript: Sequence[Segment],
    steps: Sequence[Step],
    output: BaseModel,
    scope: RunScope,
    timing: Timing,
    error: TrajectoryError | None = None,
    reward: AgentReward | None = None,
    gold: Mapping[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> Trajectory:
    """The run's :class:`Trajectory`: exact segments, spanned steps, the output, and -- when ``gold`` is given --
    ``reward(trajectory, gold)`` stored as its components with the reward's declared scalar.

    Raises:
        TokenContractError: a strict run that cannot keep exact ids (see :func:`exact_segments`).
        ConfigError: ``gold`` does not validate against ``reward.gold_schema``.
    """
    segments = exact_segments(transcript, scope)
    trajectory = Trajectory(
        id=run_id,
        agent=agent,
        input=inputs,
        segments=segments,
        steps=with_token_spans(steps, segments, scope),
        output=output.model_dump(),
        metadata={"generator": scope.generator.name, **(metadata or {})},
        timing=timing,
        error=error,
    )
    if gold and reward is not None:
        score_trajectory(trajectory, reward, gold)
    return trajectory


def score_trajectory(trajectory: Trajectory, reward: AgentReward, gold: Mapping[str, Any]) -> None:
    """Store ``reward(trajectory, gold)`` on ``trajectory``: its components and scalar, and a process reward's
    per-step values on the steps they belong to (``Step.rewards``).

    Raises:
        ConfigError: ``gold`` does not validate against ``reward.gold_schema``.
    """
    try:
        target = reward.gold_schema.model_validate(gold)
    except ValidationError as invalid:
        raise ConfigError(f"the run's gold answer does not fit {reward.__name__}: {invalid}", source="gold") from None
    rewards = reward(trajectory, target)
    trajectory.rewards = list(rewards.components)
    trajectory.reward_scalar = rewards.scalar
    per_step = {s.index: s.values for s in rewards.steps}
    for step in trajectory.steps:
        if step.index in per_step:
            step.rewards = [*step.rewards, *(RewardComponent(type=k, value=v) for k, v in per_step[step.index].items())]
