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
