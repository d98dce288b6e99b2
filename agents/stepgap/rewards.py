"""StepGap's typed process reward for GRPO (specs/stepgap.md §3; defaults from §9 #10, #12 and #14).

``R = r_EM + λ · Σ_i [r_base(τ_i) + r_shape(τ_{i−1}, s_i)]`` (Eq. 3) with ``τ_0 = no-gap``. ``r_base`` is a table per
reward preset (§3.1), ``r_shape`` rewards the repair action that follows a gap (§3.2) and is used by the
``typed_shape`` preset only. For the trainer, :func:`dense_step_values` gives each step's token span its per-token
return ``r_EM + λ·bracket_i`` and :func:`group_token_advantages` standardises those returns token-pooled over the
G rollouts of one prompt (§3.4); :func:`group_sequence_advantages` is the sequence-level variant.

Steps arrive as :class:`RewardStep` records, already labelled by the (frozen) checker. Everything here is pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal, get_args

from pydantic import BaseModel, ConfigDict

from evigraph.agents.search_r1.answers import exact_match, normalize_answer, token_f1
from evigraph.agents.stepgap.labels import GAP_LABELS, GapLabel
from evigraph.group_norm import pooled_standardise, standardise
from evigraph.trajectory import RewardComponent

__all__ = (
    "ADVANTAGE_EPS",
    "BASE_REWARDS",
    "NEAR_DUPLICATE_THRESHOLD",
    "PRESETS",
    "SHAPED_PRESETS",
    "Preset",
    "RewardStep",
    "StepReward",
    "TraceReward",
    "base_reward",
    "dense_step_values",
    "em_reward",
    "group_sequence_advantages",
    "group_token_advantages",
    "is_near_duplicate",
    "is_retraction",
    "score_trace",
    "shaping_reward",
    "step_claim",
    "step_rewards",
    "trajectory_return",
)

Preset = Literal["search_only", "binary_gap", "untyped_dense", "typed_base", "typed_shape"]
"""The reward configurations compared in §5: EM only, Binary Gap, Untyped-Dense, Typed Base, Typed+Shape."""
PRESETS: Final[tuple[Preset, ...]] = get_args(Preset)

BASE_REWARDS: Final[dict[Preset, dict[GapLabel, float]]] = {
    "search_only": {"no-gap": 0.0, "MB": 0.0, "IE": 0.0, "CC": 0.0},
    "binary_gap": {"no-gap": 0.20, "MB": 0.0, "IE": 0.0, "CC": 0.0},
    "untyped_dense": {"no-gap": 0.20, "MB": -0.10, "IE": -0.10, "CC": -0.10},
    # CC is a small detection bonus, not a penalty: penalising it teaches vague, uncheckable claims (§8 #6).
    "typed_base": {"no-gap": 0.20, "MB": -0.05, "IE": -0.10, "CC": 0.05},
    "typed_shape": {"no-gap": 0.20, "MB": -0.05, "IE": -0.10, "CC": 0.05},
}
"""``r_base(τ)`` per preset (§3.1, Eq. 1)."""
SHAPED_PRESETS: Final[frozenset[Preset]] = frozenset({"typed_shape"})
"""The presets that add ``r_shape``; Binary Gap, Untyped-Dense and Typed Base have no shaping term (§3.1)."""

NEAR_DUPLICATE_THRESHOLD: Final = 0.7
"""A query is a near-duplicate when its max token F1 against the earlier queries is above this (§3.2)."""
ADVANTAGE_EPS: Final = 1e-6
"""ε in ``Â = (R − μ)/(σ + ε)`` (§9 #12)."""

_NEW_SEARCH_AFTER_GAP: Final = 0.10
_RETRACTION_AFTER_CC: Final = 0.15
_ANSWER_AFTER_GAP: Final = -0.15
_DUPLICATE_SEARCH_AFTER_GAP: Final = -0.05
_SEARCH_GAPS: Final[frozenset[GapLabel]] = frozenset({"IE", "MB"})
_RETRACTION_MARKERS: Final = re.compile(r"\b(?:actually|wait|correction|i\s+was\s+wrong)\b", re.IGNORECASE)


class RewardStep(BaseModel):
    """One step as the reward sees it; the CLI record ``{"kind", "text", "query", "label"}``.

    A step with neither a ``<search>`` nor an ``<answer>`` tag is an inference step without a query: pass it as
    ``kind="search"`` with ``query=None`` (§1.1, S-11). A step with both tags is an answer step (§1.1).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["search", "answer"]
    text: str
    """The step's reasoning text ``c_i``, outside the action tags (§2.1); retraction markers are read here."""
    query: str | None = None
    """The ``<search>`` query ``q_i``; ``None`` when the step has none. Ignored on answer steps."""
    label: GapLabel
    """The checker's ``τ_i``."""


class StepReward(BaseModel):
    """One step's reward terms, before λ."""

    model_config = ConfigDict(frozen=True)

    index: int
    """0-based step index."""
    base: float
    """``r_base(τ_i)`` of the preset."""
    shape: float
    """``r_shape(τ_{i−1}, s_i)``; 0 for presets without shaping."""
    bracket: float
    """``base + shape``; the step's tokens receive ``r_EM + λ·bracket`` (§3.4)."""
    token_span: tuple[int, int] | None = None
    """The step's half-open policy-token span ``[ℓ_i, r_i)``, when the caller gave one."""


class TraceReward(BaseModel):
    """The return of one trajectory (Eq. 3) and its per-step terms."""

    model_config = ConfigDict(frozen=True)

    preset: Preset
    lam: float
    em: int
    """``r_EM`` ∈ {0, 1}."""
    steps: tuple[StepReward, ...]
    total: float
    """``R = em + lam · Σ bracket``."""

    def components(self) -> list[RewardComponent]:
        """``em``, the summed ``base`` and ``shape`` terms (before λ), and ``total``, as reward components."""
        return [
            RewardComponent(type="em", value=float(self.em)),
            RewardComponent(type="base", value=math.fsum(s.base for s in self.steps)),
            RewardComponent(type="shape", value=math.fsum(s.shape for s in self.steps)),
            RewardComponent(type="total", value=self.total),
        ]


def _check_preset(preset: str) -> Preset:
    if preset not in BASE_REWARDS:
        raise ValueError(f"unknown reward preset {preset!r}; expected one of {', '.join(PRESETS)}")
    return preset  # type: ignore[return-value]


def _check_lam(lam: float) -> float:
    if not lam >= 0:  # also rejects NaN
        raise ValueError(f"lam must be >= 0, got {lam!r}")
    return lam


def _check_em(em: int) -> int:
    if em not in (0, 1):
        raise ValueError(f"em must be 0 or 1 (strict exact match), got {em!r}")
    return int(em)


def base_reward(label: GapLabel, preset: Preset = "typed_shape") -> float:
    """``r_base(τ)`` for the preset (§3.1); in [−0.10, +0.20].

    Raises:
        ValueError: for an unknown label or preset.

    Example:
        >>> base_reward("CC"), base_reward("MB", "untyped_dense"), base_reward("no-gap", "search_only")
        (0.05, -0.1, 0.0)
    """
    table = BASE_REWARDS[_check_preset(preset)]
    if label not in table:
        raise ValueError(f"unknown gap label {label!r}; expected one of {', '.join(GAP_LABELS)}")
    return table[label]


def is_near_duplicate(query: str, earlier_queries: Iterable[str], threshold: float = NEAR_DUPLICATE_THRESHOLD) -> bool:
    """``max_j tokenF1(query, q_j) > threshold`` over ALL earlier queries (§3.2); no earlier query → NEW.

    Example (T-1, T-6, T-3):
        >>> is_near_duplicate("director of Whiplash", ["Whiplash director"])
        True
        >>> is_near_duplicate("who designed the Peter and Paul Fortress", ["Peter and Paul Fortress designer"])
        True
        >>> is_near_duplicate("Heinrich Gerhard Kuhn place of birth", ["Heinrich Gerhard Kuhn nationality"])
        False
    """
    return max((token_f1(query, q) for q in earlier_queries), default=0.0) > threshold


def step_claim(step: RewardStep) -> str:
    """The claim the retraction test compares (§3.2, §9 #10): the step's text without its retraction markers.

    Answer steps use their text too (the record has no separate ``a_i``). The markers are dropped so that
    ``"Wait, X."`` has the same claim as ``"X."``: otherwise inserting a marker alone would change the claim and
    the claim-changed guard against farming +0.15 would be void (§8 #9).

    Example:
        >>> step_claim(RewardStep(kind="search", text="Wait, Kuhn was British.", query=None, label="CC"))
        'Kuhn was British.'
    """
    return " ".join(_RETRACTION_MARKERS.sub("", step.text).split()).lstrip(",;:!-— ")


def is_retraction(text: str, claim: str, previous_claim: str | None) -> bool:
    """Whether a step retracts (§3.2): ``text`` contains ``actually`` / ``wait`` / ``correction`` /
    ``I was wrong`` (case-insensitive, whole words) AND ``claim`` is non-empty and differs from
    ``previous_claim`` after SQuAD normalisation (§9 #10). ``previous_claim=None`` means there is none.

    Example (S-4, S-9):
        >>> is_retraction("Actually, Kuhn was born in Germany, not Britain.",
        ...               "Kuhn was born in Germany, not Britain.", "Kuhn was born in Britain.")
        True
        >>> is_retraction("Wait, Kuhn was born in Britain.", "Kuhn was born in Britain.", "Kuhn was born in Britain.")
        False
    """
    if _RETRACTION_MARKERS.search(text) is None:
        return False
    new = normalize_answer(claim)
    return bool(new) and new != normalize_answer(previous_claim or "")


def shaping_reward(
    previous_label: GapLabel,
    step: RewardStep,
    *,
    earlier_queries: Sequence[str] = (),
    previous_claim: str | None = None,
) -> float:
    """``r_shape(τ_{i−1}, s_i)`` (§3.2, Eq. 2) ∈ {+0.10, +0.15, −0.15, −0.05, 0}; first matching case wins:

    1. +0.10 if τ_{i−1} ∈ {IE, MB} and s_i searches a NEW query;
    2. +0.15 if τ_{i−1} = CC and s_i retracts (:func:`is_retraction` on :func:`step_claim`);
    3. −0.15 if τ_{i−1} ∈ {IE, MB, CC} and s_i answers;
    4. −0.05 if τ_{i−1} ∈ {IE, MB} and s_i searches a NEAR-DUPLICATE query;
    5. 0 otherwise (also for a search-kind step without a query, S-11).

    Args:
        previous_label: τ_{i−1}; pass ``"no-gap"`` for the first step (τ_0).
        step: s_i.
        earlier_queries: the queries of all earlier steps of the trajectory.
        previous_claim: :func:`step_claim` of s_{i−1}, ``None`` for the first step.

    Example (S-1):
        >>> step = RewardStep(kind="search", text="", query="Damien Chazelle birthplace", label="no-gap")
        >>> shaping_reward("IE", step, earlier_queries=["Damien Chazelle films 2017"])
        0.1
    """
    query = step.query if step.kind == "search" else None
    new_query = query is not None and not is_near_duplicate(query, earlier_queries)
    if previous_label in _SEARCH_GAPS and new_query:
        return _NEW_SEARCH_AFTER_GAP
    if previous_label == "CC" and is_retraction(step.text, step_claim(step), previous_claim):
        return _RETRACTION_AFTER_CC
    if previous_label != "no-gap" and step.kind == "answer":
        return _ANSWER_AFTER_GAP
    if previous_label in _SEARCH_GAPS and query is not None:
        return _DUPLICATE_SEARCH_AFTER_GAP
    return 0.0


def step_rewards(steps: Sequence[RewardStep], *, preset: Preset = "typed_shape") -> list[tuple[float, float]]:
    """``(r_base(τ_i), r_shape(τ_{i−1}, s_i))`` per step, with τ_0 = no-gap; shape is 0 unless the preset shapes.

    Example (G-2):
        >>> steps = [RewardStep(kind="search", text="", query="Whiplash director", label="IE"),
        ...          RewardStep(kind="search", text="", query="Damien Chazelle films 2017", label="no-gap"),
        ...          RewardStep(kind="answer", text="", label="MB")]
        >>> step_rewards(steps)
        [(-0.1, 0.0), (0.2, 0.1), (-0.05, 0.0)]
    """
    shaped = _check_preset(preset) in SHAPED_PRESETS
    rewards: list[tuple[float, float]] = []
    queries: list[str] = []
    previous_label: GapLabel = "no-gap"
    previous_claim: str | None = None
    for step in steps:
        shape = (
            shaping_reward(previous_label, step, earlier_queries=queries, previous_claim=previous_claim)
            if shaped
            else 0.0
        )
        rewards.append((base_reward(step.label, preset), shape))
        if step.kind == "search" and step.query is not None:
            queries.append(step.query)
        previous_label, previous_claim = step.label, step_claim(step)
    return rewards


def score_trace(
    em: int,
    steps: Sequence[RewardStep],
    *,
    preset: Preset = "typed_shape",
    lam: float = 1.0,
    token_spans: Sequence[tuple[int, int]] | None = None,
) -> TraceReward:
    """The trajectory return ``R = r_EM + λ · Σ_i [r_base(τ_i) + r_shape(τ_{i−1}, s_i)]`` (Eq. 3) with its terms.

    The range is ``em + λ·n·[−0.25, +0.35]`` for n steps (max |base + shape| = 0.35, §3.3).

    Args:
        em: ``r_EM`` ∈ {0, 1}, strict EM of the final answer (:func:`em_reward`).
        steps: the labelled steps, in order.
        preset: which reward configuration (§5).
        lam: λ ≥ 0.
        token_spans: optional ``[ℓ_i, r_i)`` per step, copied onto the step rewards.

    Raises:
        ValueError: unknown preset, ``lam < 0``, ``em`` not 0/1, or a span count that differs from the step count.

    Example (G-1):
        >>> steps = [RewardStep(kind="search", text="", query="Whiplash director", label="no-gap"),
        ...          RewardStep(kind="answer", text="", label="no-gap")]
        >>> score_trace(1, steps).total
        1.4
    """
    em, lam = _check_em(em), _check_lam(lam)
    if token_spans is not None:
        if len(token_spans) != len(steps):
            raise ValueError(f"got {len(token_spans)} token spans for {len(steps)} steps; need one span per step")
        for start, end in token_spans:
            if not 0 <= start <= end:
                raise ValueError(f"token span ({start}, {end}) is not a half-open range 0 <= start <= end")
    spans = list(token_spans) if token_spans is not None else [None] * len(steps)
    per_step = tuple(
        StepReward(index=i, base=base, shape=shape, bracket=base + shape, token_span=span)
        for i, ((base, shape), span) in enumerate(zip(step_rewards(steps, preset=preset), spans, strict=True))
    )
    total = em + lam * math.fsum(s.bracket for s in per_step)
    return TraceReward(preset=preset, lam=lam, em=em, steps=per_step, total=total)


def trajectory_return(
    em: int, steps: Sequence[RewardStep], *, preset: Preset = "typed_shape", lam: float = 1.0
) -> float:
    """``R`` of Eq. 3 (see :func:`score_trace`).

    Example (G-2 at λ = 1, 0.5 and 2):
        >>> steps = [RewardStep(kind="search", text="", query="Whiplash director", label="IE"),
        ...          RewardStep(kind="search", text="", query="Damien Chazelle films 2017", label="no-gap"),
        ...          RewardStep(kind="answer", text="", label="MB")]
        >>> [round(trajectory_return(0, steps, lam=lam), 4) for lam in (1.0, 0.5, 2.0)]
        [0.15, 0.075, 0.3]
    """
    return score_trace(em, steps, preset=preset, lam=lam).total


def dense_step_values(
    em: int,
    steps: Sequence[RewardStep],
    token_spans: Sequence[tuple[int, int]],
    *,
    preset: Preset = "typed_shape",
    lam: float = 1.0,
) -> list[tuple[tuple[int, int], float]]:
    """Per step, its token span ``[ℓ_i, r_i)`` and the per-token return ``R_t = r_EM + λ·bracket_i`` (§3.4).

    Raises:
        ValueError: as :func:`score_trace`; the span-count message names both counts.

    Example (the dense toy's rollout 1 = G-2 with step lengths 4/3/2):
        >>> steps = [RewardStep(kind="search", text="", query="Whiplash director", label="IE"),
        ...          RewardStep(kind="search", text="", query="Damien Chazelle films 2017", label="no-gap"),
        ...          RewardStep(kind="answer", text="", label="MB")]
        >>> [(span, round(r, 4)) for span, r in dense_step_values(0, steps, [(0, 4), (10, 13), (20, 22)])]
        [((0, 4), -0.1), ((10, 13), 0.3), ((20, 22), -0.05)]
    """
    trace = score_trace(em, steps, preset=preset, lam=lam, token_spans=token_spans)
    return [(span, em + lam * s.bracket) for span, s in zip(token_spans, trace.steps, strict=True)]


def group_token_advantages(per_token_returns: Sequence[Sequence[float]]) -> list[list[float]]:
    """Token-pooled group standardisation ``Â_t = (R_t − μ)/(σ + 1e-6)`` (§3.4, §9 #12).

    ``per_token_returns`` has shape (G, T_g): the returns of the non-masked response tokens of each of the G
    rollouts of one prompt; μ and σ (unbiased) are taken over all ``Σ_g T_g`` tokens. The result has the same
    ragged shape.

    Example (the dense toy, G = 2):
        >>> adv = group_token_advantages([[-0.10] * 4 + [0.30] * 3 + [-0.05] * 2, [1.20] * 6])
        >>> [round(a, 4) for a in (adv[0][0], adv[0][4], adv[0][7], adv[1][0])]
        [-1.0047, -0.3423, -0.9219, 1.1482]
    """
    return pooled_standardise(per_token_returns, eps=ADVANTAGE_EPS)


def group_sequence_advantages(returns: Sequence[float]) -> list[float]:
    """Sequence-level GRPO advantages ``Â_g = (R_g − μ)/(σ + 1e-6)`` over the G returns of one prompt (§3.4).

    Example (G = 8, the returns of G-1…G-8):
        >>> adv = group_sequence_advantages([1.40, 0.15, -0.35, -0.10, 1.60, 1.10, 0.45, 1.35])
        >>> [round(a, 4) for a in adv]
        [0.9272, -0.7285, -1.3908, -1.0596, 1.1921, 0.5298, -0.3311, 0.8609]
    """
    return standardise(returns, eps=ADVANTAGE_EPS)


def em_reward(prediction: str | None, golds: str | Iterable[str]) -> int:
    """``r_EM`` ∈ {0, 1}: SQuAD-normalised exact match against any gold alias (§9 #14); no answer → 0.

    A bare string is one alias.

    Raises:
        ValueError: when there is no gold alias (the sample cannot be scored).

    Example:
        >>> em_reward("the Beatles", ["Beatles", "The Fab Four"]), em_reward(None, ["Beatles"])
        (1, 0)
    """
    aliases = (golds,) if isinstance(golds, str) else tuple(golds)
    if not aliases:
        raise ValueError("em_reward needs at least one gold alias, got none")
    return 0 if prediction is None else exact_match(prediction, aliases)
