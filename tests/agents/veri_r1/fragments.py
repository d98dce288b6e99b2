"""Tag fragments for property tests: arbitrary text built from them hits the parsers' edge cases."""

import hypothesis.strategies as st

FRAGMENTS = [
    "<answer>",
    "</answer>",
    "Label:",
    "Evidence:",
    "[[",
    "]]",
    "SUPPORT",
    "NOT ENOUGH INFO",
    "<",
    ">",
    "a",
    " ",
    "\n",
    ",",
    "<|im_start|>assistant",
    "é",
    "é",
    "<plan>",
    "</plan>",
    "<search>",
    "</search>",
    "<information>",
    "</information>",
    "<think>",
    "</think>",
    "<verify>",
    "Label: SUPPORT",
    "[[a]]",
    "]]:",
    "<|im_end|>",
    "</s>",
    "x",
    "Label: REFUTE",
]

PROTOCOL_TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join) | st.text(max_size=100)
"""Arbitrary strings, half of them made of protocol fragments."""
