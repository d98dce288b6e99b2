"""The from-scratch policy's warm start: per-token loss weights decide what is learned and how strongly. Expected
values come from the weighted cross-entropy's optimum (``p = w_a / (w_a + w_b)`` for one context seen with two
next tokens), not from the code."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from evigraph.training.tiny_policy import PolicySize, tiny_policy, train_tokenizer, warm_start  # noqa: E402

TEXTS = ["alpha beta gamma delta", "alpha beta gamma epsilon"] * 20


def _setup() -> tuple[object, object, list[int], int, int]:
    tokenizer = train_tokenizer(TEXTS, vocab_size=300)
    model = tiny_policy(tokenizer, PolicySize(hidden=32, layers=1, heads=2, intermediate=64, max_positions=64))
    prefix = tokenizer.encode("alpha beta gamma", add_special_tokens=False)
    delta = tokenizer.encode(" delta", add_special_tokens=False)
    epsilon = tokenizer.encode(" epsilon", add_special_tokens=False)
    assert len(delta) == len(epsilon) == 1
    return tokenizer, model, prefix, delta[0], epsilon[0]


def _p_next(model: object, prefix: list[int], token: int) -> float:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prefix])).logits[0, -1]  # type: ignore[operator]
    return float(torch.softmax(logits, -1)[token])


def test_a_decision_shown_both_ways_is_learned_at_its_weighted_share() -> None:
    tokenizer, model, prefix, delta, epsilon = _setup()
    ones = [1.0] * len(prefix)
    episodes = [([*prefix, delta], [*ones, 0.25]), ([*prefix, epsilon], [*ones, 0.75])]
    warm_start(model, episodes, steps=300, batch_size=16, lr=1e-2, pad_id=tokenizer.pad_token_id)
    assert _p_next(model, prefix, delta) == pytest.approx(0.25, abs=0.05)
    assert _p_next(model, prefix, epsilon) == pytest.approx(0.75, abs=0.05)


def test_a_token_of_weight_zero_is_not_a_target() -> None:
    tokenizer, model, prefix, delta, epsilon = _setup()
    ones = [1.0] * len(prefix)
    episodes = [([*prefix, delta], [*ones, 0.0]), ([*prefix, epsilon], [*ones, 1.0])]
    warm_start(model, episodes, steps=200, batch_size=16, lr=1e-2, pad_id=tokenizer.pad_token_id)
    assert _p_next(model, prefix, epsilon) > 0.95
    assert _p_next(model, prefix, delta) < 0.02


def test_the_first_step_loss_is_the_weighted_cross_entropy_over_padded_whole_runs() -> None:
    """Episodes of different lengths (so the batch is padded) with fractional, zero and up-weighted targets: the
    loss ``warm_start`` reports for its first step equals the plain computation (full logits under the attention
    mask, every position's cross-entropy times its target's weight), done here from the untouched model."""
    import copy
    import random

    tokenizer, model, prefix, delta, epsilon = _setup()
    short = ([*prefix, delta], [0.0] * len(prefix) + [0.5])
    long = ([*prefix, epsilon, *prefix, delta], [*([1.0] * len(prefix)), 0.0, *([0.0] * len(prefix)), 1.0])
    episodes, pad, batch_size, seed, up = [short, long], tokenizer.pad_token_id, 6, 3, {delta: 4.0}
    rng = random.Random(seed)  # warm_start's documented draw: batch_size indices from random.Random(seed)
    batch = [episodes[rng.randrange(len(episodes))] for _ in range(batch_size)]
    assert {len(ids) for ids, _ in batch} == {len(short[0]), len(long[0])}
    untouched = copy.deepcopy(model)
    total = weight_sum = 0.0
    with torch.no_grad():
        width = max(len(ids) for ids, _ in batch)
        ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch])
        mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch])
        logp = torch.log_softmax(untouched(input_ids=ids, attention_mask=mask).logits, -1)
    for row, (tokens, weights) in enumerate(batch):
        for i in range(1, len(tokens)):
            w = weights[i] * up.get(tokens[i], 1.0)
            total += -float(logp[row, i - 1, tokens[i]]) * w
            weight_sum += w
    done = warm_start(model, episodes, steps=1, batch_size=batch_size, seed=seed, pad_id=pad, weights=up)
    assert done.first_loss == pytest.approx(total / weight_sum, rel=1e-5)
