"""Advantage modes on their fixtures: the OpenRLHF notes' §5 (stock GRPO, ±0.866) and §6.3 (process-additive),
StepGap spec §3.4 (token-pooled dense and sequence-level), RLSeek spec §3.4 (CAPO); coefficient 0 reproduces
stock GRPO; rollouts with different step counts; and every mode on a real batch -- three interleaved prompt
groups of different step counts and lengths, checked against per-group arithmetic done here by hand."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from evigraph.training.advantages import MODES, AdvantageConfig, AdvantageMode, Rollout, advantages


def _rollout(group: int, outcome: float, lengths: list[int], values: list[float], negative: bool = False) -> Rollout:
    """A sample whose steps are consecutive policy spans of ``lengths`` tokens, each after one masked token."""
    mask: list[int] = []
    steps = []
    for length, value in zip(lengths, values, strict=True):
        mask.append(0)  # an environment (or prompt) token before each action
        steps.append((len(mask), len(mask) + length, value))
        mask.extend([1] * length)
    return Rollout(group=group, outcome=outcome, action_mask=tuple(mask), steps=tuple(steps), negative=negative)


# Notes §5/§6.3: outcomes 1, 0, 1, 0 with 2, 3, 2, 1 steps; step rewards valid +0.1, repeated -0.1,
# malformed -0.2, verdict 0.
NOTES = [
    _rollout(0, 1.0, [2, 3], [0.1, 0.0]),
    _rollout(0, 0.0, [2, 2, 3], [0.1, -0.1, 0.0]),
    _rollout(0, 1.0, [3, 2], [-0.2, 0.0]),
    _rollout(0, 0.0, [4], [0.0]),
]


def _per_step(rollout: Rollout, values: list[float]) -> list[float]:
    per_step = []
    for start, end, _ in rollout.steps:
        assert len({round(v, 9) for v in values[start:end]}) == 1  # one value across the step's tokens
        per_step.append(round(values[start], 3))
    return per_step


def test_grpo_is_stock_group_norm_on_every_action_token() -> None:
    result = advantages(NOTES, AdvantageConfig(mode="grpo"))
    for rollout, values, expected in zip(NOTES, result, [0.866, -0.866, 0.866, -0.866], strict=True):
        assert {round(v, 3) for v, m in zip(values, rollout.action_mask, strict=True) if m} == {expected}
        assert all(v == 0.0 for v, m in zip(values, rollout.action_mask, strict=True) if not m)


def test_process_additive_reproduces_the_notes_fixture_and_coef_zero_is_grpo() -> None:
    result = advantages(NOTES, AdvantageConfig(mode="process_additive", coef=1.0))
    assert [_per_step(r, v) for r, v in zip(NOTES, result, strict=True)] == [
        [2.127, 0.992],
        [-0.488, -1.623, -0.740],
        [-0.900, 0.992],
        [-0.740],
    ]
    assert advantages(NOTES, AdvantageConfig(mode="process_additive", coef=0.0)) == advantages(NOTES)


@pytest.mark.parametrize(
    ("values", "eps", "expected"),
    [
        # Step values 1 and 0: mean 0.5, unbiased std sqrt(0.5). With eps = 1 the process term is
        # +-0.5 / (sqrt(0.5) + 1) = +-(1 - sqrt(2) / 2); without eps it would be +-sqrt(2) / 2.
        ((1.0, 0.0), 1.0, 1 - math.sqrt(2) / 2),
        # A tiny std: values 2e-9 and 0, mean 1e-9, std sqrt(2) * 1e-9. With eps = 1e-9 the term is
        # +-1e-9 / ((sqrt(2) + 1) * 1e-9) = +-(sqrt(2) - 1); without eps it would be +-sqrt(2) / 2.
        ((2e-9, 0.0), 1e-9, math.sqrt(2) - 1),
    ],
)
def test_process_additive_adds_eps_to_the_step_std(values: tuple[float, float], eps: float, expected: float) -> None:
    # Equal outcomes: the outcome advantage is 0 / (0 + eps) = 0, so each action token carries the process term
    # alone (one step per rollout, placed on its last token and summed back over the step).
    group = [_rollout(0, 1.0, [2], [values[0]]), _rollout(0, 1.0, [2], [values[1]])]
    result = advantages(group, AdvantageConfig(mode="process_additive", coef=1.0, eps=eps))
    assert result[0] == pytest.approx([0.0, expected, expected], rel=1e-6)
    assert result[1] == pytest.approx([0.0, -expected, -expected], rel=1e-6)


def test_stepgap_dense_pools_tokens_of_the_group() -> None:
    # Spec §3.4: rollout 1 = G-2 (R_t = -0.10 x4, 0.30 x3, -0.05 x2), rollout 2 = G-1 (1.20 x6).
    # G-2: EM 0, brackets -0.10, +0.30, -0.05; G-1: EM 1, brackets 0.20, 0.20.
    rollouts = [_rollout(0, 0.0, [4, 3, 2], [-0.10, 0.30, -0.05]), _rollout(0, 1.0, [3, 3], [0.20, 0.20])]
    result = advantages(rollouts, AdvantageConfig(mode="stepgap_dense", eps=1e-6))
    assert _per_step(rollouts[0], result[0]) == pytest.approx([-1.005, -0.342, -0.922], abs=1e-3)
    assert _per_step(rollouts[1], result[1]) == pytest.approx([1.148, 1.148], abs=1e-3)
    assert [round(result[0][1], 4), round(result[0][6], 4), round(result[0][10], 4), round(result[1][1], 4)] == [
        -1.0047,
        -0.3423,
        -0.9219,
        1.1482,
    ]


def test_stepgap_dense_without_brackets_ranks_like_grpo_with_a_token_pooled_std() -> None:
    rollouts = [_rollout(0, r, [3], [0.5]) for r in (1.0, 0.0, 1.0, 0.0)]
    dense = advantages(rollouts, AdvantageConfig(mode="stepgap_dense", lam=0.0))
    # 12 pooled tokens (6 ones, 6 zeros): unbiased std sqrt(3/11), not the per-sample sqrt(1/3).
    assert [v[1] for v in dense] == pytest.approx([x * (3 / 11) ** -0.5 / 2 for x in (1, -1, 1, -1)])


def test_stepgap_sequence_normalises_eq3_returns() -> None:
    # Spec §3.4's sequence-level check: returns of G-1 ... G-8.
    returns = [1.40, 0.15, -0.35, -0.10, 1.60, 1.10, 0.45, 1.35]
    rollouts = [_rollout(0, r, [1], [0.0]) for r in returns]
    result = advantages(rollouts, AdvantageConfig(mode="stepgap_sequence"))
    assert [round(v[1], 4) for v in result] == [0.9272, -0.7285, -1.3908, -1.0596, 1.1921, 0.5298, -0.3311, 0.8609]
    # The same returns reached through EM + λ·Σ steps.
    split = [_rollout(0, 1.0, [1, 1], [0.2, 0.2]), _rollout(0, 0.0, [1, 1, 1], [-0.10, 0.30, -0.05])]
    assert advantages(split, AdvantageConfig(mode="stepgap_sequence"))[0][1] == pytest.approx(1 / 2**0.5, abs=1e-6)


def test_capo_halves_the_negative_class() -> None:
    # RLSeek §3.4: r = [1.0, 0.5, 0.116667, -0.5]; the sample is non-hallucinated.
    rewards = [1.0, 0.5, 0.116667, -0.5]
    plain = [v[1] for v in advantages([_rollout(0, r, [1], [0.0]) for r in rewards])]
    assert plain == pytest.approx([1.138846, 0.348895, -0.256734, -1.231007], abs=1e-5)
    capo = advantages([_rollout(0, r, [1], [0.0], negative=True) for r in rewards], AdvantageConfig(mode="capo"))
    assert [v[1] for v in capo] == pytest.approx([0.569423, 0.174448, -0.128367, -0.615504], abs=1e-5)
    mixed = advantages([_rollout(0, r, [1], [0.0], negative=False) for r in rewards], AdvantageConfig(mode="capo"))
    assert [v[1] for v in mixed] == pytest.approx(plain)


def test_groups_are_normalised_separately_and_a_lone_sample_gets_zero() -> None:
    rollouts = [*NOTES, _rollout(1, 5.0, [2], [0.0])]
    result = advantages(rollouts)
    assert result[4] == [0.0, 0.0, 0.0]
    assert result[:4] == advantages(NOTES)


@pytest.mark.parametrize("mode", ["grpo", "capo", "stepgap_dense", "stepgap_sequence", "process_additive"])
def test_unequal_step_counts_keep_masks_and_shapes(mode: str) -> None:
    result = advantages(NOTES, AdvantageConfig(mode=mode))  # type: ignore[arg-type]
    for rollout, values in zip(NOTES, result, strict=True):
        assert len(values) == len(rollout.action_mask)
        assert all(v == 0.0 for v, m in zip(values, rollout.action_mask, strict=True) if not m)


def test_process_additive_early_tokens_of_long_rollouts_sum_more_steps() -> None:
    # Two rollouts with the same outcome; the long one repeats a rewarded step: its first step's tokens carry
    # every later step's normalised value, the documented bias of reverse-cumulative process terms.
    short = _rollout(0, 1.0, [2], [0.1])
    long = _rollout(0, 1.0, [2, 2, 2], [0.1, 0.1, 0.1])
    other = _rollout(0, 1.0, [2], [-0.1])
    result = advantages([short, long, other], AdvantageConfig(mode="process_additive"))
    assert result[1][1] == pytest.approx(3 * result[0][1]) and result[1][1] > result[1][7] > 0


def test_steps_outside_the_mask_are_refused() -> None:
    with pytest.raises(ValueError, match="outside the 2 mask positions"):
        Rollout(group=0, outcome=1.0, action_mask=(1, 1), steps=((1, 3, 0.0),))


def test_process_additive_normalises_each_reward_type_separately() -> None:
    def typed(outcome: float, values: list[dict[str, float]]) -> Rollout:
        base = _rollout(0, outcome, [1] * len(values), [sum(v.values()) for v in values])
        return base.model_copy(update={"step_types": tuple(values)})

    # "quote" values are tiny, "check" values large: pooled together, the quote signal would vanish.
    rollouts = [
        typed(1.0, [{"quote": 0.01, "check": 5.0}]),
        typed(0.0, [{"quote": -0.01, "check": 5.0}]),
        typed(1.0, [{"quote": 0.01, "check": -5.0}]),
        typed(0.0, [{"quote": -0.01, "check": -5.0}]),
    ]
    result = advantages(rollouts, AdvantageConfig(mode="process_additive"))
    stock = advantages(rollouts)
    process = [r[1] - s[1] for r, s in zip(result, stock, strict=True)]
    unit = (4 / 3) ** -0.5  # each type: values ±x over 4 samples, unbiased std = x·sqrt(4/3)
    assert process == pytest.approx([2 * unit, 0.0, 0.0, -2 * unit], abs=1e-6)
    # Without types the large values drown the small ones.
    untyped = [r.model_copy(update={"step_types": ()}) for r in rollouts]
    pooled = [
        a[1] - s[1] for a, s in zip(advantages(untyped, AdvantageConfig(mode="process_additive")), stock, strict=True)
    ]
    assert pooled[0] == pytest.approx(pooled[1], abs=0.01)


# A batch as the trainer sees one: three prompt groups interleaved (ids unsorted), 4 + 3 + 3 rollouts with 0 to 3
# steps, prompts of 1 to 3 tokens, an environment token after every step, and some answer tokens outside every
# step. Each step carries two reward types of very different scales ("quote" ~0.1, "check" ~1).
def _laid_out(
    group: int, outcome: float, prompt: int, steps: list[tuple[int, dict[str, float]]], tail: int = 0,
    negative: bool = False,
) -> Rollout:  # fmt: skip
    mask, spans = [0] * prompt, []
    for length, values in steps:
        spans.append((len(mask), len(mask) + length, sum(values.values())))
        mask.extend([1] * length + [0])
    mask.extend([1] * tail)
    return Rollout(
        group=group, outcome=outcome, action_mask=tuple(mask), steps=tuple(spans),
        step_types=tuple(values for _, values in steps), negative=negative,
    )  # fmt: skip


def _typed(quote: float, check: float) -> dict[str, float]:
    return {"quote": quote, "check": check}


BATCH = [
    _laid_out(2, 0.0, 2, [(3, _typed(0.2, -1.0)), (2, _typed(0.0, 2.0))], tail=1),
    _laid_out(0, 1.0, 1, [(2, _typed(0.1, 3.0))], tail=2, negative=True),
    _laid_out(1, 0.5, 3, [(1, _typed(-0.1, 0.5)), (2, _typed(0.3, -0.5)), (4, _typed(0.0, 1.0))]),
    _laid_out(0, 0.0, 2, [], tail=3),
    _laid_out(2, 1.0, 1, [(4, _typed(0.1, 0.0))], negative=True),
    _laid_out(1, -0.5, 2, [(2, _typed(-0.2, -2.0))], tail=1, negative=True),
    _laid_out(0, 1.0, 1, [(1, _typed(0.05, 1.0)), (1, _typed(0.15, -1.0)), (2, _typed(-0.1, 0.0))]),
    _laid_out(1, 1.5, 1, [(3, _typed(0.2, 1.5)), (1, _typed(0.1, 0.0))], tail=2),
    _laid_out(0, 0.0, 3, [(2, _typed(-0.05, -3.0)), (3, _typed(0.2, 0.5))], negative=True),
    _laid_out(2, 0.5, 2, [(1, _typed(0.0, 1.0)), (1, _typed(-0.3, 0.0)), (1, _typed(0.1, -0.5))], tail=1),
]
LAM, ALPHA, COEF = 0.4, 0.3, 0.7


def _members(group: int) -> list[int]:
    return [i for i, r in enumerate(BATCH) if r.group == group]


def _z(values: list[float], eps: float = 1e-9) -> list[float]:
    """One group's ``(v - mean) / (std + eps)``, unbiased std, by the standard library."""
    mean, std = statistics.mean(values), statistics.stdev(values)
    return [(v - mean) / (std + eps) for v in values]


def _on_mask(rollout: Rollout, value: float) -> list[float]:
    return [value if m else 0.0 for m in rollout.action_mask]


def _expected_scalar(per_sample: dict[int, float]) -> list[list[float]]:
    return [_on_mask(r, per_sample[i]) for i, r in enumerate(BATCH)]


def _grpo_by_hand() -> dict[int, float]:
    out: dict[int, float] = {}
    for group in (0, 1, 2):
        members = _members(group)
        out.update(zip(members, _z([BATCH[i].outcome for i in members]), strict=True))
    return out


def _assert_close(result: list[list[float]], expected: list[list[float]]) -> None:
    assert len(result) == len(expected)
    for i, (row, want) in enumerate(zip(result, expected, strict=True)):
        assert row == pytest.approx(want, rel=1e-9, abs=1e-12), f"rollout {i} (group {BATCH[i].group})"


def test_the_batch_interleaves_groups_of_different_step_counts_and_lengths() -> None:
    groups = [r.group for r in BATCH]
    assert groups != sorted(groups) and {groups.count(g) for g in (0, 1, 2)} == {4, 3}
    for group in (0, 1, 2):
        members = [BATCH[i] for i in _members(group)]
        assert len({len(r.steps) for r in members}) > 1 and len({len(r.action_mask) for r in members}) > 1


def test_batch_grpo_normalises_each_group_on_its_own() -> None:
    _assert_close(advantages(BATCH, AdvantageConfig(mode="grpo")), _expected_scalar(_grpo_by_hand()))


def test_batch_capo_scales_only_negative_samples_by_alpha() -> None:
    grpo = _grpo_by_hand()
    expected = {i: a * ALPHA if BATCH[i].negative else a for i, a in grpo.items()}
    _assert_close(advantages(BATCH, AdvantageConfig(mode="capo", alpha=ALPHA)), _expected_scalar(expected))
    # Positive samples keep stock GRPO exactly; negative ones are alpha times it.
    default = advantages(BATCH, AdvantageConfig(mode="capo"))
    assert default[2] == advantages(BATCH)[2] and default[1][1] == pytest.approx(0.5 * grpo[1])


@pytest.mark.parametrize("lam", [LAM, 0.0, 2.5])
def test_batch_stepgap_sequence_adds_lam_times_the_step_sum_per_group(lam: float) -> None:
    expected: dict[int, float] = {}
    for group in (0, 1, 2):
        members = _members(group)
        returns = [BATCH[i].outcome + lam * sum(v for _, _, v in BATCH[i].steps) for i in members]
        expected.update(zip(members, _z(returns), strict=True))
    result = advantages(BATCH, AdvantageConfig(mode="stepgap_sequence", lam=lam))
    _assert_close(result, _expected_scalar(expected))
    if lam == 0.0:
        _assert_close(result, advantages(BATCH))


@pytest.mark.parametrize("lam", [LAM, 2.5])
def test_batch_stepgap_dense_pools_tokens_within_each_group_only(lam: float) -> None:
    expected: list[list[float]] = [[] for _ in BATCH]
    for group in (0, 1, 2):
        members = _members(group)
        returns: dict[int, np.ndarray] = {}
        for i in members:
            rollout = BATCH[i]
            token_returns = np.full(len(rollout.action_mask), rollout.outcome)
            for start, end, value in rollout.steps:
                token_returns[start:end] = rollout.outcome + lam * value
            returns[i] = token_returns
        pooled = np.concatenate([returns[i][np.array(BATCH[i].action_mask) == 1] for i in members])
        mean, std = pooled.mean(), pooled.std(ddof=1)
        for i in members:
            mask = np.array(BATCH[i].action_mask)
            expected[i] = np.where(mask == 1, (returns[i] - mean) / (std + 1e-9), 0.0).tolist()
    _assert_close(advantages(BATCH, AdvantageConfig(mode="stepgap_dense", lam=lam)), expected)


def _process_by_hand(types: tuple[tuple[str, ...], ...]) -> list[list[float]]:
    """``P_t`` per rollout: each set of ``types`` normalised as one over the steps of its group, the step's sum
    placed on its last token, summed from ``t`` to the end, 0 off the mask."""
    terms: list[list[float]] = [[] for _ in BATCH]
    for group in (0, 1, 2):
        members = _members(group)
        stats = {}
        for names in types:
            values = [sum(v[n] for n in names) for i in members for v in BATCH[i].step_types]
            stats[names] = (statistics.mean(values), statistics.stdev(values))
        for i in members:
            rollout = BATCH[i]
            placed = np.zeros(len(rollout.action_mask))
            for (_, end, _), values in zip(rollout.steps, rollout.step_types, strict=True):
                for names, (mean, std) in stats.items():
                    placed[end - 1] += (sum(values[n] for n in names) - mean) / (std + 1e-9)
            suffix = np.cumsum(placed[::-1])[::-1]
            terms[i] = np.where(np.array(rollout.action_mask) == 1, suffix, 0.0).tolist()
    return terms


def test_batch_process_additive_normalises_each_type_within_each_group() -> None:
    grpo = _expected_scalar(_grpo_by_hand())
    process = _process_by_hand((("quote",), ("check",)))
    expected = [[g + COEF * p for g, p in zip(gs, ps, strict=True)] for gs, ps in zip(grpo, process, strict=True)]
    _assert_close(advantages(BATCH, AdvantageConfig(mode="process_additive", coef=COEF)), expected)
    # The fixture tells per-type normalisation from normalising both types as one value.
    together = _process_by_hand((("quote", "check"),))
    assert max(abs(a - b) for p, q in zip(process, together, strict=True) for a, b in zip(p, q, strict=True)) > 0.1


@pytest.mark.parametrize("mode", MODES)
def test_a_batch_equals_its_groups_run_alone_in_any_order(mode: AdvantageMode) -> None:
    config = AdvantageConfig(mode=mode, lam=LAM, alpha=ALPHA, coef=COEF)
    batch = advantages(BATCH, config)
    for group in (0, 1, 2):
        members = _members(group)
        alone = advantages([BATCH[i] for i in members], config)
        _assert_close([batch[i] for i in members], alone)
    order = [7, 3, 0, 9, 5, 1, 8, 2, 6, 4]
    shuffled = advantages([BATCH[i] for i in order], config)
    _assert_close([shuffled[order.index(i)] for i in range(len(BATCH))], batch)
