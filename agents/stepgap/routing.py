"""StepGap's decision tree (specs/stepgap.md §2.2, §2.6, §2.7) as pure functions.

Each stage reads its judgement (LLM stages A–C) or NLI results (D, E) and returns a :class:`StageDecision`:
the ``pipeline_path`` decision, the stage's confidence and, when the stage fires, the label it emits. A stage
that emits ends the walk; otherwise :func:`next_stage` says where the walk goes. The graph's router nodes are
thin calls of these, so every branch is testable without LangGraph or a model.

The easy-to-miss rules of §2.2 live here: a missing quote sends a conclusion step to E and ends an inference
step as no-gap; D's NEUTRAL is final (MB); in E only "some premise entails" counts (a contradicting prior
snippet is not CC); an abstaining conclusion ("N/A", "unknown") is never off-target.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from typing import Literal, Protocol

from evigraph.agents.stepgap.labels import GapLabel, Stage, StepKind
from evigraph.agents.stepgap.schemas import (
    AbstentionJudgement,
    AlignmentJudgement,
    QuoteJudgement,
    StageDecision,
)

__all__ = (
    "NLIVerdict",
    "Next",
    "final_label",
    "is_abstention_answer",
    "next_stage",
    "overall_confidence",
    "pipeline_path",
    "stage_a",
    "stage_b",
    "stage_c",
    "stage_d",
    "stage_e",
    "walk_llm_stages",
)

Next = Literal["B", "C", "D", "E", "emit"]

_ABSTENTION = re.compile(
    r"^\W*(n/?a|none|unknown|not (?:known|available|stated|given|found)|no answer|insufficient information"
    r"|(?:it )?cannot be (?:determined|answered)|can(?:'|no)t (?:be )?(?:determine|determined|tell|say))\W*$",
    re.IGNORECASE,
)


class NLIVerdict(Protocol):
    """What stages D and E read from an NLI result (``evigraph.tools.nli.NLIResult`` meets it)."""

    @property
    def label(self) -> str: ...  # "ENTAILMENT" | "NEUTRAL" | "CONTRADICTION"
    @property
    def p_entailment(self) -> float: ...
    @property
    def p_neutral(self) -> float: ...
    @property
    def p_contradiction(self) -> float: ...


def is_abstention_answer(answer: str) -> bool:
    """Whether a final answer abstains ("N/A", "unknown", "cannot be determined"); such an answer is never
    off-target (§2.2).

    >>> is_abstention_answer("N/A"), is_abstention_answer("It cannot be determined."), is_abstention_answer("Paris")
    (True, True, False)
    """
    return bool(_ABSTENTION.match(answer.strip()))


def stage_a(judgement: AlignmentJudgement, *, confidence: float = 1.0, abstaining: bool = False) -> StageDecision:
    """Alignment: an off-target step is a CC (retract). ``abstaining`` (a conclusion answering N/A) overrides
    the judge: such a step goes to B."""
    detail = judgement.alignment_reasoning
    if judgement.is_off_target and not abstaining:
        drift = judgement.drift_type if judgement.drift_type != "none" else "entity_drift"
        return StageDecision(stage="A", decision=drift, confidence=confidence, emits="CC", detail=detail)
    return StageDecision(stage="A", decision="on_target", confidence=confidence, detail=detail)


def stage_b(judgement: AbstentionJudgement, *, confidence: float = 1.0) -> StageDecision:
    """Abstention validity: a grounded abstention is gap-free, a wrong one a CC; anything else goes to C."""
    detail = judgement.abstention_reasoning
    if not judgement.is_abstention_step:
        return StageDecision(stage="B", decision="not_abstention", confidence=confidence, detail=detail)
    if judgement.abstention_is_accurate:
        return StageDecision(
            stage="B", decision="grounded_abstention", confidence=confidence, emits="no-gap", detail=detail
        )
    return StageDecision(stage="B", decision="wrong_abstention", confidence=confidence, emits="CC", detail=detail)


def stage_c(judgement: QuoteJudgement, kind: StepKind, *, quote_valid: bool, confidence: float = 1.0) -> StageDecision:
    """Entity match and quote: evidence about another entity is IE (re-search). With a matching entity, a valid
    quote goes to D; without one a conclusion step goes to E and an inference step is gap-free (a query is no
    hypothesis). ``quote_valid``: the quote passed :func:`~evigraph.agents.stepgap.claims.validate_quote`."""
    detail = " ".join(p for p in (judgement.entity_match_reasoning, judgement.quote_search_reasoning) if p)
    if not judgement.entity_match:
        return StageDecision(stage="C", decision="entity_mismatch", confidence=confidence, emits="IE", detail=detail)
    if judgement.found_quote and quote_valid:
        return StageDecision(stage="C", decision="quote_found", confidence=confidence, detail=detail)
    emits: GapLabel | None = "no-gap" if kind == "inference" else None
    return StageDecision(stage="C", decision="no_quote", confidence=confidence, emits=emits, detail=detail)


def _nli_detail(verdict: NLIVerdict) -> str:
    return (
        f"{verdict.label} (p_E={verdict.p_entailment:.3f}, p_N={verdict.p_neutral:.3f}, "
        f"p_C={verdict.p_contradiction:.3f})"
    )


def stage_d(verdict: NLIVerdict) -> StageDecision:
    """Local entailment of the claim by the quote: ENTAILMENT → no-gap, NEUTRAL → MB, CONTRADICTION → CC. The
    confidence is the chosen label's probability."""
    label = verdict.label.upper()
    if label == "ENTAILMENT":
        return StageDecision(
            stage="D",
            decision="entailment",
            confidence=verdict.p_entailment,
            emits="no-gap",
            detail=_nli_detail(verdict),
        )
    if label == "CONTRADICTION":
        return StageDecision(
            stage="D",
            decision="contradiction",
            confidence=verdict.p_contradiction,
            emits="CC",
            detail=_nli_detail(verdict),
        )
    return StageDecision(
        stage="D", decision="neutral", confidence=verdict.p_neutral, emits="MB", detail=_nli_detail(verdict)
    )


def stage_e(verdicts: Sequence[NLIVerdict]) -> StageDecision:
    """Cross-step entailment over earlier entity-matched snippets, read in order up to the first ENTAILMENT:
    any entailing premise → no-gap (confidence its p_E); none → IE with confidence ``1 − max p_E`` (1.0 when
    there was no premise at all). A contradicting premise does not make a CC."""
    for verdict in verdicts:
        if verdict.label.upper() == "ENTAILMENT":
            return StageDecision(
                stage="E",
                decision="entailed",
                confidence=verdict.p_entailment,
                emits="no-gap",
                detail=_nli_detail(verdict),
            )
    best = max((v.p_entailment for v in verdicts), default=0.0)
    detail = f"no entailing prior among {len(verdicts)} premise(s); max p_E={best:.3f}"
    return StageDecision(stage="E", decision="no_entailing_prior", confidence=1.0 - best, emits="IE", detail=detail)


def next_stage(decision: StageDecision, kind: StepKind) -> Next:
    """Where the walk goes after ``decision`` (``emit`` once a stage has emitted a label)."""
    if decision.emits is not None:
        return "emit"
    return {"A": "B", "B": "C", "D": "emit", "E": "emit"}.get(  # type: ignore[return-value]
        decision.stage, "D" if decision.decision == "quote_found" else "E"
    )


def walk_llm_stages(
    kind: StepKind,
    *,
    alignment: AlignmentJudgement | None,
    abstention: AbstentionJudgement | None,
    quote: QuoteJudgement | None,
    quote_valid: bool,
    abstaining: bool = False,
    confidences: dict[Stage, float] | None = None,
    disabled: Collection[Stage] = (),
) -> tuple[list[StageDecision], Next]:
    """Stages A → B → C with early exits; returns the visited decisions and what comes next (``D``, ``E`` or
    ``emit``). A disabled stage is skipped (it hands off as if it had not fired); with C disabled there is no
    quote, so a conclusion step goes to E and an inference step ends gap-free. A judgement missing for a stage
    that must run is a programming error."""
    confidences = confidences or {}
    visited: list[StageDecision] = []
    for stage in ("A", "B", "C"):
        if stage in disabled:
            continue
        if stage == "A":
            assert alignment is not None, "stage A needs its judgement"
            decision = stage_a(alignment, confidence=confidences.get("A", 1.0), abstaining=abstaining)
        elif stage == "B":
            assert abstention is not None, "stage B needs its judgement"
            decision = stage_b(abstention, confidence=confidences.get("B", 1.0))
        else:
            assert quote is not None, "stage C needs its judgement"
            decision = stage_c(quote, kind, quote_valid=quote_valid, confidence=confidences.get("C", 1.0))
        visited.append(decision)
        step = next_stage(decision, kind)
        if step == "emit" or stage == "C":
            return visited, _skip_disabled(step, disabled)
    return visited, _skip_disabled("E" if kind == "conclusion" else "emit", disabled)


def _skip_disabled(step: Next, disabled: Collection[Stage]) -> Next:
    return "emit" if step in ("D", "E") and step in disabled else step


def pipeline_path(decisions: Sequence[StageDecision]) -> str:
    """``stageX:<decision>`` of the visited stages in order, joined by ``", "`` (§2.6)."""
    return ", ".join(d.path_entry for d in decisions)


def overall_confidence(decisions: Sequence[StageDecision]) -> float:
    """Geometric mean of the visited stages' confidences (§2.7); 1.0 when none was visited.

    >>> from evigraph.agents.stepgap.schemas import StageDecision as D
    >>> visited = [D(stage=s, decision="x", confidence=c) for s, c in zip("ABCD", (0.98, 0.95, 0.9, 0.8))]
    >>> round(overall_confidence(visited), 4)  # C-1
    0.9048
    """
    if not decisions:
        return 1.0
    if any(d.confidence <= 0.0 for d in decisions):
        return 0.0
    return math.exp(sum(math.log(d.confidence) for d in decisions) / len(decisions))


def final_label(decisions: Sequence[StageDecision]) -> GapLabel:
    """The label the walk ended on: the last visited stage's emission, else no-gap (nothing fired)."""
    return next((d.emits for d in reversed(decisions) if d.emits is not None), "no-gap")
