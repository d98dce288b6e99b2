"""An :class:`~evigraph.training.episode.Episode` as the dict OpenRLHF's ``AgentExecutor.execute`` returns, and
the per-step reward lists it carries to the trainer (pure functions). Only the OpenRLHF engine uses them; the TRL
engine reads the episode's steps directly (:mod:`.trl_rollout`).

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

from evigraph.training.episode import Episode

__all__ = (
    "NEGATIVE_KEY",
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
NEGATIVE_KEY = "evigraph_negative"
"""``extra_logs`` / ``info`` key: 1.0 for samples of the negative gold class (CAPO)."""
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
    episode: Episode, *, prompt: str, label: Any, max_length: int, images: Any = None
) -> dict[str, Any]:
    """The ``execute`` result of one episode: OpenRLHF's fields, the per-step lists in ``extra_logs``.

    Args:
        episode: the finished run.
        prompt, label: what ``execute`` received (OpenRLHF keeps them on the experience).
        max_length: the run's sequence budget (the per-step lists are cut like OpenRLHF's action mask).
        images: passed through.

    Example (a 2-token prompt, a policy turn with one step, an observation token, a policy turn):
        >>> from evigraph.training.episode import Episode, EpisodeStep
        >>> step = EpisodeStep(index=0, kind="search", span=(2, 4), values={"quote": 0.5})
        >>> e = Episode(id="t", token_ids=(1, 2, 3, 4, 5, 6), policy_mask=(0, 0, 1, 1, 0, 1),
        ...     logprobs=(0, 0, -.5, -.5, 0, -.1), outcome=1.0, steps=(step,), logs={"a/b": 2.0})
        >>> d = openrlhf_sample(e, prompt="p", label="l", max_length=100)
        >>> d["action_ranges"], d["extra_logs"][STEP_INDEX_KEY], d["extra_logs"][STEP_TYPE_PREFIX + "quote"]
        ([(2, 4), (5, 6)], [0, 1, 1, 0, 0], [0.0, 0.5, 0.5, 0.0, 0.0])
    """
    extra: dict[str, Any] = dict(episode.logs)
    if episode.negative is not None:  # CAPO's class flag; the same key on every sample of the run
        extra[NEGATIVE_KEY] = float(episode.negative)
    n = len(episode.token_ids)
    if episode.steps:
        totals = [(step.span, step.value) for step in episode.steps]
        extra[STEP_INDEX_KEY], extra[STEP_VALUE_KEY] = step_lists(totals, sequence_length=n, max_length=max_length)
        for name in sorted({name for step in episode.steps for name in step.values}):
            typed = [(step.span, step.values.get(name, 0.0)) for step in episode.steps]
            _, extra[STEP_TYPE_PREFIX + name] = step_lists(typed, sequence_length=n, max_length=max_length)
    return {
        "prompt": prompt,
        "label": label,
        "images": images,
        "mm_train_inputs": None,
        "reward": episode.outcome,
        "scores": episode.outcome,
        "observation_tokens": list(episode.token_ids),
        "action_ranges": episode.action_ranges(),
        "rollout_log_probs": list(episode.logprobs),
        "truncated": episode.truncated,
        "extra_logs": extra,
    }
