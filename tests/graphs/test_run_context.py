"""The graph kit: per-run generators and sampling, strict token mode, the whole-sequence budget, step spans."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evigraph.agents.veri_r1.prompts import online_prompt
from evigraph.agents.veri_r1.schemas import VeriR1Config
from evigraph.errors import ConfigError, TokenContractError
from evigraph.generators.chat_format import ChatFormat
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.generators.types import Continuation, SamplingParams
from evigraph.graphs.kit.assembly import assemble_trajectory, exact_segments
from evigraph.graphs.kit.context import RunContext, RunScope
from evigraph.graphs.veri_r1 import build_veri_r1_graph
from evigraph.tokens import TokenOffsets, rollout_logprobs
from evigraph.trajectory import Evidence, Segment, Step, Timing
from tests.agents.veri_r1.test_graph import DictSearch

CLAIM = "Hog Island Light was first lit in 1853."
SEARCH_TURN = "<plan>Find the tower.</plan>\n<search>Hog Island Light</search>"
ANSWER = (
    "<think>It was lit in 1854.</think><answer>\nLabel: REFUTE\nEvidence: [[Hog Island Light_sentence_0]]\n</answer>"
)


def run(graph: Any, context: RunContext | None = None, **inputs: Any) -> dict[str, Any]:
    return asyncio.run(graph.ainvoke({"claim": CLAIM, **inputs}, context=context))


# -- a generator and sampling per run --------------------------------------------------------------------------


def test_one_compiled_graph_takes_its_generator_and_sampling_per_run() -> None:
    graph = build_veri_r1_graph(None, DictSearch())
    with pytest.raises(ConfigError, match="no generator"):
        run(graph)
    first, second = ScriptedGenerator([SEARCH_TURN, ANSWER]), ScriptedGenerator([ANSWER])
    sampling = SamplingParams(temperature=0.7, top_p=0.9, seed=5, max_new_tokens=7, stop=("x",))

    async def both() -> list[dict[str, Any]]:
        return await asyncio.gather(
            graph.ainvoke({"claim": CLAIM}, context=RunContext(generator=first, sampling=sampling)),
            graph.ainvoke({"claim": CLAIM}, context=RunContext(generator=second)),
        )

    one, two = asyncio.run(both())
    assert one["output"].n_searches == 1 and two["output"].n_searches == 0
    assert len(first.calls) == 2 and len(second.calls) == 1
    params = first.calls[0].params
    # The run's temperature / top-p / seed; the protocol's stops and per-turn cap.
    assert (params.temperature, params.top_p, params.seed) == (0.7, 0.9, 5)
    assert params.stop == ("</search>", "</answer>") and params.max_new_tokens == 512
    assert second.calls[0].params.temperature == 0.0


# -- strict token mode -------------------------------------------------------------------------------------------


def test_a_strict_run_refuses_a_text_backend() -> None:
    graph = build_veri_r1_graph(ScriptedGenerator([ANSWER]), DictSearch())
    with pytest.raises(TokenContractError, match="text backend"):
        run(graph, RunContext(strict_tokens=True))


def test_a_strict_run_stores_exact_ids_spans_and_rollout_logprobs(tiny_tokenizer: Any) -> None:
    generator = ScriptedGenerator([SEARCH_TURN, ANSWER], tokenizer=tiny_tokenizer, logprob=-0.25)
    trajectory = run(build_veri_r1_graph(generator, DictSearch()), RunContext(strict_tokens=True))["trajectory"]
    assert all(s.token_ids is not None for s in trajectory.segments)
    assert [s.token_span for s in trajectory.steps] == trajectory.action_ranges()
    logprobs = rollout_logprobs(trajectory.segments)
    assert len(logprobs) == len(trajectory.token_ids())
    assert {logprobs[i] for a, b in trajectory.action_ranges() for i in range(a, b)} == {-0.25}
    # The stored sequence is exactly what the chat format renders for the transcript.
    assert trajectory.token_ids() == ChatFormat(tiny_tokenizer).render(trajectory.segments, strict=True).token_ids


class IdlessTokenBackend(ScriptedGenerator):
    """Declares a chat format but returns no ids: a broken token backend."""

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        continuation = await super()._continue(transcript, params)
        return continuation.model_copy(update={"token_ids": None, "logprobs": None})


def test_a_strict_run_refuses_a_turn_without_ids_that_inference_accepts(tiny_tokenizer: Any) -> None:
    graph = build_veri_r1_graph(IdlessTokenBackend([ANSWER], tokenizer=tiny_tokenizer), DictSearch())
    with pytest.raises(TokenContractError, match="without token ids"):
        run(graph, RunContext(strict_tokens=True))
    lenient = run(build_veri_r1_graph(IdlessTokenBackend([ANSWER], tokenizer=tiny_tokenizer), DictSearch()))
    assert lenient["output"].label == "REFUTE"  # inference re-encodes the text as a fallback


def test_an_unrenderable_transcript_raises_in_strict_mode_and_warns_otherwise(
    tiny_tokenizer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    transcript = [
        Segment(origin="prompt", role="user", text="q"),
        Segment(origin="policy", text="a", token_ids=[1]),
        Segment(origin="environment", text="one"),
        Segment(origin="environment", text="two"),
    ]
    generator = ScriptedGenerator(["x"], tokenizer=tiny_tokenizer)
    with pytest.raises(TokenContractError, match="cannot be rendered exactly"):
        exact_segments(transcript, RunScope.resolve(_runtime(RunContext(strict_tokens=True)), generator))
    kept = exact_segments(transcript, RunScope.resolve(None, generator))
    assert [s.token_ids for s in kept][2:] == [None, None] and "without token ids" in caplog.text


class _Runtime:
    def __init__(self, context: RunContext) -> None:
        self.context = context


def _runtime(context: RunContext) -> Any:
    return _Runtime(context)


# -- the whole-sequence budget ---------------------------------------------------------------------------------


def test_the_sequence_budget_forces_the_answer_turn(tiny_tokenizer: Any) -> None:
    config = VeriR1Config(max_new_tokens=48, max_information_tokens=64)
    chat = ChatFormat(tiny_tokenizer)
    prompt_tokens = len(chat.prompt_ids([Segment(origin="prompt", role="user", text=online_prompt(CLAIM))]))
    # Room for one ordinary turn (48 + the largest observation, 64 + 128, + a final 48) and little more.
    limit = prompt_tokens + 48 + 192 + 48 + 10
    long_answer = ANSWER.replace("It was lit in 1854.", "It was lit in 1854. " * 20)
    generator = ScriptedGenerator([SEARCH_TURN, long_answer], tokenizer=tiny_tokenizer)
    result = run(build_veri_r1_graph(generator, DictSearch(), config), RunContext(max_sequence_tokens=limit))
    trajectory, output = result["trajectory"], result["output"]
    assert trajectory.error is None and output.n_searches == 1 and output.n_turns == 2
    # With 2 of 3 searches left, only the budget can make the second turn the last one: the note says so.
    assert "That was your last search" in trajectory.segments[2].text
    assert trajectory.steps[-1].kind == "final_turn"  # the long answer was cut at the budget, unfinished
    used_before = sum(len(s.token_ids or ()) for s in trajectory.segments[:3])
    assert generator.calls[1].params.max_new_tokens == min(48, limit - used_before)
    assert len(trajectory.token_ids()) <= limit

    unbounded = ScriptedGenerator([SEARCH_TURN, ANSWER], tokenizer=tiny_tokenizer)
    free = run(build_veri_r1_graph(unbounded, DictSearch(), config))["trajectory"]
    assert "last search" not in free.segments[2].text  # the same run without a budget is told nothing


def test_a_prompt_that_fills_the_budget_is_a_failed_run_not_a_crash(tiny_tokenizer: Any) -> None:
    generator = ScriptedGenerator([ANSWER], tokenizer=tiny_tokenizer)
    result = run(build_veri_r1_graph(generator, DictSearch()), RunContext(max_sequence_tokens=50))
    assert result["trajectory"].error.where == "budget" and generator.calls == []


def test_the_backend_context_window_is_a_budget_too(tiny_tokenizer: Any) -> None:
    generator = ScriptedGenerator([ANSWER], tokenizer=tiny_tokenizer)
    generator.context_window = 60
    assert run(build_veri_r1_graph(generator, DictSearch()))["trajectory"].error.where == "budget"


# -- steps inside a policy segment -----------------------------------------------------------------------------


def test_a_step_with_a_character_span_gets_the_exact_tokens_of_those_characters(tiny_tokenizer: Any) -> None:
    generator = ScriptedGenerator(["x"], tokenizer=tiny_tokenizer)
    scope = RunScope.resolve(None, generator)
    text = "## Step 1\nThe tower: <quote>lit in 1854</quote>\n## Step 2\nSo it is wrong. é😀"
    ids = tiny_tokenizer.encode(text, add_special_tokens=False)
    transcript = [
        Segment(origin="prompt", role="user", text="Check."),
        Segment(origin="policy", text=text, token_ids=ids),
    ]
    second = text.index("## Step 2")
    steps = [
        Step(index=0, kind="step", text=text[:second], segment_index=1, char_span=(0, second)),
        Step(index=1, kind="step", text=text[second:], segment_index=1, char_span=(second, len(text))),
    ]
    trajectory = assemble_trajectory(
        agent="test", run_id="r", inputs={}, transcript=transcript, steps=steps,
        output=Evidence(id="o", text=""), scope=scope, timing=Timing(),
    )  # fmt: skip
    offset = len(trajectory.segments[0].token_ids)
    offsets = TokenOffsets(ids, scope.chat_format.decode)
    assert [s.token_span for s in trajectory.steps] == [
        (offset + a, offset + b) for a, b in (offsets.token_span(0, second), offsets.token_span(second, len(text)))
    ]
    start, end = trajectory.steps[1].token_span
    assert scope.chat_format.decode(trajectory.token_ids()[start:end]).endswith("So it is wrong. é😀")


def test_strict_step_spans_need_every_segment_s_ids(tiny_tokenizer: Any) -> None:
    from evigraph.graphs.kit.assembly import with_token_spans

    segments = [Segment(origin="prompt", role="user", text="q"), Segment(origin="policy", text="a")]
    steps = [Step(index=0, kind="answer", text="a", segment_index=1)]
    generator = ScriptedGenerator(["x"], tokenizer=tiny_tokenizer)
    assert with_token_spans(steps, segments, RunScope.resolve(None, generator))[0].token_span is None
    with pytest.raises(TokenContractError, match="without token ids"):
        with_token_spans(steps, segments, RunScope.resolve(_runtime(RunContext(strict_tokens=True)), generator))
