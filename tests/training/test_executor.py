"""The agent executor driven the way OpenRLHF drives it (a fake rollout engine, a real tokenizer): the exact token
layout of a sample -- prompt, policy and environment tokens, action ranges, rollout logprobs, per-step spans --
for a two-search Veri-R1 episode and an RLSeek episode; the honest ``truncated`` flag; label errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evigraph.errors import ConfigError
from evigraph.training.executor import GraphExecutor, RolloutConfig, load_rollout_config
from evigraph.training.samples import STEP_INDEX_KEY, STEP_VALUE_KEY, steps_from_lists
from evigraph.training.scripted_engine import LOGPROB, ScriptedEngine, ScriptedSamplingParams
from tests.agents.veri_r1.test_graph import ANSWER_REFUTE, CLAIM, PLAN, DictSearch

T = "The Eiffel Tower is 330 metres tall and was completed in 1899."
D = "The Eiffel Tower was completed in 1889. It is 330 metres tall."
RLSEEK_REPLY = (
    '## Step 1: Check "330 metres tall"\n- Evidence: <quote>It is 330 metres tall.</quote>\n- Evaluation: same.\n'
    '## Step 2: Check "completed in 1899"\n- Evidence: <quote>The tower was finished in 1889</quote>\n'
    '- Evaluation: 1889.\n## Final Output\n```json\n{"hallucination list": ["1899"]}\n```'
)


def _execute(executor: GraphExecutor, engine: ScriptedEngine, label: dict[str, Any], max_length: int = 4096) -> dict:
    params = ScriptedSamplingParams(temperature=0.9, max_tokens=64)
    return asyncio.run(
        executor.execute("<prompt>", json.dumps(label), params, max_length, engine.tokenizer, engine, images=None)
    )


def _layout_holds(sample: dict[str, Any], engine: ScriptedEngine, tokenizer: Any) -> None:
    """Every engine call saw exactly the sequence so far; action ranges are exactly the generated tokens."""
    tokens, ranges = sample["observation_tokens"], sample["action_ranges"]
    assert len(ranges) == len(engine.calls)
    for (prompt_ids, _), (start, _end) in zip(engine.calls, ranges, strict=True):
        assert prompt_ids == tokens[:start]  # prefix-stable: no re-tokenisation of earlier turns
    logprobs = sample["rollout_log_probs"]
    assert len(logprobs) == len(tokens)
    in_action = {t for a, b in ranges for t in range(a, b)}
    assert all((v == LOGPROB) == (t in in_action) for t, v in enumerate(logprobs))


def test_rlseek_episode_layout_reward_and_step_spans(qwen2_style_tokenizer: Any) -> None:
    executor = GraphExecutor(RolloutConfig(agent="rlseek", step_value="quote"))
    engine = ScriptedEngine(qwen2_style_tokenizer, [RLSEEK_REPLY])
    label = {"input": {"task": "summary", "source": D, "response": T}, "gold": {"spans": [[57, 61]]}}
    sample = _execute(executor, engine, label)
    _layout_holds(sample, engine, qwen2_style_tokenizer)
    (start, end) = sample["action_ranges"][0]
    assert qwen2_style_tokenizer.decode(sample["observation_tokens"][start:end]).startswith("## Step 1")
    assert sample["reward"] == pytest.approx(1 - (0 + 20 / 30) / 2) and sample["scores"] == sample["reward"]
    assert sample["extra_logs"]["rlseek/span"] == 1.0 and sample["truncated"] is False
    assert sample["extra_logs"]["evigraph_negative"] == 0.0  # gold has a span: not CAPO's negative class
    # The per-step lists rebuild each step's exact tokens (shifted by one, as OpenRLHF's action mask).
    steps = steps_from_lists(sample["extra_logs"][STEP_INDEX_KEY], sample["extra_logs"][STEP_VALUE_KEY])
    texts = [qwen2_style_tokenizer.decode(sample["observation_tokens"][a + 1 : b + 1]) for a, b, _ in steps]
    assert [t.splitlines()[0] for t in texts] == [
        '## Step 1: Check "330 metres tall"',
        '## Step 2: Check "completed in 1899"',
    ]
    assert [v for _, _, v in steps] == pytest.approx([0.0, -1 / 3])
    # The trainer's sampling fields, the graph's protocol fields.
    params = engine.calls[0][1]
    assert params.temperature == 0.9 and params.include_stop_str_in_output and params.skip_special_tokens is False


def test_veri_r1_two_search_episode_masks_the_information_turns(qwen2_style_tokenizer: Any) -> None:
    search = DictSearch()
    executor = GraphExecutor(
        RolloutConfig(agent="veri-r1", agent_config={"max_searches": 2}), resources={"search": search}
    )
    replies = [
        f"{PLAN}\n<search>Hog Island Light</search>",
        "<think>It is in Virginia. When was it first lit?</think>\n<search>Hog Island Light first lit</search>",
        ANSWER_REFUTE,
    ]
    engine = ScriptedEngine(qwen2_style_tokenizer, replies)
    gold = {"label": "REFUTES", "evidence": ["Hog Island Light_sentence_0", "Hog Island Light_sentence_3"]}
    sample = _execute(executor, engine, {"input": {"claim": CLAIM}, "gold": gold})
    _layout_holds(sample, engine, qwen2_style_tokenizer)
    tokens, ranges = sample["observation_tokens"], sample["action_ranges"]
    assert len(ranges) == 3 and search.queries == ["Hog Island Light", "Hog Island Light first lit"]
    between = [qwen2_style_tokenizer.decode(tokens[ranges[i][1] : ranges[i + 1][0]]) for i in range(2)]
    assert all("<information>" in text for text in between)  # environment text: outside every action range
    assert not any("<information>" in qwen2_style_tokenizer.decode(tokens[a:b]) for a, b in ranges)
    assert sample["reward"] > 0 and STEP_INDEX_KEY not in sample["extra_logs"]


def test_a_run_cut_by_max_length_is_flagged_truncated(qwen2_style_tokenizer: Any) -> None:
    executor = GraphExecutor(RolloutConfig(agent="rlseek"))
    engine = ScriptedEngine(qwen2_style_tokenizer, [RLSEEK_REPLY])
    label = {"input": {"task": "summary", "source": D, "response": T}, "gold": {"spans": [[57, 61]]}}
    full = _execute(executor, ScriptedEngine(qwen2_style_tokenizer, [RLSEEK_REPLY]), label)
    prompt_length = full["action_ranges"][0][0]
    sample = _execute(executor, engine, label, max_length=prompt_length + 10)
    assert sample["truncated"] is True and len(sample["observation_tokens"]) <= prompt_length + 10
    assert sample["extra_logs"]["rlseek/parse_ok"] == 0.0  # a cut reply is a parse failure (spec O7)


def test_bad_labels_and_configs_fail_with_the_reason(
    qwen2_style_tokenizer: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    executor = GraphExecutor(RolloutConfig(agent="rlseek"))
    engine = ScriptedEngine(qwen2_style_tokenizer, [RLSEEK_REPLY])
    with pytest.raises(ConfigError, match="not the JSON"):
        asyncio.run(executor.execute("p", "not json", ScriptedSamplingParams(), 100, qwen2_style_tokenizer, engine))
    with pytest.raises(ConfigError, match="retriever_url"):
        GraphExecutor(RolloutConfig(agent="veri-r1"))
    with pytest.raises(ConfigError, match="agent_config of rlseek"):
        GraphExecutor(RolloutConfig(agent="rlseek", agent_config={"max_new_tokens": 0}))
    monkeypatch.delenv("EVIGRAPH_ROLLOUT_CONFIG", raising=False)
    with pytest.raises(ConfigError, match="EVIGRAPH_ROLLOUT_CONFIG"):
        load_rollout_config()
    path = tmp_path / "rollout.json"
    path.write_text(json.dumps({"agent": "rlseek", "step_value": "quote"}))
    monkeypatch.setenv("EVIGRAPH_ROLLOUT_CONFIG", str(path))
    assert load_rollout_config().step_value == "quote"


def test_stepgap_generator_episode_with_a_frozen_judge(qwen2_style_tokenizer: Any) -> None:
    from tests.agents.stepgap.doubles import FakeNLI, judge_by_step
    from tests.agents.stepgap.test_graph import JUDGE
    from tests.graphs.test_search_r1 import QUESTION, TURNS
    from tests.graphs.test_search_r1 import DictSearch as PassageSearch

    judge = judge_by_step(JUDGE)
    config = RolloutConfig(
        agent="stepgap", reward="typed", reward_options={"preset": "typed_shape", "lam": 1.0}, outcome="em",
        step_value="bracket",
    )  # fmt: skip
    executor = GraphExecutor(config, resources={"search": PassageSearch(), "nli": FakeNLI(), "judge": judge})
    engine = ScriptedEngine(qwen2_style_tokenizer, TURNS)
    label = {"input": {"question": QUESTION, "golds": ["Providence"]}, "gold": {"golds": ["Providence"]}}
    sample = _execute(executor, engine, label)
    _layout_holds(sample, engine, qwen2_style_tokenizer)
    assert len(sample["action_ranges"]) == len(TURNS) and len(judge.calls) == len(TURNS)  # the judge is not the policy
    assert sample["reward"] == 1.0  # the outcome is EM; the brackets travel per step
    assert sample["extra_logs"]["stepgap/return"] == pytest.approx(0.70)  # 1 + (-0.10) + 0.05 + (-0.25)
    steps = steps_from_lists(sample["extra_logs"][STEP_INDEX_KEY], sample["extra_logs"][STEP_VALUE_KEY])
    assert [round(v, 2) for _, _, v in steps] == [-0.10, 0.05, -0.25]  # IE; MB after IE (+0.10); IE answer after MB
    for (a, b, _), (start, end) in zip(steps, sample["action_ranges"], strict=True):
        assert (a + 1, b + 1) == (start, end)  # each step is its whole policy turn


def test_a_graph_that_grades_itself_needs_a_frozen_judge() -> None:
    with pytest.raises(ConfigError, match="must not grade itself"):
        GraphExecutor(RolloutConfig(agent="stepgap", retriever_url="http://127.0.0.1:1/retrieve"))


def test_offline_veri_r1_takes_its_entries_from_the_json_label(qwen2_style_tokenizer: Any) -> None:
    from evigraph.training.data import prompt_line
    from evigraph.trajectory import Evidence

    entries = [Evidence(id="Hog Island Light_sentence_3", text="The first tower was lit in 1854."),
               Evidence(id="Hog Island Light_sentence_0", text="Hog Island Light stood in Virginia.")]  # fmt: skip
    gold = {"label": "REFUTES", "evidence": ["Hog Island Light_sentence_0", "Hog Island Light_sentence_3"]}
    line = prompt_line("veri-r1", {"id": "c1", "claim": CLAIM, "evidence": entries, "gold": gold})
    executor = GraphExecutor(RolloutConfig(agent="veri-r1", agent_config={"offline": True}))
    engine = ScriptedEngine(qwen2_style_tokenizer, [ANSWER_REFUTE])
    sample = asyncio.run(
        executor.execute(line["prompt"], line["label"], ScriptedSamplingParams(), 4096, qwen2_style_tokenizer, engine)
    )
    prompt = qwen2_style_tokenizer.decode(sample["observation_tokens"][: sample["action_ranges"][0][0]])
    assert "The first tower was lit in 1854." in prompt and sample["reward"] > 0


def test_execute_accepts_what_openrlhf_passes_and_later_keywords(qwen2_style_tokenizer: Any) -> None:
    executor = GraphExecutor(RolloutConfig(agent="rlseek"))
    engine = ScriptedEngine(qwen2_style_tokenizer, [RLSEEK_REPLY])
    label = json.dumps({"input": {"task": "summary", "source": D, "response": T}, "gold": {"spans": [[57, 61]]}})
    sample = asyncio.run(
        executor.execute(
            "p",
            label,
            ScriptedSamplingParams(),
            4096,
            qwen2_style_tokenizer,
            engine,
            images=None,
            session_id="future-keyword",
        )
    )
    assert sample["images"] is None and sample["action_ranges"]


def test_rag_zeval_episode_is_scored_strictly_from_the_exact_reply(qwen2_style_tokenizer: Any) -> None:
    from evigraph.agents.rag_zeval.prompts import assign_letters
    from evigraph.training.config import load_train_config

    shipped = load_train_config("rag-zeval")
    executor = GraphExecutor(RolloutConfig(agent="rag-zeval", agent_config=shipped.agent_config))
    reference = "The bridge over the river opened to traffic in March 1932. It is 503 metres long."
    candidates = ["It opened in March 1932.", "It opened in 1932 and is 900 metres long.", "It opened in 1950."]
    letters = assign_letters(3, seed=0, key="b1")
    evidence = "The bridge over the river opened to traffic in March 1932."
    labels = [[True], [True, False], [False]]
    items = sorted(
        ({"id": letters[i], "answer": c, "atomic_claims": [
            {"claim": f"claim {k}", "is_supported": s, "grounding_evidence": [evidence] if s else [], "analysis": "."}
            for k, s in enumerate(labels[i])]} for i, c in enumerate(candidates)),
        key=lambda item: item["id"],
    )  # fmt: skip
    reply = "```json\n" + json.dumps(items) + "\n```"
    engine = ScriptedEngine(qwen2_style_tokenizer, [reply])
    label = {"input": {"id": "b1", "question": "When did the bridge open?", "reference": reference,
                       "candidates": candidates}, "gold": {"alphas": [0, -1, -1.4]}}  # fmt: skip
    sample = _execute(executor, engine, label)
    _layout_holds(sample, engine, qwen2_style_tokenizer)
    # One policy turn, ended on the end-of-turn token: the reward reads the reply without it (strict JSON).
    assert len(sample["action_ranges"]) == 1 and sample["truncated"] is False
    assert sample["reward"] == pytest.approx(1.5)  # 1 > 1/2 > 0, every evidence string verbatim and 12 tokens
    assert sample["extra_logs"]["rag-zeval/format"] == 0.0 and sample["extra_logs"]["rag-zeval/claims"] == 4 / 3
    broken = ScriptedEngine(qwen2_style_tokenizer, [reply.replace("]", ",]", 1)])  # not JSON: no salvage in training
    assert _execute(executor, broken, label)["reward"] == -0.5
