"""A CPU check of the policy-gradient path (not a second trainer): a Veri-R1 episode from our executor, turned
into an experience by OpenRLHF's own code, scored by a tiny random-init causal LM and OpenRLHF's own clipped
GRPO loss; the environment (search result) tokens contribute exactly zero gradient."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evigraph.training.executor import GraphExecutor, RolloutConfig
from evigraph.training.scripted_engine import ScriptedEngine, ScriptedSamplingParams
from tests.agents.veri_r1.test_graph import ANSWER_REFUTE, CLAIM, PLAN, DictSearch
from tests.training.openrlhf_real import import_experience_maker, import_samples_generator

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def test_clipped_loss_gradients_flow_only_through_policy_tokens(qwen2_style_tokenizer: Any, monkeypatch: Any) -> None:
    tokenizer = qwen2_style_tokenizer
    replies = [
        f"{PLAN}\n<search>Hog Island Light</search>",
        "<think>When was it first lit?</think>\n<search>Hog Island Light first lit</search>",
        ANSWER_REFUTE,
    ]
    executor = GraphExecutor(RolloutConfig(agent="veri-r1"), resources={"search": DictSearch()})
    gold = {"label": "REFUTES", "evidence": ["Hog Island Light_sentence_0", "Hog Island Light_sentence_3"]}
    label = json.dumps({"input": {"claim": CLAIM}, "gold": gold})
    engine = ScriptedEngine(tokenizer, replies)
    response = asyncio.run(executor.execute("p", label, ScriptedSamplingParams(), 4096, tokenizer, engine))

    samples = import_samples_generator(monkeypatch)
    generator = samples.SamplesGenerator.__new__(samples.SamplesGenerator)
    experience = generator._process_response_into_experience(response, max_len=4096)
    import_experience_maker(monkeypatch)  # stubs DeepSpeed; openrlhf.models.loss is then OpenRLHF's own
    from openrlhf.models.loss import PolicyLoss

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
        vocab_size=len(tokenizer), max_position_embeddings=4096,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config)
    sequences = experience.sequences
    logits = model(sequences).logits
    logits.retain_grad()
    log_probs = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, sequences[:, 1:, None]).squeeze(-1)
    mask = experience.action_mask.bool()
    assert log_probs.shape == mask.shape
    advantages = torch.full_like(log_probs, 0.866)
    old = log_probs.detach() + 0.05 * torch.randn_like(log_probs)  # a ratio away from 1, so clipping is exercised
    loss, clip_ratio, *_ = PolicyLoss(clip_eps_low=0.2, clip_eps_high=0.2)(log_probs, old, advantages, action_mask=mask)
    loss.backward()

    position_grad = logits.grad[0, :-1].abs().sum(-1)  # row t predicts token t + 1, as the mask is shifted
    assert float(position_grad[~mask[0]].sum()) == 0.0  # prompt and <information> tokens: exactly no gradient
    assert bool((position_grad[mask[0]] > 0).any())
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in model.parameters())
    trained = [tokenizer.decode([int(sequences[0, t + 1])]) for t in range(mask.shape[1]) if mask[0, t]]
    assert "<information>" not in "".join(trained) and "<search>" in "".join(trained)
    assert 0.0 <= float(clip_ratio) <= 1.0
