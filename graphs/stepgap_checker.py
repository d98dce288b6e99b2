"""The StepGap checker graph (specs/stepgap.md §2.2, §2.8): every step of a trace through stages A–E.

Nodes: ``prepare`` (claims, evidence views) → ``judge`` (the LLM stages for all steps at once, concurrently) →
``route_A`` → ``route_B`` → ``route_C`` (the routing table, one stage per node, over every step still walking) →
``nli_D`` (all local-entailment pairs in one NLI batch) → ``nli_E`` (cross-step entailment, in step order: a
step's premises are earlier steps' entity-matched evidence) → ``emit`` (labels, confidences, paths). Routers skip
the NLI nodes no step needs. The decisions are the pure functions of :mod:`evigraph.agents.stepgap.routing`.

The §5 checker variants are config switches on this one graph (:mod:`evigraph.agents.stepgap.variants`):
``entailment="judge"`` gives D/E to the judge LLM, ``flag_threshold`` unflags low-confidence gaps at ``emit``,
``quote_source="ner"`` replaces Stage C's quote, and ``pipeline="nli-only"`` skips the judge and sends every
step straight to ``nli_D`` with its whole local evidence. Usage::

    graph = build_checker_graph(judge_generator, nli=make_nli(checkpoint))
    result = await graph.ainvoke({"trace": trace})
    [(c.label, c.pipeline_path) for c in result["checks"].steps]
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from evigraph.agents.stepgap.claims import local_evidence, prior_premises, step_claim, validate_quote
from evigraph.agents.stepgap.judge import JudgeOutcome, judge_step, judgement_json, step_views
from evigraph.agents.stepgap.routing import (
    Next,
    final_label,
    is_abstention_answer,
    next_stage,
    overall_confidence,
    pipeline_path,
    stage_a,
    stage_b,
    stage_c,
    stage_d,
    stage_e,
)
from evigraph.agents.stepgap.schemas import (
    CheckerInputs,
    CheckerResult,
    StageDecision,
    StepCheck,
    StepGapConfig,
    Trace,
    TraceCheck,
)
from evigraph.agents.stepgap.variants import (
    NLI_ONLY_PATH,
    EntityFinder,
    evidence_premise,
    load_entity_finder,
    ner_quote_judgement,
    nli_only_decision,
    nli_only_unchecked,
    threshold_label,
    variant_name,
)
from evigraph.errors import ConfigError
from evigraph.generators.base import Generator
from evigraph.generators.types import SamplingParams
from evigraph.graphs.kit.context import RunContext, RunScope
from evigraph.trajectory import Step, Timing, Trajectory

__all__ = ("CHECKER_NAME", "CheckerState", "StepProgress", "build_checker_graph", "check_trace")

CHECKER_NAME = "stepgap-checker"
Context = Runtime[RunContext]
Pending = Literal["A", "B", "C", "D", "E", "emit"]


@dataclass(frozen=True, slots=True)
class StepProgress:
    """One step's walk through the tree."""

    index: int
    claim: str
    pending: Pending = "A"
    decisions: tuple[StageDecision, ...] = ()
    outcome: JudgeOutcome | None = None
    quote: str | None = None
    entity_matched: bool = False
    nli_engine: str | None = None
    error: str | None = None
    reused: StepCheck | None = None
    """A check given in the input (an earlier run's): kept as it is, read only as a prior step."""

    def decided(self, decision: StageDecision, after: Next) -> StepProgress:
        return replace(self, decisions=(*self.decisions, decision), pending=after)


class CheckerState(TypedDict, total=False):
    trace: Trace
    progress: tuple[StepProgress, ...]
    started_at: float
    judge_s: float
    nli_s: float
    checks: TraceCheck
    trajectory: Trajectory


class _Nodes:
    def __init__(
        self,
        judge: Generator | None,
        nli: Any | None,
        config: StepGapConfig,
        sampling: SamplingParams | None,
        ner: EntityFinder | None,
    ) -> None:
        self.default_judge, self.nli, self.config = judge, nli, config
        self.params = (sampling or SamplingParams()).model_copy(
            update={"max_new_tokens": config.judge_max_new_tokens, "logprobs": config.judge_logprobs, "stop": ()}
        )
        self._fallbacks: dict[int, Any] = {}
        self.ner: EntityFinder | None = None
        if config.quote_source == "ner":
            self.ner = ner or load_entity_finder()
        if config.entailment == "judge" and judge is not None:
            self._judge_nli(judge)  # a judge that cannot score label words is refused here, not mid-run

    def _nli(self, runtime: Context) -> Any:
        """The configured NLI, else (or with ``entailment="judge"``) the judge scoring the label words."""
        if self.nli is not None and self.config.entailment == "nli":
            return self.nli
        return self._judge_nli(RunScope.resolve(runtime, self.default_judge).generator)

    def _judge_nli(self, generator: Generator) -> Any:
        """The generator fallback (weaker; every report names it), one per generator."""
        key = id(generator)
        if key not in self._fallbacks:
            from evigraph.tools.nli import make_nli

            self._fallbacks[key] = make_nli(None, generator=generator)
        return self._fallbacks[key]

    async def prepare(self, state: CheckerInputs) -> dict[str, Any]:
        trace = state["trace"]
        trace = trace if isinstance(trace, Trace) else Trace.model_validate(trace)
        progress = tuple(StepProgress(index=i, claim=step_claim(s, trace.question)) for i, s in enumerate(trace.steps))
        if self.config.pipeline == "nli-only":  # no LLM stage: every step goes straight to one NLI call
            progress = tuple(_nli_only_start(trace, step) for step in progress)
        checked = list(state.get("checked") or [])
        if len(checked) > len(progress):
            raise ConfigError(f"{len(checked)} earlier checks for a trace of {len(progress)} steps")
        progress = tuple(_reused(check) for check in checked) + progress[len(checked) :]
        return {"trace": trace, "progress": progress, "started_at": time.time()}

    async def judge(self, state: CheckerState, runtime: Context) -> dict[str, Any]:
        disabled = self.config.disable_stages
        if {"A", "B", "C"} <= disabled or self.config.pipeline == "nli-only":
            return {}
        scope = RunScope.resolve(runtime, self.default_judge)
        params = scope.params(self.params)
        started = time.perf_counter()
        views = step_views(state["trace"], self.config)
        # Weak-model mode: each reply decoded under a schema whose quote is one of the evidence's own sentences.
        weak = scope.guided(None, guide_kind="json")
        quote_words = (self.config.quote_min_words, self.config.quote_max_words) if weak else None
        waiting = [step.index for step in state["progress"] if step.pending == "A"]  # not reused, not failed
        judged = await asyncio.gather(
            *(
                judge_step(
                    scope.generator,
                    views[i],
                    params,
                    mode=self.config.judge_mode,
                    disabled=tuple(disabled),
                    max_chars=self.config.max_evidence_chars,
                    quote_words=quote_words,
                )
                for i in waiting
            )
        )
        outcomes = dict(zip(waiting, judged, strict=True))
        progress = []
        for step in state["progress"]:
            outcome = outcomes.get(step.index)
            if outcome is None:
                progress.append(step)
            elif outcome.failure is not None:
                failure = outcome.failure
                error = f"judge failed at stage {failure.stage} ({failure.kind}): {failure.message}"
                progress.append(replace(step, outcome=outcome, pending="emit", error=error))
            else:
                progress.append(replace(step, outcome=outcome))
        return {"progress": tuple(progress), "judge_s": time.perf_counter() - started}

    def _stage(self, state: CheckerState, stage: Literal["A", "B", "C"]) -> dict[str, Any]:
        trace = state["trace"]
        updated = []
        for step in state["progress"]:
            if step.pending != stage:
                updated.append(step)
                continue
            if stage in self.config.disable_stages:
                after: Pending = {"A": "B", "B": "C"}.get(stage) or (
                    "E" if trace.steps[step.index].kind == "conclusion" else "emit"
                )
                updated.append(replace(step, pending=_enabled(after, self.config)))
                continue
            outcome = step.outcome
            assert outcome is not None
            kind = trace.steps[step.index].kind
            confidence = outcome.confidences.get(stage, 1.0)
            if stage == "A":
                assert outcome.alignment is not None
                answer = trace.steps[step.index].answer or ""
                abstaining = kind == "conclusion" and is_abstention_answer(answer)
                decision = stage_a(outcome.alignment, confidence=confidence, abstaining=abstaining)
                updated.append(step.decided(decision, _enabled(next_stage(decision, kind), self.config)))
            elif stage == "B":
                assert outcome.abstention is not None
                decision = stage_b(outcome.abstention, confidence=confidence)
                updated.append(step.decided(decision, _enabled(next_stage(decision, kind), self.config)))
            else:
                assert outcome.quote is not None
                judgement = outcome.quote
                evidence = local_evidence(trace, step.index)
                if self.ner is not None and judgement.entity_match:
                    # NER-Quote: a whole evidence sentence, verbatim by construction; no word limits. The quote
                    # is no longer the judge's choice, so its token confidence does not apply (1.0).
                    judgement = ner_quote_judgement(judgement, step.claim, evidence, self.ner)
                    confidence = 1.0
                quote = " ".join(judgement.evidence_quote.split())
                valid = bool(step.claim) and (
                    judgement.found_quote
                    if self.ner is not None
                    else validate_quote(
                        quote,
                        evidence,
                        min_words=self.config.quote_min_words,
                        max_words=self.config.quote_max_words,
                    )
                )
                decision = stage_c(judgement, kind, quote_valid=valid, confidence=confidence)
                after = _enabled(next_stage(decision, kind), self.config)
                updated.append(
                    replace(
                        step.decided(decision, after),
                        quote=quote if valid and judgement.entity_match else None,
                        entity_matched=judgement.entity_match,
                    )
                )
        return {"progress": tuple(updated)}

    async def route_a(self, state: CheckerState) -> dict[str, Any]:
        return self._stage(state, "A")

    async def route_b(self, state: CheckerState) -> dict[str, Any]:
        return self._stage(state, "B")

    async def route_c(self, state: CheckerState) -> dict[str, Any]:
        return self._stage(state, "C")

    async def nli_d(self, state: CheckerState, runtime: Context) -> dict[str, Any]:
        nli = self._nli(runtime)
        trace = state["trace"]
        waiting = [s for s in state["progress"] if s.pending == "D"]
        started = time.perf_counter()
        if self.config.pipeline == "nli-only":
            pairs = [(evidence_premise(local_evidence(trace, s.index)), s.claim) for s in waiting]
            decide = nli_only_decision
        else:
            pairs = [(s.quote or "", s.claim) for s in waiting]
            decide = stage_d
        verdicts = await _classify(nli, pairs)
        by_index = dict(zip((s.index for s in waiting), verdicts, strict=True))
        updated = tuple(
            replace(s.decided(decide(by_index[s.index]), "emit"), nli_engine=by_index[s.index].engine)
            if s.index in by_index
            else s
            for s in state["progress"]
        )
        return {"progress": updated, "nli_s": state.get("nli_s", 0.0) + time.perf_counter() - started}

    async def nli_e(self, state: CheckerState, runtime: Context) -> dict[str, Any]:
        nli = self._nli(runtime)
        trace = state["trace"]
        progress = list(state["progress"])
        started = time.perf_counter()
        matched = [s.entity_matched for s in progress]
        quotes = [s.quote for s in progress]
        for i, step in enumerate(progress):
            if step.pending != "E":
                continue
            premises = prior_premises(trace, i, matched, quotes)
            verdicts = await _classify(nli, [(p, step.claim) for p in premises])
            read = []
            for verdict in verdicts:  # stop at the first entailing premise (§2.5)
                read.append(verdict)
                if verdict.label.upper() == "ENTAILMENT":
                    break
            progress[i] = replace(step.decided(stage_e(read), "emit"), nli_engine=_engine(nli))
        return {"progress": tuple(progress), "nli_s": state.get("nli_s", 0.0) + time.perf_counter() - started}

    async def emit(self, state: CheckerState, runtime: Context) -> dict[str, Any]:
        trace = state["trace"]
        checks = [_check(trace, step, self.config) for step in state["progress"]]
        engines = {c.nli_engine for c in checks if c.nli_engine}
        binary = self.config.pipeline == "nli-only"
        if binary:  # no judge ran (and none needs to be configured)
            judge = "none"
        else:
            judge = f"{RunScope.resolve(runtime, self.default_judge).generator.name} ({self.config.judge_mode})"
        result = TraceCheck(
            id=trace.id,
            question=trace.question,
            steps=checks,
            judge=judge,
            nli=", ".join(sorted(engines)) or None,
            variant=variant_name(self.config),
            binary=binary,
        )
        started_at = state.get("started_at", time.time())
        trajectory = Trajectory(
            id=trace.id or uuid.uuid4().hex,
            agent=CHECKER_NAME,
            input={"trace": trace.model_dump(mode="json")},
            steps=[
                Step(index=c.index, kind=c.kind, text=trace.steps[c.index].shown(), payload=c.model_dump(mode="json"))
                for c in checks
            ],
            output=result.model_dump(mode="json"),
            metadata={"judge": result.judge, "nli": result.nli, "variant": result.variant},
            timing=Timing(
                started_at=started_at,
                wall_s=time.time() - started_at,
                generate_s=state.get("judge_s", 0.0),
                tools_s=state.get("nli_s", 0.0),
            ),
        )
        return {"checks": result, "trajectory": trajectory}

    @staticmethod
    async def after_c(state: CheckerState) -> str:
        pending = {s.pending for s in state["progress"]}
        return "nli_D" if "D" in pending else "nli_E" if "E" in pending else "emit"

    @staticmethod
    async def after_d(state: CheckerState) -> str:
        return "nli_E" if any(s.pending == "E" for s in state["progress"]) else "emit"


def _enabled(after: Pending, config: StepGapConfig) -> Pending:
    """A hand-off to a disabled NLI stage ends the walk (nothing fired: no-gap)."""
    return "emit" if after in ("D", "E") and after in config.disable_stages else after


def _engine(nli: Any) -> str:
    describe = getattr(nli, "describe", None)
    if callable(describe):
        return str(describe().get("engine", type(nli).__name__))
    return str(getattr(nli, "engine", type(nli).__name__))


async def _classify(nli: Any, pairs: Sequence[tuple[str, str]]) -> list[Any]:
    if not pairs:
        return []
    batch = getattr(nli, "abatch_classify", None)
    if batch is not None:
        return list(await batch(list(pairs)))
    return list(await asyncio.to_thread(nli.batch_classify, list(pairs)))


def _nli_only_start(trace: Trace, step: StepProgress) -> StepProgress:
    premise = evidence_premise(local_evidence(trace, step.index))
    unchecked = nli_only_unchecked(premise, step.claim)
    return step.decided(unchecked, "emit") if unchecked is not None else replace(step, pending="D")


def _reused(check: StepCheck) -> StepProgress:
    """An earlier check as a finished step: its stage C decision and quote are what later steps' E reads."""
    matched = any(d.stage == "C" and d.decision != "entity_mismatch" for d in check.stages)
    return StepProgress(
        index=check.index,
        claim=check.claim,
        pending="emit",
        decisions=tuple(check.stages),
        quote=check.quote,
        entity_matched=matched,
        nli_engine=check.nli_engine,
        reused=check,
    )


def _check(trace: Trace, step: StepProgress, config: StepGapConfig) -> StepCheck:
    if step.reused is not None:
        return step.reused
    kind = trace.steps[step.index].kind
    if step.error is not None:
        return StepCheck(
            index=step.index,
            kind=kind,
            label=None,
            confidence=0.0,
            rationale=step.error,
            pipeline_path=pipeline_path(step.decisions),
            stages=list(step.decisions),
            claim=step.claim,
            error=step.error,
            token_span=trace.steps[step.index].token_span,
        )
    nli_only = config.pipeline == "nli-only"
    entries = [f"{NLI_ONLY_PATH}:{d.decision}" if nli_only else d.path_entry for d in step.decisions]
    rationale = " | ".join(f"{e}: {d.detail}" for e, d in zip(entries, step.decisions, strict=True) if d.detail)
    tree_label, confidence = final_label(step.decisions), overall_confidence(step.decisions)
    label = threshold_label(tree_label, confidence, config.flag_threshold)
    if label != tree_label:
        note = f"{tree_label} unflagged: confidence {confidence:.3f} < flag threshold {config.flag_threshold:.2f}"
        rationale = f"{note} | {rationale}" if rationale else note
    return StepCheck(
        index=step.index,
        kind=kind,
        label=label,
        confidence=confidence,
        rationale=rationale,
        pipeline_path=", ".join(entries),
        stages=list(step.decisions),
        claim=step.claim,
        quote=step.quote,
        nli_engine=step.nli_engine,
        tree_label=tree_label if label != tree_label else None,
        token_span=trace.steps[step.index].token_span,
        judgement=judgement_json(step.outcome) if step.outcome is not None else None,
    )


def build_checker_graph(
    judge: Generator | None,
    *,
    nli: Any | None = None,
    config: StepGapConfig | None = None,
    sampling: SamplingParams | None = None,
    ner: EntityFinder | None = None,
) -> Any:
    """The checker over ``judge`` (the LLM for stages A–C) and ``nli`` (stages D–E).

    Args:
        judge: any generator, or ``None`` when every run passes one in its :class:`RunContext`.
        nli: an NLI engine (``evigraph.tools.nli``; anything with ``batch_classify(pairs)``). ``None``: the
            judge scores entailment itself by label-token logprobs -- weaker, and named as such in the result.
        config: judge mode, disabled stages, quote limits, the variant switches
            (:func:`~evigraph.agents.stepgap.variants.variant_config` builds them by name).
        sampling: temperature / seed of the judge (default greedy, §9 #9).
        ner: the entity finder of ``quote_source="ner"``; default spaCy's English pipeline.

    Returns:
        A compiled graph: ``ainvoke`` takes :class:`CheckerInputs` and returns :class:`CheckerResult`.

    Raises:
        ConfigError: ``quote_source="ner"`` without ``ner`` and no spaCy English pipeline installed;
            ``entailment="judge"`` with a judge that cannot score label words.
    """
    nodes = _Nodes(judge, nli, config or StepGapConfig(), sampling, ner)
    graph = StateGraph(CheckerState, context_schema=RunContext, input_schema=CheckerInputs, output_schema=CheckerResult)
    graph.add_node("prepare", nodes.prepare)
    graph.add_node("judge", nodes.judge)
    graph.add_node("route_A", nodes.route_a)
    graph.add_node("route_B", nodes.route_b)
    graph.add_node("route_C", nodes.route_c)
    graph.add_node("nli_D", nodes.nli_d)
    graph.add_node("nli_E", nodes.nli_e)
    graph.add_node("emit", nodes.emit)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "judge")
    graph.add_edge("judge", "route_A")
    graph.add_edge("route_A", "route_B")
    graph.add_edge("route_B", "route_C")
    graph.add_conditional_edges("route_C", nodes.after_c, ["nli_D", "nli_E", "emit"])
    graph.add_conditional_edges("nli_D", nodes.after_d, ["nli_E", "emit"])
    graph.add_edge("nli_E", "emit")
    graph.add_edge("emit", END)
    return graph.compile(name=CHECKER_NAME)


async def check_trace(
    trace: Trace | dict[str, Any],
    judge: Generator,
    *,
    nli: Any | None = None,
    config: StepGapConfig | None = None,
) -> TraceCheck:
    """Check one trace (a convenience over :func:`build_checker_graph`)."""
    result = await build_checker_graph(judge, nli=nli, config=config).ainvoke({"trace": trace})
    return result["checks"]
