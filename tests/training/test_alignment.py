"""The TRL path's per-token advantages, checked by hand (issue 29, point 5): for hand-built episodes -- a prompt, a
policy turn, an environment observation, a second policy turn, two typed steps -- every completion token's
advantage in the tensor ``AgentGRPOTrainer`` hands TRL's loss is the one of *that* token, for every advantage mode.

The expected numbers are written out from the formulas in :mod:`evigraph.training.advantages`' docstring with plain
arithmetic here, never through ``advantages()`` or ``per_token_advantages()``: an off-by-one between the episode's
tokens and TRL's completion columns, an inverted environment mask or a flipped sign fails this test."""

from __future__ import annotations

import math
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from evigraph.training.advantages import AdvantageConfig  # noqa: E402
from evigraph.training.episode import Episode, EpisodeStep  # noqa: E402
from evigraph.training.trl_engine import AgentGRPOTrainer, GRPOTrainer  # noqa: E402
from evigraph.training.trl_rollout import trl_sample  # noqa: E402

EPS = 1e-9
LAM, COEF, ALPHA = 0.5, 0.5, 0.25

# Three episodes of one prompt (one group). Per episode: its prompt length, its two policy turns' lengths (A, B)
# with the observation between them, its outcome, CAPO's class, and each step's values by type.
LAYOUTS = [
    # prompt, A, observation, B, outcome, negative, A's values, B's values
    (3, 3, 2, 2, 1.0, False, {"quote": 0.2, "gap": -0.1}, {"quote": 0.4, "gap": 0.3}),
    (2, 2, 1, 3, 0.0, True, {"quote": -0.6, "gap": 0.0}, {"quote": 0.1, "gap": -0.5}),
    (3, 1, 2, 2, 0.25, False, {"quote": 0.0, "gap": 0.2}, {"quote": 1.0, "gap": 0.1}),
]


def _episode(number: int) -> Episode:
    prompt, a, obs, b, outcome, negative, values_a, values_b = LAYOUTS[number]
    mask = [0] * prompt + [1] * a + [0] * obs + [1] * b
    tokens = [100 * (number + 1) + t for t in range(len(mask))]  # distinct ids: a column shows which token it is
    steps = (
        EpisodeStep(index=0, kind="search", span=(prompt, prompt + a), values=values_a),
        EpisodeStep(index=1, kind="answer", span=(prompt + a + obs, len(mask)), values=values_b),
    )
    logprobs = [-0.5 * m for m in mask]
    return Episode(id=f"e{number}", token_ids=tuple(tokens), policy_mask=tuple(mask), logprobs=tuple(logprobs),
                   outcome=outcome, steps=steps, negative=negative)  # fmt: skip


def _labels(number: int) -> list[str]:
    """Each completion token's place, by hand: ``A`` (first turn), ``E`` (observation), ``B`` (second turn)."""
    _, a, obs, b, *_ = LAYOUTS[number]
    return ["A"] * a + ["E"] * obs + ["B"] * b


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _std(values: list[float]) -> float:
    """Unbiased (N - 1), as the module docstring says."""
    m = _mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def _total(values: dict[str, float]) -> float:
    return sum(values.values())


def _expected(mode: str) -> list[list[float]]:
    """Per episode, per completion token, the advantage by the formulas of the mode."""
    outcomes = [layout[4] for layout in LAYOUTS]
    grpo = [(r - _mean(outcomes)) / (_std(outcomes) + EPS) for r in outcomes]
    per_token: list[dict[str, float]] = []  # per episode: the value of an A token and of a B token
    if mode == "grpo":
        per_token = [{"A": g, "B": g} for g in grpo]
    elif mode == "capo":  # the negative-class episode (the second) scaled by alpha
        per_token = [{"A": g * ALPHA, "B": g * ALPHA} if layout[5] else {"A": g, "B": g}
                     for g, layout in zip(grpo, LAYOUTS, strict=True)]  # fmt: skip
    elif mode == "stepgap_sequence":  # R_i = r_i + lam * (step A + step B), then grpo
        returns = [layout[4] + LAM * (_total(layout[6]) + _total(layout[7])) for layout in LAYOUTS]
        per_token = [{"A": (x - _mean(returns)) / (_std(returns) + EPS)} for x in returns]
        per_token = [{"A": p["A"], "B": p["A"]} for p in per_token]
    elif mode == "stepgap_dense":  # R_t = r_i + lam * value(step(t)), pooled over all 13 action tokens
        token_a = [layout[4] + LAM * _total(layout[6]) for layout in LAYOUTS]
        token_b = [layout[4] + LAM * _total(layout[7]) for layout in LAYOUTS]
        pooled = []
        for layout, ra, rb in zip(LAYOUTS, token_a, token_b, strict=True):
            pooled += [ra] * layout[1] + [rb] * layout[3]
        assert len(pooled) == 3 + 2 + 2 + 3 + 1 + 2
        m, s = _mean(pooled), _std(pooled)
        pairs = zip(token_a, token_b, strict=True)
        per_token = [{"A": (ra - m) / (s + EPS), "B": (rb - m) / (s + EPS)} for ra, rb in pairs]
    elif mode == "process_additive":  # grpo + coef * P_t; each type normalised over the group's 6 steps
        stats = {}
        for name in ("quote", "gap"):
            values = [layout[k][name] for layout in LAYOUTS for k in (6, 7)]
            stats[name] = (_mean(values), _std(values))
        normalised = [
            [sum((layout[k][n] - stats[n][0]) / (stats[n][1] + EPS) for n in ("quote", "gap")) for k in (6, 7)]
            for layout in LAYOUTS
        ]
        # Placed on each step's last token and summed from t to the end: A's tokens see both steps, B's only B.
        per_token = [{"A": g + COEF * (na + nb), "B": g + COEF * nb}
                     for g, (na, nb) in zip(grpo, normalised, strict=True)]  # fmt: skip
    return [[per_token[i][x] if x != "E" else 0.0 for x in _labels(i)] for i in range(len(LAYOUTS))]


def _trainer_advantages(mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Any]]:
    """What ``AgentGRPOTrainer._generate_and_score_completions`` puts in ``output["advantages"]`` for the three
    episodes, with TRL's own generation and scoring replaced by the padded completion ids it would return."""
    samples = [trl_sample(_episode(i), group=0) for i in range(len(LAYOUTS))]
    width = max(len(s.completion_ids) for s in samples)
    padded = torch.tensor([s.completion_ids + [0] * (width - len(s.completion_ids)) for s in samples])
    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", lambda self, inputs: {"completion_ids": padded})
    trainer = AgentGRPOTrainer.__new__(AgentGRPOTrainer)
    trainer.rollout_func = type("Rollout", (), {"last": samples})()
    trainer.advantage = AdvantageConfig(mode=mode, lam=LAM, coef=COEF, alpha=ALPHA, eps=EPS)  # type: ignore[arg-type]
    return trainer._generate_and_score_completions([])["advantages"], samples


def test_the_completion_is_the_tokens_after_the_prompt_and_the_env_mask_marks_the_observation() -> None:
    for i in range(len(LAYOUTS)):
        episode, sample = _episode(i), trl_sample(_episode(i), group=0)
        prompt = LAYOUTS[i][0]
        assert sample.prompt_ids == list(episode.token_ids[:prompt])
        assert sample.completion_ids == list(episode.token_ids[prompt:])
        assert sample.env_mask == [0 if x == "E" else 1 for x in _labels(i)]
        assert sample.logprobs == [0.0 if x == "E" else -0.5 for x in _labels(i)]


@pytest.mark.parametrize("mode", ["grpo", "capo", "stepgap_dense", "stepgap_sequence", "process_additive"])
def test_each_completion_tokens_advantage_is_the_one_of_that_token(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table, samples = _trainer_advantages(mode, monkeypatch)
    expected = _expected(mode)
    assert table.shape == (3, 7)
    for row, (values, sample) in enumerate(zip(expected, samples, strict=True)):
        n = len(values)
        for j in range(table.shape[1]):
            want = values[j] if j < n else 0.0  # padding columns: 0
            assert float(table[row, j]) == pytest.approx(want, abs=1e-5), (mode, row, j, _labels(row)[j : j + 1])
        assert all(float(table[row, j]) == 0.0 for j in range(n) if sample.env_mask[j] == 0)  # environment: 0
        assert any(float(table[row, j]) != 0.0 for j in range(n) if sample.env_mask[j] == 1)


def test_a_finished_run_ends_with_the_end_token_as_environment_and_a_truncated_one_does_not() -> None:
    """TRL reads a completion without a final end-of-sequence id as cut off (``completions/clipped_ratio``, and
    ``mask_truncated_completions`` drops it from the loss); a graph run ends at a stop string instead."""
    finished = trl_sample(_episode(0), group=0, end_id=7)
    assert finished.completion_ids == [103, 104, 105, 106, 107, 108, 109, 7]
    assert finished.env_mask == [1, 1, 1, 0, 0, 1, 1, 0]
    assert finished.logprobs == [-0.5, -0.5, -0.5, 0.0, 0.0, -0.5, -0.5, 0.0]
    assert finished.rollout.action_mask == (1, 1, 1, 0, 0, 1, 1, 0)
    assert [s[:2] for s in finished.rollout.steps] == [(0, 3), (5, 7)]  # the spans do not move
    truncated = trl_sample(_episode(0).model_copy(update={"truncated": True}), group=0, end_id=7)
    assert truncated.completion_ids == [103, 104, 105, 106, 107, 108, 109] and truncated.env_mask[-1] == 1
    already = trl_sample(_episode(0), group=0, end_id=109)  # the run's last token is already the end id
    assert already.completion_ids[-1] == 109 and len(already.completion_ids) == 7
