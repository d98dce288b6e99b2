"""SEVA's Probe stage (specs/seva.md §2.4): turn an Attributable (claim, source) pair into a Not Attributable probe
with one of six perturbation strategies, and filter the probes. This module is the stage's public face; the
work is done in:

- :mod:`.probe_schema`: the strategies, the categories each produces, and :class:`Perturbation`;
- :mod:`.probe_rules`: :func:`perturb`, one deterministic edit (swap a name, move a number or a date, flip the
  polarity, bolt on a qualifier or an unverifiable detail), with entity sites from :mod:`.probe_entities`
  (spaCy NER, or capitalised chunks without it) and word lists from :mod:`.probe_lexicon`;
- :mod:`.probe_filter`: :func:`probe_problems`, the rule half of the filter, read off the word diff;
- :mod:`.probe_llm`: :func:`perturb_with_llm` where the rules find no site, and :func:`llm_type_check`, the
  second-model half of the filter (prompts in :mod:`.prompts`).

Every probe makes one small edit whose exact text is recorded (``before`` → ``after``), so a reviewer and the
verifier's fix suggestion can point at it.
"""

from evigraph.agents.seva.probe_filter import MAX_EDIT_WORDS, MAX_GROWTH, MIN_ROOM_CHARS, accept, probe_problems
from evigraph.agents.seva.probe_llm import RewriteReply, TypeCheckReply, llm_type_check, perturb_with_llm
from evigraph.agents.seva.probe_rules import perturb
from evigraph.agents.seva.probe_schema import STRATEGIES, STRATEGY_CATEGORIES, Perturbation, Strategy, strategies_for
from evigraph.agents.seva.prompts import rewrite_prompt, type_check_prompt

__all__ = (
    "MAX_EDIT_WORDS",
    "MAX_GROWTH",
    "MIN_ROOM_CHARS",
    "STRATEGIES",
    "STRATEGY_CATEGORIES",
    "Perturbation",
    "RewriteReply",
    "Strategy",
    "TypeCheckReply",
    "accept",
    "llm_type_check",
    "perturb",
    "perturb_with_llm",
    "probe_problems",
    "rewrite_prompt",
    "strategies_for",
    "type_check_prompt",
)
