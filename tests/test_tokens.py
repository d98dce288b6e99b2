"""The strict token contract: character spans → token spans, rollout logprobs, strict rendering, the sequence budget.

Span mapping is checked against an independent oracle: for byte-level BPE tokenizers (SmolLM2's and a
Qwen2-style one) every token's exact bytes are known from its vocabulary string, so the tokens holding a
character's bytes can be found by byte arithmetic, with no decoding at all.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evigraph.errors import TokenContractError
from evigraph.generators.chat_format import ChatFormat
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.tokens import TokenOffsets, TurnPlan, char_span_to_token_span, plan_turn, rollout_logprobs, token_format
from evigraph.trajectory import Segment

# -- the byte-level oracle ----------------------------------------------------------------------------------


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte ↔ printable-character table, inverted (written from its definition)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[chr(byte)] = byte
        else:
            table[chr(256 + extra)] = byte
            extra += 1
    return table


BYTE_DECODER = _byte_decoder()


def token_bytes(tokenizer: Any, token_id: int) -> bytes:
    token = tokenizer.convert_ids_to_tokens(token_id)
    if token_id in tokenizer.all_special_ids or token in tokenizer.get_added_vocab():
        return token.encode("utf-8")
    return bytes(BYTE_DECODER[c] for c in token)


def oracle_span(tokenizer: Any, ids: list[int], text: str, start: int, end: int) -> tuple[int, int]:
    """The tokens holding the bytes of ``text[start:end]``, by byte offsets."""
    token_ends, position = [], 0
    for token_id in ids:
        position += len(token_bytes(tokenizer, token_id))
        token_ends.append(position)
    first_byte = len(text[:start].encode("utf-8"))
    last_byte = len(text[:end].encode("utf-8")) - 1
    t0 = next(k for k, stop in enumerate(token_ends) if stop > first_byte)
    t1 = next(k for k, stop in enumerate(token_ends) if stop > last_byte) + 1
    return t0, t1


PIECES = st.one_of(
    st.sampled_from(list("abc xyz\n#:.,0123456789")),
    st.sampled_from(["## Step ", "<quote>", "</quote>", "é", "ö", "日本", "😀", "👩\u200d🔬", "\t"]),
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="\ufffd"),
)
TEXTS = st.lists(PIECES, min_size=1, max_size=30).map("".join)
"""Step headers, quote tags, accents, CJK, emoji (with a zero-width joiner) and any other character."""


def _check_random_spans(tokenizer: Any, text: str, data: st.DataObject) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    if not ids:
        return
    chat = ChatFormat(tokenizer)
    offsets = TokenOffsets(ids, chat.decode)
    decoded = offsets.text
    # The oracle reads bytes: skip the rare characters a vocabulary cannot represent (they decode to U+FFFD).
    assume(b"".join(token_bytes(tokenizer, i) for i in ids) == decoded.encode("utf-8") and decoded)
    start = data.draw(st.integers(0, len(decoded) - 1), label="start")
    end = data.draw(st.integers(start + 1, len(decoded)), label="end")
    t0, t1 = offsets.token_span(start, end)
    assert (t0, t1) == oracle_span(tokenizer, ids, decoded, start, end)
    assert decoded[start:end] in chat.decode(ids[t0:t1])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, data=st.data())
def test_spans_match_byte_offsets_on_smollm2(tiny_tokenizer: Any, text: str, data: st.DataObject) -> None:
    _check_random_spans(tiny_tokenizer, text, data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS, data=st.data())
def test_spans_match_byte_offsets_on_a_qwen2_style_tokenizer(
    qwen2_style_tokenizer: Any, text: str, data: st.DataObject
) -> None:
    _check_random_spans(qwen2_style_tokenizer, text, data)


def test_an_emoji_split_over_byte_tokens_belongs_to_all_of_them(qwen2_style_tokenizer: Any) -> None:
    tokenizer = qwen2_style_tokenizer
    text = "ab😀cd"
    ids = tokenizer.encode(text, add_special_tokens=False)
    emoji_tokens = [i for i, token_id in enumerate(ids) if token_bytes(tokenizer, token_id)[:1] >= b"\x80"]
    assert len(emoji_tokens) >= 2  # the small vocabulary has no merge for the emoji's four bytes
    chat = ChatFormat(tokenizer)
    assert char_span_to_token_span(ids, 2, 3, chat.decode) == (emoji_tokens[0], emoji_tokens[-1] + 1)
    # The characters after it start right after its last byte piece.
    assert char_span_to_token_span(ids, 3, 5, chat.decode)[0] == emoji_tokens[-1] + 1


def test_step_blocks_inside_one_policy_segment_on_generated_ids(tiny_tokenizer: Any) -> None:
    """Non-canonical ids (each character its own token, as a sampling model may emit) still map exactly."""
    chat = ChatFormat(tiny_tokenizer)
    text = "## Step 1\nQuote <quote>é</quote>\n## Step 2\nDone."
    ids = [token_id for char in text for token_id in tiny_tokenizer.encode(char, add_special_tokens=False)]
    assert chat.decode(ids) == text
    start = text.index("## Step 2")
    t0, t1 = char_span_to_token_span(ids, start, len(text), chat.decode)
    assert chat.decode(ids[t0:t1]) == text[start:]
    assert (t0, t1) == oracle_span(tiny_tokenizer, ids, text, start, len(text))


def test_bad_offsets_and_empty_spans() -> None:
    offsets = TokenOffsets([0, 1], lambda ids: "".join(["ab", "cd"][i] for i in ids))
    assert offsets.token_span(2, 2) == (1, 1)  # a token boundary
    assert offsets.token_span(1, 1) == (1, 1)  # inside token 0: the next boundary
    assert offsets.token_span(0, 4) == (0, 2)
    with pytest.raises(ValueError, match="outside the text"):
        offsets.token_span(3, 5)


# -- strict mode ---------------------------------------------------------------------------------------------


def test_text_backends_have_no_token_format_and_strict_runs_refuse_them(tiny_tokenizer: Any) -> None:
    text_backend = ScriptedGenerator(["x"])
    assert token_format(text_backend, strict=False) is None
    with pytest.raises(TokenContractError, match="text backend"):
        token_format(text_backend, strict=True)
    token_backend = ScriptedGenerator(["x"], tokenizer=tiny_tokenizer)
    assert token_format(token_backend, strict=True) is token_backend.chat_format


def test_strict_render_never_re_encodes_policy_text(tiny_tokenizer: Any) -> None:
    chat = ChatFormat(tiny_tokenizer)
    transcript = [Segment(origin="prompt", role="user", text="Q?"), Segment(origin="policy", text="A.")]
    assert chat.render(transcript).token_ids  # inference: the text is encoded as a fallback
    with pytest.raises(TokenContractError, match="re-encodes"):
        chat.render(transcript, strict=True)
    with pytest.raises(TokenContractError):
        chat.segment_token_ids(transcript, strict=True)


def test_rollout_logprobs_align_with_the_sequence() -> None:
    segments = [
        Segment(origin="prompt", role="user", text="Q", token_ids=[1, 2, 3]),
        Segment(origin="policy", text="A", token_ids=[4, 5], logprobs=[-0.5, -0.25]),
        Segment(origin="environment", text="E", token_ids=[6]),
        Segment(origin="policy", text="B", token_ids=[7], logprobs=[-1.0]),
    ]
    assert rollout_logprobs(segments) == [0.0, 0.0, 0.0, -0.5, -0.25, 0.0, -1.0]
    no_logprobs = [*segments[:3], Segment(origin="policy", text="B", token_ids=[7])]
    with pytest.raises(TokenContractError, match="no logprobs"):
        rollout_logprobs(no_logprobs)
    assert rollout_logprobs(no_logprobs, strict=False)[-1] == 0.0
    with pytest.raises(TokenContractError, match="no token ids"):
        rollout_logprobs([Segment(origin="prompt", role="user", text="Q")])


# -- the whole-sequence budget -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "limit", "expected"),
    [
        (100, None, TurnPlan(final=False, max_new_tokens=512)),  # unbounded
        (100, 2000, TurnPlan(final=False, max_new_tokens=512)),  # 512 + 800 + 256 fit in 1900
        (500, 2000, TurnPlan(final=True, max_new_tokens=256)),  # 1500 left: only the final turn fits after a search
        (1900, 2000, TurnPlan(final=True, max_new_tokens=100)),  # the final turn gets what is left
        (432, 2000, TurnPlan(final=False, max_new_tokens=512)),  # 1568 left = 512 + 800 + 256 exactly: still fits
        (433, 2000, TurnPlan(final=True, max_new_tokens=256)),  # 1567 left: one short, the final turn
        (1999, 2000, TurnPlan(final=True, max_new_tokens=1)),  # a single token left is still a turn
        (2000, 2000, None),  # nothing left at all
    ],
)
def test_plan_turn(used: int, limit: int | None, expected: TurnPlan | None) -> None:
    assert plan_turn(used=used, turn_cap=512, final_cap=256, max_observation=800, limit=limit) == expected
