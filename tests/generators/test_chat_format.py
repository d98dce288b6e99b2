"""ChatFormat with the real SmolLM2 tokenizer (ChatML): environment wrapper, EOS handling, exact spans."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from evigraph.errors import ConfigError
from evigraph.generators.chat_format import ChatFormat
from evigraph.trajectory import Segment

PROMPT = [
    Segment(origin="prompt", role="system", text="You verify claims."),
    Segment(origin="prompt", role="user", text="Is the sky blue?"),
]
WRAPPER = "<|im_end|>\n<|im_start|>user\n{content}<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def chat(tiny_tokenizer: Any) -> ChatFormat:
    return ChatFormat(tiny_tokenizer)


def _text(chat: ChatFormat, ids: list[int]) -> str:
    return chat.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def test_environment_turn_wrapper_for_chatml(chat: ChatFormat) -> None:
    content = "<information>[e1] The sky is blue.</information>"
    assert chat.environment_text(content) == WRAPPER.format(content=content)
    assert (chat.turn_close, chat.turn_open) == (
        "<|im_end|>\n<|im_start|>user\n",
        "<|im_end|>\n<|im_start|>assistant\n",
    )
    # The wrapper is what the template itself prints for that conversation.
    conversation = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": content},
    ]
    templated = chat.tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    assert templated.endswith("a" + chat.environment_text(content))


def test_prompt_renders_through_the_template(chat: ChatFormat) -> None:
    text = chat.prompt_text(PROMPT)
    assert text == (
        "<|im_start|>system\nYou verify claims.<|im_end|>\n"
        "<|im_start|>user\nIs the sky blue?<|im_end|>\n<|im_start|>assistant\n"
    )
    rendered = chat.render(PROMPT)
    assert _text(chat, rendered.token_ids) == text
    assert rendered.spans == [(0, 0), (0, len(rendered.token_ids))]


def test_eos_finished_turn_does_not_double_the_end_marker(chat: ChatFormat) -> None:
    eos_id = chat.tokenizer.eos_token_id
    answer_ids = [*chat.tokenizer.encode("No.", add_special_tokens=False), eos_id]
    policy = Segment(origin="policy", text="No.<|im_end|>", token_ids=answer_ids, finish_reason="eos")
    transcript = [*PROMPT, policy, Segment(origin="environment", text="Are you sure?")]
    text = _text(chat, chat.render(transcript).token_ids)
    assert text.endswith("No.<|im_end|>\n<|im_start|>user\nAre you sure?<|im_end|>\n<|im_start|>assistant\n")
    assert "<|im_end|><|im_end|>" not in text
    assert chat.environment_text("x", after_eos=True) == "\n<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n"


def test_stop_finished_turn_gets_the_full_wrapper(chat: ChatFormat) -> None:
    policy = Segment(origin="policy", text="<search>sky</search>", finish_reason="stop")
    transcript = [*PROMPT, policy, Segment(origin="environment", text="<information>blue</information>")]
    text = _text(chat, chat.render(transcript).token_ids)
    assert text.endswith("<search>sky</search>" + WRAPPER.format(content="<information>blue</information>"))


def test_spans_partition_the_ids_and_policy_spans_are_the_stored_ids(chat: ChatFormat) -> None:
    first_ids = chat.tokenizer.encode(" <search>sky colour</search>", add_special_tokens=False)
    # Stored ids need not be the canonical tokenization of the text: they are what the model produced.
    odd_ids = [
        *chat.tokenizer.encode("The", add_special_tokens=False),
        *chat.tokenizer.encode(" answer", add_special_tokens=False),
    ]
    transcript = [
        *PROMPT,
        Segment(origin="policy", text=" <search>sky colour</search>", token_ids=first_ids, finish_reason="stop"),
        Segment(origin="environment", text="<information>[e1] blue</information>"),
        Segment(origin="policy", text="The answer", token_ids=odd_ids, finish_reason="length"),
        Segment(origin="environment", text="Finish now."),
        Segment(origin="policy", text="Yes"),  # a text-only segment: tokenized as a fallback
    ]
    rendered = chat.render(transcript)
    spans = rendered.spans
    assert len(spans) == len(transcript)
    assert spans[0] == (0, 0) and spans[1][0] == 0
    for (_, end), (start, _) in itertools.pairwise(spans[1:]):
        assert end == start  # contiguous, no gaps, no overlap
    assert spans[-1][1] == len(rendered.token_ids)
    assert rendered.token_ids[slice(*spans[2])] == first_ids
    assert rendered.token_ids[slice(*spans[4])] == odd_ids
    assert rendered.token_ids[slice(*spans[6])] == chat.tokenizer.encode("Yes", add_special_tokens=False)
    assert rendered.action_ranges(transcript) == [spans[2], spans[4], spans[6]]
    # segment_token_ids stores the same partition on the segments.
    with_ids = chat.segment_token_ids(transcript)
    assert [i for s in with_ids for i in (s.token_ids or [])] == rendered.token_ids
    assert _text(chat, rendered.token_ids[slice(*spans[3])]) == WRAPPER.format(
        content="<information>[e1] blue</information>"
    )


def test_render_requires_a_prompt_first(chat: ChatFormat) -> None:
    with pytest.raises(ConfigError):
        chat.render([Segment(origin="policy", text="x")])
    with pytest.raises(ConfigError):
        chat.render([*PROMPT, Segment(origin="policy", text="x"), PROMPT[1]])


async def test_consecutive_environment_segments_are_rejected_by_backends() -> None:
    from evigraph.generators import SamplingParams, ScriptedGenerator

    transcript = [
        *PROMPT,
        Segment(origin="policy", text="a"),
        Segment(origin="environment", text="one"),
        Segment(origin="environment", text="two"),
    ]
    with pytest.raises(ConfigError, match="consecutive environment"):
        await ScriptedGenerator(["x"]).continue_transcript(transcript, SamplingParams())


def test_render_rejects_consecutive_environment_segments(chat: ChatFormat) -> None:
    transcript = [
        *PROMPT,
        Segment(origin="policy", text="a"),
        Segment(origin="environment", text="one"),
        Segment(origin="environment", text="two"),
    ]
    with pytest.raises(ConfigError):
        chat.render(transcript)


def test_text_only_eos_turn_keeps_its_end_marker(chat: ChatFormat) -> None:
    policy = Segment(origin="policy", text="The sky is blue.", finish_reason="eos")
    transcript = [*PROMPT, policy, Segment(origin="environment", text="Why?")]
    text = _text(chat, chat.render(transcript).token_ids)
    assert text.endswith("The sky is blue." + WRAPPER.format(content="Why?"))
