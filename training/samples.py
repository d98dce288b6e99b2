"""A finished graph run as the dict OpenRLHF's ``AgentExecutor.execute`` returns, and the per-step reward lists
it carries to the trainer (pure functions).

OpenRLHF 0.11.2 builds one training sample from ``observation_tokens`` (the whole sequence), ``action_ranges``
(the policy tokens: the loss mask), ``rollout_log_probs`` (aligned with the sequence, 0.0 off-policy),
``reward``/``scores`` (one scalar each) and ``extra_logs`` (``info`` tensors); it cuts the sequence at
``max_len`` and shifts the action mask by one (position ``t`` of the mask scores token ``t + 1``).

Per-step rewards do not fit one scalar, so they travel in ``extra_logs`` as two lists in those shifted
coordinates, of length ``min(len(sequence), max_length) - 1``: :data:`STEP_INDEX_KEY` (``k + 1`` on the tokens
of step ``k``, 0 elsewhere) and :data:`STEP_VALUE_KEY` (the step's value on its tokens). They rebuild each
step's exact token span on the trainer side (:func:`steps_from_lists`), whatever advantage mode reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evigraph.errors import TokenContractError
from evigraph.tokens import rollout_logprobs
from evigraph.trajectory import Trajectory

__all__ = (
    "STEP_INDEX_KEY",
    "STEP_TYPE_PREFIX",
    "STEP_VALUE_KEY",
    "openrlhf_sample",
    "step_lists",
    "steps_from_lists",
    "typed_values",
)

STEP_INDEX_KEY = "evigraph_step_index"
STEP_VALUE_KEY = "evigraph_step_value"
STEP_TYPE_PREFIX = "evigraph_step_value/"
"""``extra_logs`` keys of the per-type lists (``evigraph_step_value/quote``): the same layout as
:data:`STEP_VALUE_KEY`, one reward type each, so the trainer can normalise types separately."""


def step_lists(
    steps: Sequence[tuple[tuple[int, int], float]], *, sequence_length: int, max_length: int
) -> tuple[list[int], list[float]]:
    """The two per-token lists of ``steps`` (``((start, end), value)`` in sequence coordinates), shifted by one
    and cut to ``min(sequence_length, max_length) - 1`` positions like OpenRLHF's action mask.

    Example:
        >>> step_lists([((2, 4), 0.5), ((5, 6), -1.0)], sequence_length=7, max_length=100)
        ([0, 1, 1, 0, 2, 0], [0.0, 0.5, 0.5, 0.0, -1.0, 0.0])
    """
    width = max(0, min(sequence_length, max_length) - 1)
    index = [0] * width
    value = [0.0] * width
    for k, ((start, end), amount) in enumerate(steps):
        for position in range(max(start - 1, 0), min(end - 1, width)):
            index[position] = k + 1
            value[position] = amount
    return index, value


def steps_from_lists(index: Sequence[float], value: Sequence[float]) -> list[tuple[int, int, float]]:
    """The steps back from :func:`step_lists` (in mask coordinates): ``(start, end, value)`` per step number.

    Example:
        >>> steps_from_lists([0, 1, 1, 0, 2, 0], [0.0, 0.5, 0.5, 0.0, -1.0, 0.0])
        [(1, 3, 0.5), (4, 5, -1.0)]
    """
    spans: dict[int, list[int]] = {}
    for position, number in enumerate(index):
        if number:
            spans.setdefault(int(number), []).append(position)
    return [(p[0], p[-1] + 1, float(value[p[0]])) for _, p in sorted(spans.items())]


def typed_values(index: Sequence[float], lists: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    """Per step (in step-number order, as :func:`steps_from_lists`), its value of every type in ``lists``.

    Example:
        >>> typed_values([0, 1, 1, 2], {"a": [0, 0.5, 0.5, 1.0], "b": [0, -1, -1, 0]})
        [{'a': 0.5, 'b': -1.0}, {'a': 1.0, 'b': 0.0}]
    """
    firsts: dict[int, int] = {}
    for position, number in enumerate(index):
        if number and int(number) not in firsts:
            firsts[int(number)] = position
    return [{name: float(values[p]) for name, values in lists.items()} for _, p in sorted(firsts.items())]


def openrlhf_sample(
    trajectory: Trajectory,
    *,
    prompt: str,
    label: Any,
    reward: float,
    max_length: int,
    scores: float | None = None,
    step_values: Sequence[tuple[tuple[int, int], Mapping[str, float]]] = (),
    logs: Mapping[str, float] | None = None,
    images: Any = None,
) -> dict[str, Any]:
    """The ``execute`` result for one strict run.

    Args:
        trajectory: a run with exact token ids on every segment.
        prompt, label: what ``execute`` received (OpenRLHF keeps them on the experience).
        reward: the training scalar.
        max_length: the run's sequence budget (for ``truncated`` and the per-step lists).
        scores: the outcome for filtering and pass@k (default: ``reward``).
        step_values: ``((start, end), {type: value})`` per rewarded step in sequence coordinates; when given,
            the index list, the total list and one list per type join ``extra_logs``.
        logs: scalar logs (reward components, counters); keep the key set the same for every sample.
        images: passed through.

    Raises:
        TokenContractError: a segment without token ids (not a strict run).
    """
    tokens = trajectory.token_ids()
    ranges = trajectory.action_ranges()
    if tokens is None or ranges is None:
        raise TokenContractError(f"trajectory {trajectory.id!r} has segments without token ids")
    extra: dict[str, Any] = dict(logs or {})
    if step_values:
        totals = [(span, sum(values.values())) for span, values in step_values]
        extra[STEP_INDEX_KEY], extra[STEP_VALUE_KEY] = step_lists(
            totals, sequence_length=len(tokens), max_length=max_length
        )
        for name in sorted({name for _, values in step_values for name in values}):
            typed = [(span, values.get(name, 0.0)) for span, values in step_values]
            _, extra[STEP_TYPE_PREFIX + name] = step_lists(typed, sequence_length=len(tokens), max_length=max_length)
    return {
        "prompt": prompt,
        "label": label,
        "images": images,
        "mm_train_inputs": None,
        "reward": float(reward),
        "scores": float(reward if scores is None else scores),
        "observation_tokens": tokens,
        "action_ranges": [tuple(r) for r in ranges if r[1] > r[0]],
        "rollout_log_probs": rollout_logprobs(trajectory.segments, strict=False),
        "truncated": _truncated(trajectory, len(tokens), max_length),
        "extra_logs": extra,
    }


def _truncated(trajectory: Trajectory, n_tokens: int, max_length: int) -> bool:
    """The budget ended the run: its last policy turn hit the cap, the sequence fills ``max_length``, or the
    run stopped on the budget before it could answer."""
    policy = [s for s in trajectory.segments if s.origin == "policy"]
    if policy and policy[-1].finish_reason == "length":
        return True
    if trajectory.error is not None and trajectory.error.type == "BudgetExhausted":
        return True
    return n_tokens >= max_length
