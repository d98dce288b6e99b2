"""Constrained decoding for weak models (inference only): one regular expression per Search-R1 turn.

Reasoning is one or two sentences, each query 1–6 of the question's words starting with a content word, and the
answer a short ASCII phrase; built from the shared pieces of :mod:`evigraph.protocol.guides`.
"""

from __future__ import annotations

from evigraph.protocol.guides import TEXT, block, body_regex, sentence_regex, subject_words, words_regex

__all__ = ("MAX_ANSWER_CHARS", "turn_regex")

MAX_QUERY_WORDS = 6
MAX_ANSWER_CHARS = 60


def turn_regex(*, question: str, may_search: bool, max_block_chars: int | None = None) -> str:
    """The shape of one policy turn: a think block, then a search (while allowed) or the answer.

    >>> import re
    >>> regex = turn_regex(question="Who directed Jaws?", may_search=True)
    >>> bool(re.fullmatch(regex, "<think>I need the director.</think>\\n<search>Jaws directed</search>"))
    True
    >>> bool(re.fullmatch(regex, "<think>I need it.</think>\\n<search>the</search>"))  # no content word
    False
    """
    content, words = subject_words(question)
    query = words_regex(content, words, MAX_QUERY_WORDS) if content else body_regex(max_block_chars)
    sentence = sentence_regex(max_block_chars)
    think = block("think", f"{sentence}(?: {sentence})?")
    answer = block("answer", f"[A-Za-z0-9]{TEXT}{{0,{MAX_ANSWER_CHARS - 1}}}")
    action = f"(?:{block('search', query)}|{answer})" if may_search else answer
    return f"{think}\\n{action}"
