"""The RLSeek graph with scripted detectors: a normal run with its reward and step spans, malformed output, the
re-quote turn (and why it never runs in training), a strict run with exact step token spans, the budget, the
claim variant, a failed backend, and the weak-model guide."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from evigraph.agents.rlseek.decoding import BACKED, CONTRADICTED, detection_guide
from evigraph.agents.rlseek.schemas import RLSeekConfig
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.graphs.kit.context import RunContext
from evigraph.graphs.rlseek import build_rlseek_graph
from tests.doubles import GuidedScripted

T = "The Eiffel Tower is 330 metres tall and was completed in 1899."
D = "The Eiffel Tower was completed in 1889. It is 330 metres tall."
GOOD = (
    '## Step 1: Check "330 metres tall"\n- Evidence: <quote>It is 330 metres tall.</quote>\n- Evaluation: same.\n'
    '## Step 2: Check "completed in 1899"\n- Evidence: <quote>completed in 1889</quote>\n- Evaluation: 1889.\n'
    '## Final Output\n```json\n{"hallucination list": ["1899"]}\n```'
)
PARAPHRASED = GOOD.replace("<quote>completed in 1889</quote>", "<quote>The tower was finished in 1889</quote>")
INPUT = {"id": "eiffel", "task": "summary", "source": D, "response": T, "gold": {"spans": [[57, 61]]}}


def _run(generator: Any, inputs: dict[str, Any] = INPUT, config: RLSeekConfig | None = None, **context: Any) -> Any:
    graph = build_rlseek_graph(None, config=config or RLSeekConfig(constrained=False))
    return asyncio.run(graph.ainvoke(inputs, context=RunContext(generator=generator, **context)))


def test_a_run_finds_the_span_checks_quotes_and_carries_its_reward() -> None:
    result = _run(ScriptedGenerator([GOOD]))
    output, trajectory = result["output"], result["trajectory"]
    assert [(s.start, s.end, s.text, s.quotes) for s in output.spans] == [(57, 61, "1899", (1,))]
    assert all(q.found and q.overlap == 1.0 for q in output.quotes) and output.quotes_valid
    assert trajectory.reward("final") == 1.0 and trajectory.reward_scalar == "final"
    verify = [s for s in trajectory.steps if s.kind == "verify"]
    turn = trajectory.segments[verify[0].segment_index].text
    assert [turn[a:b].splitlines()[0] for a, b in (s.char_span for s in verify)] == [
        '## Step 1: Check "330 metres tall"',
        '## Step 2: Check "completed in 1899"',
    ]
    assert trajectory.steps[-1].kind == "answer" and trajectory.steps[-1].text.startswith("## Final Output")
    assert [r.value for s in verify for r in s.rewards if r.type == "quote"] == [0.0, 0.0]


def test_a_paraphrased_quote_is_penalised_on_its_own_step() -> None:
    trajectory = _run(ScriptedGenerator([PARAPHRASED]))["trajectory"]
    assert trajectory.reward("penalty") == pytest.approx((0 + 20 / 30) / 2)
    assert trajectory.reward("final") == pytest.approx(1 - 1 / 3)
    shares = [r.value for s in trajectory.steps for r in s.rewards if r.type == "quote"]
    assert shares == pytest.approx([0.0, -1 / 3])


def test_malformed_output_is_a_parse_failure_not_a_crash() -> None:
    result = _run(ScriptedGenerator(["I think 1899 is wrong. hallucination list: [1899"]))
    output, trajectory = result["output"], result["trajectory"]
    assert not output.parse_ok and output.spans == () and not output.quotes_valid
    assert trajectory.reward("span") == 0.0 and trajectory.reward("final") == -0.5 and trajectory.error is None


def test_requote_sends_the_model_back_once_and_the_run_carries_no_reward() -> None:
    generator = ScriptedGenerator([PARAPHRASED, GOOD])
    config = RLSeekConfig(constrained=False, requote=True)
    result = _run(generator, config=config)
    output, trajectory = result["output"], result["trajectory"]
    assert output.requotes == 1 and all(q.found for q in output.quotes)
    note = next(s for s in trajectory.segments if s.origin == "environment")
    assert "The tower was finished in 1889" in note.text
    assert trajectory.rewards == [] and len(generator.calls) == 2
    # The bound holds when the second try paraphrases again, and the last turn is the one parsed.
    result = _run(ScriptedGenerator([PARAPHRASED, PARAPHRASED]), config=config)
    assert result["output"].requotes == 1 and not all(q.found for q in result["output"].quotes)


def test_requote_is_off_by_default_and_never_in_strict_runs(qwen2_style_tokenizer: Any) -> None:
    assert _run(ScriptedGenerator([PARAPHRASED]))["output"].requotes == 0
    generator = ScriptedGenerator([PARAPHRASED], tokenizer=qwen2_style_tokenizer)
    result = _run(generator, config=RLSeekConfig(constrained=False, requote=True), strict_tokens=True)
    assert result["output"].requotes == 0 and result["trajectory"].reward("final") is not None


def test_strict_run_gives_each_step_its_exact_tokens(qwen2_style_tokenizer: Any) -> None:
    generator = ScriptedGenerator([GOOD], tokenizer=qwen2_style_tokenizer)
    trajectory = _run(generator, strict_tokens=True)["trajectory"]
    ids = trajectory.token_ids()
    assert ids is not None and trajectory.timing.generated_tokens == len(trajectory.segments[-1].token_ids)
    for step in trajectory.steps:
        start, end = step.token_span
        assert qwen2_style_tokenizer.decode(ids[start:end]) == step.text
    rewarded = [s for s in trajectory.steps if any(r.type == "quote" for r in s.rewards)]
    assert [s.kind for s in rewarded] == ["verify", "verify"]


def test_the_budget_caps_the_turn_and_a_full_prompt_fails_cleanly(qwen2_style_tokenizer: Any) -> None:
    generator = ScriptedGenerator([GOOD], tokenizer=qwen2_style_tokenizer)
    trajectory = _run(generator, max_sequence_tokens=20)["trajectory"]
    assert trajectory.error is not None and trajectory.error.type == "BudgetExhausted"
    generator = ScriptedGenerator([GOOD], tokenizer=qwen2_style_tokenizer)
    graph = build_rlseek_graph(None, config=RLSeekConfig(constrained=False))
    prompt_size = None

    async def measure() -> Any:
        nonlocal prompt_size
        result = await graph.ainvoke(INPUT, context=RunContext(generator=generator, max_sequence_tokens=100_000))
        prompt_size = len(result["trajectory"].segments[0].token_ids)
        return result

    asyncio.run(measure())
    generator = ScriptedGenerator([GOOD], tokenizer=qwen2_style_tokenizer)
    result = _run(generator, max_sequence_tokens=prompt_size + 12)
    assert generator.calls[0].params.max_new_tokens <= 12
    assert result["trajectory"].segments[-1].finish_reason == "length" and not result["output"].parse_ok


def test_claim_variant_answers_in_answer_tags() -> None:
    reply = '## Step 1: x\n<quote>completed in 1889</quote>\n<answer>["1899"]</answer>'
    generator = ScriptedGenerator([reply])
    inputs = {**INPUT, "task": "claim"}
    result = _run(generator, inputs)
    assert [s.text for s in result["output"].spans] == ["1899"] and result["trajectory"].reward("final") == 1.0
    assert "</answer>" in generator.calls[0].params.stop


def test_a_failed_backend_is_recorded_on_the_trajectory() -> None:
    def broken(_transcript: Any, _params: Any) -> str:
        raise RuntimeError("engine died")

    result = _run(ScriptedGenerator(broken))
    assert result["trajectory"].error.where == "generate" and not result["output"].parse_ok


def test_data_to_text_json_sources_and_qa_questions_reach_the_prompt() -> None:
    generator = ScriptedGenerator([GOOD])
    data = {"name": "Harbour Lights", "stars": 4.5}
    _run(generator, {"task": "data-to-text", "source": data, "response": "Harbour Lights has 5 stars."})
    assert json.dumps(data) in generator.calls[0].transcript[0].text
    generator = ScriptedGenerator([GOOD])
    _run(generator, {"task": "qa", "source": "passage 1: p", "response": "a", "question": "Who <b>?</b>"})
    assert "<question>\nWho ‹b>?‹/b>\n</question>" in generator.calls[0].transcript[0].text


@pytest.mark.parametrize("task", ["summary", "claim"])
def test_the_weak_model_guide_accepts_a_well_formed_detection(task: str) -> None:
    ending = (
        '<answer>["1899", "in 1899"]</answer>'
        if task == "claim"
        else ('## Final Output\n```json\n{"hallucination list": ["1899", "in 1899"]}\n```')
    )
    reply = (
        f"## Step 1: Check the year\n- Evidence: <quote>completed in 1889</quote>\n- Evaluation: {CONTRADICTED}\n"
        f"## Step 2: Check the height\n- Evidence: <quote>It is 330 metres tall.</quote>\n- Evaluation: {BACKED}\n"
        + ending
    )
    pattern = re.compile(detection_guide(task))
    assert pattern.fullmatch(reply)
    assert not pattern.fullmatch(reply.replace("## Step 2", "## Step 3"))  # numbers count up
    assert not pattern.fullmatch(reply.replace("<quote>completed", "<quote><quote>completed"))
    assert not pattern.fullmatch(reply.replace(BACKED, "Same."))  # the evaluation is one of the fixed verdicts


def test_guided_runs_send_the_guide_and_the_demonstration() -> None:
    reply = (
        '## Step 1: Check "and was completed in 1899."\n- Evidence: <quote>The Eiffel Tower was completed in 1889.'
        f"</quote>\n- Evaluation: {CONTRADICTED}\n## Final Output\n```json\n"
        '{"hallucination list": ["and was completed in 1899."]}\n```'
    )
    generator = GuidedScripted([reply])
    result = _run(generator, config=RLSeekConfig(constrained=True))
    assert generator.calls[0].params.guide is not None and result["output"].parse_ok
    assert [(sp.start, sp.end) for sp in result["output"].spans] == [(36, 62)] and result["output"].quotes[0].found
    assert "For example" in generator.calls[0].transcript[0].text


def test_with_the_texts_the_guide_only_admits_verbatim_quotes_and_response_clauses() -> None:
    pattern = re.compile(detection_guide("summary", source=D, response=T))
    reply = (
        '## Step 1: Check "The Eiffel Tower is 330 metres tall"\n- Evidence: <quote>The Eiffel Tower was completed '
        f'in 1889.</quote>\n- Evaluation: {BACKED}\n## Final Output\n```json\n{{"hallucination list": '
        '["and was completed in 1899."]}\n```'
    )
    assert pattern.fullmatch(reply)
    assert not pattern.fullmatch(reply.replace("completed in 1889.</quote>", "finished in 1889.</quote>"))
    assert not pattern.fullmatch(reply.replace('["and was completed in 1899."]', '["1899"]'))  # not a clause of T
    assert pattern.fullmatch(reply.replace('["and was completed in 1899."]', "[]"))
