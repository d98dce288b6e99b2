"""StepGap's checker variants (specs/stepgap.md §5, §2.7, §7.2, §8 pitfall 4): the registry, each variant's
routing through the one checker graph with a scripted judge and a fake NLI, and the threshold sweep."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from evigraph.agents.stepgap.metrics import is_degenerate
from evigraph.agents.stepgap.schemas import StepCheck, StepGapConfig
from evigraph.agents.stepgap.variants import (
    VARIANTS,
    EntityFinder,
    load_entity_finder,
    spacy_entity_finder,
    threshold_sweep,
    variant_config,
    variant_name,
)
from evigraph.errors import ConfigError
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.graphs.stepgap_checker import build_checker_graph
from evigraph.tools.ner import SpacyNER
from tests.agents.stepgap.doubles import CONTRADICT, ENTAIL, FakeNLI, judge_by_step, judgement

ON = "stageA:on_target, stageB:not_abstention"


def doc(title: str, text: str) -> dict[str, Any]:
    return {"id": title, "title": title, "text": text}


WHIPLASH = doc("Whiplash (2014 film)", "Whiplash is a 2014 American film written and directed by Damien Chazelle.")
CHAZELLE = doc("Damien Chazelle", "Damien Sayre Chazelle is a filmmaker born in Providence, Rhode Island in 1985.")
KUHN = doc("Heinrich Gerhard Kuhn", "Heinrich Gerhard Kuhn was a German-British physicist known for spectroscopy.")
QUOTE = "a 2014 American film written and directed by Damien Chazelle"
CLAIM = "Whiplash was directed by Damien Chazelle."


def run(trace: dict[str, Any], judge: Any, variant: str, nli: Any = None, **kwargs: Any) -> Any:
    graph = build_checker_graph(judge, nli=nli, config=variant_config(variant), **kwargs)
    return asyncio.run(graph.ainvoke({"trace": trace}))["checks"]


def llm_judge(reply: str, entail_neutral_contra: tuple[float, float, float]) -> ScriptedGenerator:
    """One judge for stages A–C and (label-word scores) D–E: the label words get these probabilities."""
    logs = [math.log(p) for p in entail_neutral_contra]
    return ScriptedGenerator(lambda transcript, params: reply, scores=lambda transcript, words: logs)


# -- the registry ---------------------------------------------------------------------------------------------
def test_registry_names_every_variant_and_round_trips() -> None:
    assert set(VARIANTS) == {
        "stepgap",
        "llm-only",
        "llm-strict",
        "nli-only",
        "ner-quote",
        "stepgap-no-A",
        "stepgap-no-E",
    }
    for name, variant in VARIANTS.items():
        assert variant_name(variant.config) == name
        assert variant.typed == (name != "nli-only")  # binary checkers cannot drive typed rewards (§5)
    assert variant_name(StepGapConfig()) == "stepgap"


def test_variant_config_keeps_the_runs_other_settings_and_refuses_unknown_names() -> None:
    config = variant_config("llm-only", StepGapConfig(judge_mode="per_stage", disable_stages={"B"}))
    assert (config.judge_mode, config.entailment, config.flag_threshold) == ("per_stage", "judge", 0.5)
    assert config.disable_stages == frozenset()  # the variant's switches replace the base's
    with pytest.raises(ConfigError, match="llm-only"):
        variant_config("llm-lite")


# -- llm-only and llm-strict (§2.7 last line, §5) -------------------------------------------------------------
@pytest.mark.parametrize(
    ("probabilities", "llm_only", "llm_strict"),
    [
        ((0.05, 0.90, 0.05), "MB", "MB"),  # NEUTRAL at p_N 0.9: confidence 0.974 ≥ 0.5, both flag
        ((0.48, 0.04, 0.48), "no-gap", "MB"),  # NEUTRAL by a tie, p_N 0.04: confidence 0.447 < 0.5
    ],
)
def test_llm_variants_judge_entailment_and_only_llm_only_thresholds(
    probabilities: tuple[float, float, float], llm_only: str, llm_strict: str
) -> None:
    step = {"reasoning": CLAIM, "query": "q", "evidence": [WHIPLASH]}
    trace = {"question": "Who directed Whiplash?", "steps": [step]}
    reply = judgement(found=True, quote=QUOTE)
    nli = FakeNLI({"Chazelle": ENTAIL})  # configured, but the LLM variants must not use it
    strict = run(trace, llm_judge(reply, probabilities), "llm-strict", nli)
    only = run(trace, llm_judge(reply, probabilities), "llm-only", nli)
    assert nli.pairs == []
    assert (only.variant, strict.variant, only.nli, strict.nli) == (
        "llm-only",
        "llm-strict",
        "generator:scripted",
        "generator:scripted",
    )
    path = f"{ON}, stageC:quote_found, stageD:neutral"  # the walk is the same; only the reported label differs
    assert (strict.steps[0].label, strict.steps[0].pipeline_path, strict.steps[0].tree_label) == (
        llm_strict,
        path,
        None,
    )
    assert (only.steps[0].label, only.steps[0].pipeline_path) == (llm_only, path)
    assert only.steps[0].confidence == pytest.approx(strict.steps[0].confidence)
    if llm_only != llm_strict:
        assert only.steps[0].tree_label == "MB" and "MB unflagged" in only.steps[0].rationale
        assert only.steps[0].repair == "none"


def test_llm_only_stage_e_asks_the_judge_too() -> None:
    trace = {
        "question": "Where was the director of Whiplash born?",
        "steps": [
            {"reasoning": "Chazelle directed it.", "query": "Damien Chazelle", "evidence": [CHAZELLE]},
            {"reasoning": "He was born in Providence.", "answer": "Providence"},
        ],
    }
    checks = run(trace, llm_judge(judgement(), (0.8, 0.1, 0.1)), "llm-only").steps
    assert (checks[1].label, checks[1].pipeline_path) == ("no-gap", f"{ON}, stageC:no_quote, stageE:entailed")
    assert checks[1].nli_engine == "generator:scripted"


# -- nli-only (§5, §7.1 binary) -------------------------------------------------------------------------------
def test_nli_only_runs_no_judge_and_labels_binary() -> None:
    trace = {
        "question": "Who directed Whiplash, and where was Kuhn from?",
        "steps": [
            {"reasoning": "I should search first.", "query": "Whiplash"},  # nothing retrieved
            {"reasoning": CLAIM, "query": "Whiplash", "evidence": [WHIPLASH]},
            {"reasoning": "Chazelle was born in Paris.", "query": "Chazelle", "evidence": [CHAZELLE]},
            {"reasoning": "Kuhn was Austrian.", "query": "Kuhn", "evidence": [KUHN]},
            {"reasoning": "So Kuhn was from Austria.", "answer": "Austria"},  # reads the latest retrieval (§9 #4)
        ],
    }
    nli = FakeNLI({"Whiplash (2014 film)": ENTAIL, "Providence": CONTRADICT})
    result = run(trace, None, "nli-only", nli)  # no judge at all
    labels = [(c.label, c.pipeline_path) for c in result.steps]
    assert labels == [
        ("IE", "nliOnly:no_evidence"),
        ("no-gap", "nliOnly:entailment"),
        ("CC", "nliOnly:contradiction"),
        ("IE", "nliOnly:neutral"),
        ("IE", "nliOnly:neutral"),
    ]
    assert (result.variant, result.binary, result.judge, result.nli) == ("nli-only", True, "none", "fake-nli")
    premise = f"Whiplash (2014 film): {WHIPLASH['text']}"
    assert nli.pairs[0] == (premise, CLAIM)  # (the whole local evidence, the claim): one call per step
    assert [h for _, h in nli.pairs] == [
        CLAIM,
        "Chazelle was born in Paris.",
        "Kuhn was Austrian.",
        "So Kuhn was from Austria.",
    ]
    assert result.steps[1].confidence == pytest.approx(0.9) and result.steps[1].quote is None


# -- ner-quote (§5, §8 pitfall 4) -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ner() -> EntityFinder:
    """spaCy NER without a trained model: a blank English pipeline whose entity ruler knows two names."""
    import spacy

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERSON", "pattern": "Damien Chazelle"}, {"label": "GPE", "pattern": "Providence"}])  # type: ignore[attr-defined]
    return spacy_entity_finder(SpacyNER(nlp, "ruler"))


PAGE = doc(
    "Whiplash (2014 film)",
    "Whiplash is a 2014 drama film that was directed by a young filmmaker. "  # most overlap, but no claim entity
    "Damien Chazelle was born in Providence in 1985. "  # names the entity, little overlap
    "The film was directed by Damien Chazelle.",  # names the entity, most overlap among those that do
)


def test_ner_quote_sends_the_overlapping_entity_sentence_to_d(ner: EntityFinder) -> None:
    claim = "Whiplash, a 2014 drama film, was directed by Damien Chazelle."
    trace = {"question": "Who directed Whiplash?", "steps": [{"reasoning": claim, "query": "q", "evidence": [PAGE]}]}
    nli = FakeNLI({"directed by Damien": ENTAIL})
    result = run(trace, judge_by_step({"Whiplash": judgement(found=False)}), "ner-quote", nli, ner=ner)
    check = result.steps[0]
    assert (check.label, check.pipeline_path) == ("no-gap", f"{ON}, stageC:quote_found, stageD:entailment")
    assert nli.pairs == [("The film was directed by Damien Chazelle.", claim)]
    assert check.quote == "The film was directed by Damien Chazelle." and result.variant == "ner-quote"


def test_ner_quote_ignores_the_judges_quote_and_keeps_its_entity_match(ner: EntityFinder) -> None:
    step = {"reasoning": CLAIM, "query": "q", "evidence": [doc("Whiplash", "Whiplash is a film about a drummer.")]}
    trace = {"question": "Who directed Whiplash?", "steps": [step]}
    nli = FakeNLI()
    valid_quote = judgement(found=True, quote="Whiplash is a film about a drummer.")
    check = run(trace, judge_by_step({"Whiplash": valid_quote}), "ner-quote", nli, ner=ner).steps[0]
    assert (check.label, check.pipeline_path) == ("no-gap", f"{ON}, stageC:no_quote")  # no sentence names Chazelle
    assert nli.pairs == []
    mismatch = run(trace, judge_by_step({"Whiplash": judgement(match=False)}), "ner-quote", nli, ner=ner).steps[0]
    assert (mismatch.label, mismatch.pipeline_path) == ("IE", f"{ON}, stageC:entity_mismatch")


def test_missing_spacy_pipeline_is_a_config_error_naming_setup() -> None:
    with pytest.raises(ConfigError, match="evigraph setup"):
        load_entity_finder(("no_such_spacy_pipeline",))


# -- the §7.2 ablations ---------------------------------------------------------------------------------------
def test_stepgap_no_a_skips_alignment() -> None:
    step = {"reasoning": "Look up the film.", "query": "x", "evidence": [WHIPLASH]}
    trace = {"question": "Q?", "steps": [step]}
    result = run(
        trace, judge_by_step({"Look up": judgement(off=True, drift="entity_drift")}), "stepgap-no-A", FakeNLI()
    )
    assert (result.steps[0].label, result.steps[0].pipeline_path) == (
        "no-gap",
        "stageB:not_abstention, stageC:no_quote",
    )
    assert result.variant == "stepgap-no-A"


def test_stepgap_no_e_leaves_a_quoteless_conclusion_gap_free() -> None:
    trace = {
        "question": "Where was the director of Whiplash born?",
        "steps": [
            {"reasoning": "Chazelle directed it.", "query": "Damien Chazelle", "evidence": [CHAZELLE]},
            {"reasoning": "He was born in Paris.", "answer": "Paris"},
        ],
    }
    judge = judge_by_step({"Chazelle directed": judgement(), "born in Paris": judgement()})
    default = run(trace, judge, "stepgap", FakeNLI()).steps[1]
    assert (default.label, default.pipeline_path) == ("IE", f"{ON}, stageC:no_quote, stageE:no_entailing_prior")
    result = run(trace, judge, "stepgap-no-E", FakeNLI())
    assert (result.steps[1].label, result.steps[1].pipeline_path) == ("no-gap", f"{ON}, stageC:no_quote")
    assert (result.variant, result.binary) == ("stepgap-no-E", False)


def test_an_unregistered_switch_set_is_named_custom() -> None:
    trace = {"question": "Q?", "steps": [{"reasoning": "Step.", "query": "q"}]}
    graph = build_checker_graph(
        ScriptedGenerator([judgement()]), nli=FakeNLI(), config=StepGapConfig(disable_stages={"B"})
    )
    assert asyncio.run(graph.ainvoke({"trace": trace}))["checks"].variant == "custom(disable_stages=['B'])"


# -- the threshold sweep (§5 degeneracy check) ----------------------------------------------------------------
def step_check(label: str | None, confidence: float, tree_label: str | None = None) -> StepCheck:
    return StepCheck(
        index=0,
        kind="inference",
        label=label,  # type: ignore[arg-type]
        confidence=confidence,
        rationale="",
        pipeline_path="",
        tree_label=tree_label,  # type: ignore[arg-type]
    )


def test_threshold_sweep_relabels_from_the_tree_label() -> None:
    checks = [
        step_check("IE", 0.95),  # confident gap: flagged at every τ
        step_check("no-gap", 0.45, tree_label="MB"),  # unflagged by a run at 0.5: the sweep restores it below 0.45
        step_check("CC", 0.65),  # flagged up to τ = 0.65
        step_check("no-gap", 0.2),  # never a gap
        step_check(None, 0.0),  # the judge failed: not counted
    ]
    sweep = threshold_sweep(checks, [0.3, 0.5, 0.7])
    assert list(sweep) == [0.3, 0.5, 0.7]
    assert sweep[0.3] == {"no-gap": 0.25, "CC": 0.25, "IE": 0.25, "MB": 0.25}
    assert sweep[0.5] == {"no-gap": 0.5, "CC": 0.25, "IE": 0.25, "MB": 0.0}
    assert sweep[0.7] == {"no-gap": 0.75, "CC": 0.0, "IE": 0.25, "MB": 0.0}
    with pytest.raises(ValueError, match=r"1\.5"):
        threshold_sweep(checks, [0.5, 1.5])


def test_a_confident_ie_collapse_stays_degenerate_across_the_sweep() -> None:
    checks = [step_check("IE", 0.95)] * 9 + [step_check("no-gap", 0.9)]
    assert all(is_degenerate(d) for d in threshold_sweep(checks).values())  # default τ ∈ {0.3, …, 0.9}
