"""The prompt, in our own words. The claim and passage are untrusted: escaped, they cannot open or close a tag."""

from __future__ import annotations

from passage_check.protocol import PROTOCOL

__all__ = ("prompt",)

_PROMPT = """\
Decide whether the passage below supports the claim.
{instructions}
Write yes inside the answer tags if the passage supports the claim, and no otherwise.

Claim: {claim}
Passage: {passage}"""


def prompt(claim: str, passage: str) -> str:
    return _PROMPT.format(
        instructions=PROTOCOL.instructions(),
        claim=PROTOCOL.escape(claim).text,
        passage=PROTOCOL.escape(passage).text,
    )
