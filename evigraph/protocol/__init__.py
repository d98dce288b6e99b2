"""The tag protocol layer: escaping untrusted text, tag protocols, and ``## Step N`` blocks.

- :mod:`~evigraph.protocol.escaping` -- length-preserving, reversible neutralisation of untrusted text.
- :mod:`~evigraph.protocol.tags` -- one :class:`TagProtocol` declaration per method renders the format
  instructions, parses model text totally, and feeds the format reward. Each method's protocol lives with
  its agent (``evigraph.agents.veri_r1.protocol``, ``...search_r1.protocol``, ``...rlseek.protocol``).
- :mod:`~evigraph.protocol.steps` -- Markdown ``## Step N`` blocks with their quotes.
"""

from __future__ import annotations

from evigraph.protocol.escaping import DEFAULT_GUARDS, EscapedText, Guard, Guards, escape_untrusted, neutralize
from evigraph.protocol.steps import ParsedSteps, Section, StepBlock, parse_steps
from evigraph.protocol.tags import (
    Block,
    FormatIssue,
    IssueCode,
    ParsedText,
    ParsedTranscript,
    TagProtocol,
    TagSpec,
    Writer,
)

__all__ = (
    "DEFAULT_GUARDS",
    "Block",
    "EscapedText",
    "FormatIssue",
    "Guard",
    "Guards",
    "IssueCode",
    "ParsedSteps",
    "ParsedText",
    "ParsedTranscript",
    "Section",
    "StepBlock",
    "TagProtocol",
    "TagSpec",
    "Writer",
    "escape_untrusted",
    "neutralize",
    "parse_steps",
)
