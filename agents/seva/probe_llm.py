"""The LLM half of SEVA's Probe stage (specs/seva.md §2.4, open point O15): :func:`perturb_with_llm` asks a model
for a probe where the rules find no site, and :func:`llm_type_check` is the filter's second-model pass that names
a probe's error independently. The prompts are :func:`~evigraph.agents.seva.prompts.rewrite_prompt` and
:func:`~evigraph.agents.seva.prompts.type_check_prompt`.
"""

from __future__ import annotations

from pydantic import BaseModel

from evigraph.agents.seva.probe_schema import STRATEGY_CATEGORIES, Perturbation, Strategy
from evigraph.agents.seva.probe_text import is_month, is_year, normalise, tokens
from evigraph.agents.seva.prompts import rewrite_prompt, type_check_prompt, unescape_slot
from evigraph.agents.seva.schemas import ErrorType
from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.trajectory import Segment

__all__ = ("RewriteReply", "TypeCheckReply", "llm_type_check", "perturb_with_llm")


class RewriteReply(BaseModel):
    """The rewriting model's answer: the perturbed claim and the words it replaced ("" for an insertion)."""

    perturbed_claim: str
    changed_from: str
    changed_to: str


class TypeCheckReply(BaseModel):
    """The checking model's reading of a probe: the error type it sees, and whether the claim reads well and the
    change can be spotted."""

    error_type: str
    fluent: bool
    noticeable: bool


def _llm_category(strategy: Strategy, changed_from: str) -> ErrorType:
    if strategy == "numerical_perturbation":
        moved_date = any(is_year(t.text) or is_month(t.text) for t in tokens(changed_from))
        return "temporal_shift" if moved_date else "numerical_exaggeration"
    return STRATEGY_CATEGORIES[strategy][0]


async def perturb_with_llm(
    generator: Generator,
    claim: str,
    source: str,
    strategy: Strategy,
    *,
    params: SamplingParams | None = None,
) -> Perturbation | None:
    """Ask ``generator`` for a probe of ``strategy``; ``None`` when the call fails or the claim comes back
    unchanged. The result is unfiltered: pass it through
    :func:`~evigraph.agents.seva.probe_filter.probe_problems` and :func:`llm_type_check`."""
    transcript = [Segment(origin="prompt", role="user", text=rewrite_prompt(claim, source, strategy))]
    result = await generator.structured(transcript, RewriteReply, params)
    reply = result.value
    if reply is None:
        return None
    # The model saw "<" as "&lt;"; undo that unless the claim really contained the entity.
    restore = unescape_slot if "&lt;" not in claim and "&gt;" not in claim else str
    perturbed = restore(reply.perturbed_claim).strip()
    if not perturbed or normalise(perturbed) == normalise(claim):
        return None
    before, after = restore(reply.changed_from).strip(), restore(reply.changed_to).strip()
    return Perturbation(
        claim=perturbed,
        original=claim,
        strategy=strategy,
        category=_llm_category(strategy, before),
        before=before,
        after=after,
        method="llm",
    )


def _error_text(error: object) -> str:
    if error is None:
        return "no value returned"
    return str(getattr(error, "message", None) or error)


async def llm_type_check(
    generator: Generator, p: Perturbation, source: str, *, params: SamplingParams | None = None
) -> list[str]:
    """The second-model check of ``p``: problems in words, empty when the checker names ``p.category`` and finds
    the claim fluent and the change noticeable."""
    transcript = [Segment(origin="prompt", role="user", text=type_check_prompt(p.original, p.claim, source))]
    result = await generator.structured(transcript, TypeCheckReply, params)
    reply = result.value
    if reply is None:
        return [f"type check failed: {_error_text(result.error)}"]
    problems = []
    named = reply.error_type.strip().lower().replace("-", "_").replace(" ", "_")
    if named != p.category:
        problems.append(f"the checker reads the error as {reply.error_type!r}, not {p.category!r}")
    if not reply.fluent:
        problems.append("the checker finds the perturbed claim not fluent")
    if not reply.noticeable:
        problems.append("the checker finds the change not noticeable")
    return problems
