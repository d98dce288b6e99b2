"""Tests of :mod:`evigraph.tools.nli` (specs/stepgap.md §2.5, §9 #6, #7): the decision table, label-order
calibration, a tiny random DeBERTa-v2 cross-encoder built here (loading, batching, truncation, cache,
refusals), the generator fallback (scripted and a tiny transformers model) and the LangChain face."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from evigraph.errors import ConfigError, ToolError
from evigraph.generators import BaseGenerator, Continuation, SamplingParams, ScriptedGenerator
from evigraph.tools.nli import (
    GeneratorNLI,
    NLIModel,
    NLIResult,
    calibrate_label_order,
    make_nli,
    nli_decision,
    render_nli_result,
)
from evigraph.tools.nli.generator import LABEL_WORDS, nli_transcript
from evigraph.tools.nli.labels import PROBE_PAIRS, parse_id2label, parse_label_order
from evigraph.tools.nli.results import softmax
from evigraph.trajectory import Segment

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

NAMED = {0: "entailment", 1: "neutral", 2: "contradiction"}
GENERIC = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
VOCABULARY = (
    "a cat is an animal not the dog was born in paris france city of river capital on his her wife married "
    "author book wrote film director directed 1889 tower tall metres eiffel completed president year he she it"
)
PAIRS = [
    ("The Eiffel Tower was completed in 1889.", "The tower was completed in 1889."),
    ("Paris is the capital of France.", "Paris is not the capital of France."),
    ("He wrote the book.", "She directed the film."),
    ("The dog was born in Paris.", "The dog was born in France."),
    ("A cat is an animal.", "A cat is an animal."),
    ("The river of the city of Paris on the year he was born was not tall.", "It is tall."),
]


# -- fixtures: a tiny random DeBERTa-v2 classifier with a word-level tokenizer ----------------------------
@pytest.fixture(scope="module")
def nli_tokenizer() -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {token: i for i, token in enumerate([*specials, *dict.fromkeys(VOCABULARY.split()), ".", ","])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=24,
    )


@pytest.fixture(scope="module")
def make_checkpoint(nli_tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Build and save a tiny random DeBERTa-v2 sequence classifier (seeded; ``bias`` zeroes the classifier's
    weights and sets its bias, so every input gets exactly these logits)."""

    def build(
        name: str, *, id2label: dict[int, str] = NAMED, bias: Sequence[float] | None = None, seed: int = 0
    ) -> Path:
        config = transformers.DebertaV2Config(
            vocab_size=len(nli_tokenizer),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            initializer_range=0.3,  # varied logits across inputs (0.02 gives near-constant ones)
            pad_token_id=0,
            num_labels=len(id2label),
            id2label=id2label,
            label2id={v: k for k, v in id2label.items()},
        )
        torch.manual_seed(seed)
        model = transformers.DebertaV2ForSequenceClassification(config)
        if bias is not None:
            with torch.no_grad():
                model.classifier.weight.zero_()
                model.classifier.bias.copy_(torch.tensor(bias))
        directory = tmp_path_factory.mktemp(name)
        model.save_pretrained(directory)
        nli_tokenizer.save_pretrained(directory)
        return directory

    return build


@pytest.fixture(scope="module")
def tiny_dir(make_checkpoint: Callable[..., Path]) -> Path:
    return make_checkpoint("tiny-nli")


@pytest.fixture(scope="module")
def tiny_nli(tiny_dir: Path) -> NLIModel:
    return NLIModel(tiny_dir, num_threads=1, batch_size=4)


def close(a: NLIResult, b: NLIResult, tol: float = 1e-5) -> bool:
    fields = ("p_entailment", "p_neutral", "p_contradiction")
    return a.label == b.label and all(math.isclose(getattr(a, f), getattr(b, f), abs_tol=tol) for f in fields)


# -- the decision rule (§2.5 table) -------------------------------------------------------------------------
DECISIONS = [
    ((0.80, 0.15, 0.05), "ENTAILMENT"),  # N-1
    ((0.45, 0.20, 0.35), "NEUTRAL"),  # N-2: argmax E but < 0.5
    ((0.10, 0.25, 0.65), "CONTRADICTION"),  # N-3
    ((0.40, 0.20, 0.40), "NEUTRAL"),  # N-4: tie
    ((0.50, 0.00, 0.50), "NEUTRAL"),  # N-5: tie at the threshold
    ((0.30, 0.60, 0.10), "NEUTRAL"),  # N-6: neutral wins
    ((0.50, 0.30, 0.20), "ENTAILMENT"),  # N-7: >= 0.5 and the unique maximum
]


@pytest.mark.parametrize(("probabilities", "label"), DECISIONS, ids=[f"N-{i}" for i in range(1, 8)])
def test_stepgap_2_5_decision_table(probabilities: tuple[float, float, float], label: str) -> None:
    assert nli_decision(*probabilities) == label
    assert NLIResult.from_probabilities(probabilities, "test").label == label


def test_stepgap_2_5_probe_example() -> None:
    # The identical-pair logits [-2.1, 5.3, -1.0] put ENTAILMENT at index 1.
    order = calibrate_label_order(None, [-2.1, 5.3, -1.0], [3.0, -1.0, 0.0])
    assert order.labels.index("ENTAILMENT") == 1
    assert order.labels == ("CONTRADICTION", "ENTAILMENT", "NEUTRAL") and order.method == "probe"
    assert order.arrange(softmax([-2.1, 5.3, -1.0]))[0] > 0.99


# -- label-order calibration (pure) -------------------------------------------------------------------------
def test_id2label_names_are_trusted_and_probe_disagreement_is_a_warning() -> None:
    named = parse_id2label({0: "CONTRADICTION", 1: "Entailment", 2: "neutral"}, source="cfg")
    agree = calibrate_label_order(named, [0, 5, 1], [5, 0, 1])
    assert agree.labels == ("CONTRADICTION", "ENTAILMENT", "NEUTRAL") and agree.method == "id2label"
    assert agree.warnings == ()
    disagree = calibrate_label_order(named, [5, 0, 1], [5, 0, 1])  # both probes pick index 0
    assert disagree.labels == named  # names win
    assert len(disagree.warnings) == 1 and "identical-pair probe picked index 0" in disagree.warnings[0]


def test_forced_order_wins_and_records_what_disagrees() -> None:
    forced = parse_label_order(("entailment", "neutral", "contradiction"))
    order = calibrate_label_order(parse_id2label(GENERIC, source="cfg"), [1, 1, 0], [0, 0, 3], forced=forced)
    assert order.method == "forced" and order.labels == ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")
    assert order.probe_entailment_index is None  # a tied probe
    assert "a tie" in order.warnings[0]
    overriding = calibrate_label_order(parse_id2label(NAMED, source="cfg"), [0, 1, 2], [2, 1, 0], forced=forced[::-1])
    assert any("overrides the checkpoint's id2label" in w for w in overriding.warnings)


@pytest.mark.parametrize(
    ("identical", "negated"),
    [
        ([0.1, 0.5, 0.2], [0.1, 0.5, 0.2]),  # both probes pick index 1: random weights
        ([1.0, 1.0, 0.0], [0.0, 0.0, 2.0]),  # the identical-pair probe is tied
    ],
)
def test_unnamed_labels_with_degenerate_probes_are_refused(identical: list[float], negated: list[float]) -> None:
    with pytest.raises(ConfigError, match="label_order="):
        calibrate_label_order(None, identical, negated)


@pytest.mark.parametrize(
    "id2label",
    [
        {0: "positive", 1: "neutral", 2: "negative"},  # sentiment
        {0: "entailment", 1: "LABEL_1", 2: "contradiction"},  # names and LABEL_n mixed
        {0: "entailment", 1: "entailment", 2: "contradiction"},  # a name twice
        {0: "entailment", 1: "neutral", 3: "contradiction"},  # bad indices
    ],
)
def test_id2label_that_is_not_an_nli_set_is_refused(id2label: dict[int, str]) -> None:
    with pytest.raises(ConfigError, match="cfg"):
        parse_id2label(id2label, source="cfg")


def test_parse_id2label_reads_names_and_generic_labels() -> None:
    assert parse_id2label(GENERIC, source="cfg") is None
    assert parse_id2label({"0": "contradicts", "1": "entails", "2": "NEUTRAL"}, source="cfg") == (
        "CONTRADICTION",
        "ENTAILMENT",
        "NEUTRAL",
    )
    with pytest.raises(ConfigError, match="three names"):
        parse_label_order(("entailment", "neutral"))


# -- the cross-encoder ---------------------------------------------------------------------------------------
def test_loads_a_checkpoint_and_describes_itself(tiny_nli: NLIModel, tiny_dir: Path) -> None:
    result = tiny_nli.classify(*PAIRS[0])
    assert result.engine == f"cross-encoder:{tiny_dir.name}"
    assert math.isclose(result.p_entailment + result.p_neutral + result.p_contradiction, 1.0, abs_tol=1e-9)
    assert result.label == nli_decision(result.p_entailment, result.p_neutral, result.p_contradiction)
    described = tiny_nli.describe()
    assert described["kind"] == "cross-encoder" and described["source"] == str(tiny_dir)
    assert described["label_order"] == ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"]
    assert described["label_order_method"] == "id2label"
    assert described["max_length"] == 24  # the tokenizer's limit is below the position table's 64
    assert tiny_nli.label_order.probe_entailment_index is not None


def test_batched_results_equal_one_at_a_time(tiny_dir: Path) -> None:
    nli = NLIModel(tiny_dir, num_threads=1, cache_size=0)
    batched = nli.batch_classify(PAIRS, batch_size=4)
    single = [nli.classify(p, h) for p, h in PAIRS]
    assert all(close(a, b) for a, b in zip(batched, single, strict=True))
    # The inputs reach the model: different pairs give different probabilities.
    assert len({round(r.p_entailment, 6) for r in batched}) > 1


async def test_async_face_equals_the_sync_one(tiny_nli: NLIModel) -> None:
    results = await tiny_nli.abatch_classify(PAIRS)
    assert all(close(a, b) for a, b in zip(results, tiny_nli.batch_classify(PAIRS), strict=True))
    assert close(await tiny_nli.aclassify(*PAIRS[1]), tiny_nli.classify(*PAIRS[1]))


def test_truncation_cuts_the_premise_first(tiny_dir: Path) -> None:
    nli = NLIModel(tiny_dir, num_threads=1, max_length=12, cache_size=0)
    long_premise = " ".join(["the dog was born in paris ."] * 6)
    encoded = nli._encode([(long_premise, "a cat is an animal .")])
    ids = encoded["input_ids"][0].tolist()
    assert len(ids) == 12
    hypothesis_ids = nli._tokenizer("a cat is an animal .", add_special_tokens=False)["input_ids"]
    assert ids[-len(hypothesis_ids) - 1 : -1] == hypothesis_ids  # the hypothesis survives whole
    # A hypothesis longer than the limit by itself is cut too, and batching stays consistent.
    pairs = [(long_premise, long_premise), *PAIRS[:2]]
    batched = nli.batch_classify(pairs)
    assert all(close(a, nli.classify(*p)) for a, p in zip(batched, pairs, strict=True))


def test_cache_hits_misses_and_eviction(tiny_dir: Path) -> None:
    nli = NLIModel(tiny_dir, num_threads=1, cache_size=2)
    first = nli.classify(*PAIRS[0])
    assert nli.classify(*PAIRS[0]) == first
    assert nli.cache_info() == (1, 1, 1, 2)
    # A pair repeated inside one call is scored once; the cache keeps the 2 most recent pairs.
    nli.batch_classify([PAIRS[1], PAIRS[2], PAIRS[1]])
    info = nli.cache_info()
    assert (info.hits, info.misses, info.size) == (2, 3, 2)
    nli.classify(*PAIRS[0])  # evicted: a miss again
    assert nli.cache_info().misses == 4
    nli.clear_cache()
    assert nli.cache_info() == (0, 0, 0, 2)


def test_the_engine_runs_once_per_distinct_uncached_pair(tiny_nli: NLIModel, monkeypatch: pytest.MonkeyPatch) -> None:
    tiny_nli.clear_cache()
    seen: list[list[tuple[str, str]]] = []
    original = tiny_nli._score

    def spy(pairs: list[tuple[str, str]], batch_size: int) -> list[tuple[float, float, float]]:
        seen.append(pairs)
        return original(pairs, batch_size)

    monkeypatch.setattr(tiny_nli, "_score", spy)
    tiny_nli.batch_classify([PAIRS[0], PAIRS[0], PAIRS[1]])
    tiny_nli.batch_classify([PAIRS[1], PAIRS[2]])
    assert seen == [[PAIRS[0], PAIRS[1]], [PAIRS[2]]]


def test_probes_decide_when_id2label_names_nothing(
    make_checkpoint: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = make_checkpoint("generic-nli", id2label=GENERIC)
    probe_logits = {PROBE_PAIRS[0]: [-2.1, 5.3, -1.0], PROBE_PAIRS[1]: [4.0, 0.1, -1.0]}
    original = NLIModel._logits

    def scripted_probes(self: NLIModel, pairs: list[tuple[str, str]], batch_size: int) -> list[list[float]]:
        if all(pair in probe_logits for pair in pairs):
            return [probe_logits[pair] for pair in pairs]
        return original(self, pairs, batch_size)

    monkeypatch.setattr(NLIModel, "_logits", scripted_probes)
    nli = NLIModel(directory, num_threads=1)
    assert nli.label_order.labels == ("CONTRADICTION", "ENTAILMENT", "NEUTRAL")
    assert nli.describe()["label_order_method"] == "probe"
    # The real pairs still go through the model, mapped by the calibrated order.
    result = nli.classify(*PAIRS[0])
    raw = softmax(original(nli, [PAIRS[0]], 1)[0])
    assert math.isclose(result.p_entailment, raw[1], abs_tol=1e-9)
    assert math.isclose(result.p_contradiction, raw[0], abs_tol=1e-9)


def test_degenerate_probes_are_refused_unless_the_order_is_forced(make_checkpoint: Callable[..., Path]) -> None:
    # Zero classifier weights: every input (both probes too) gets the logits [0.1, 0.5, 0.2].
    directory = make_checkpoint("constant-nli", id2label=GENERIC, bias=[0.1, 0.5, 0.2])
    with pytest.raises(ConfigError, match="probes cannot tell them apart"):
        NLIModel(directory, num_threads=1)
    forced = NLIModel(directory, num_threads=1, label_order=("entailment", "neutral", "contradiction"))
    described = forced.describe()
    assert described["label_order_method"] == "forced"
    assert any("identical-pair probe picked index 1" in w for w in described["warnings"])
    assert forced.classify(*PAIRS[0]).label == "NEUTRAL"  # softmax(0.1, 0.5, 0.2): neutral is the max < 0.5


def test_named_labels_that_the_probes_contradict_give_warnings(make_checkpoint: Callable[..., Path]) -> None:
    directory = make_checkpoint("mislabelled-nli", bias=[0.0, 0.0, 3.0])  # always index 2 = "contradiction"
    nli = NLIModel(directory, num_threads=1)
    described = nli.describe()
    assert described["label_order_method"] == "id2label"
    assert described["warnings"] == [
        "the identical-pair probe picked index 2 (CONTRADICTION by id2label), not ENTAILMENT's index 0 by id2label"
    ]
    assert nli.classify(*PAIRS[0]).label == "CONTRADICTION"


def test_refuses_checkpoints_that_are_not_3_way_nli(
    make_checkpoint: Callable[..., Path], tmp_path: Path, nli_tokenizer: Any
) -> None:
    two_way = make_checkpoint("two-way", id2label={0: "entailment", 1: "not_entailment"})
    with pytest.raises(ConfigError, match=r"num_labels = 2") as caught:
        NLIModel(two_way)
    assert str(two_way) in str(caught.value)

    causal = tmp_path / "causal-lm"
    transformers.LlamaConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, vocab_size=64).save_pretrained(
        causal
    )
    config = transformers.AutoConfig.from_pretrained(causal)
    config.architectures = ["LlamaForCausalLM"]
    config.save_pretrained(causal)
    with pytest.raises(ConfigError, match=r"not a sequence classifier: architectures \['LlamaForCausalLM'\]"):
        NLIModel(causal)

    sentiment = tmp_path / "sentiment"
    labels = {0: "negative", 1: "neutral", 2: "positive"}
    transformers.DebertaV2Config(num_labels=3, id2label=labels, architectures=["X"]).save_pretrained(sentiment)
    with pytest.raises(ConfigError, match="not a sequence classifier"):
        NLIModel(sentiment)
    sentiment_cls = tmp_path / "sentiment-cls"
    config = transformers.DebertaV2Config(num_labels=3, id2label=labels)
    config.architectures = ["DebertaV2ForSequenceClassification"]
    config.save_pretrained(sentiment_cls)
    with pytest.raises(ConfigError, match=r"id2label \['negative', 'neutral', 'positive'\] is not the three NLI"):
        NLIModel(sentiment_cls)

    with pytest.raises(ConfigError, match="is not a directory"):
        NLIModel(tmp_path / "missing")
    with pytest.raises(ConfigError, match="no readable model config"):
        NLIModel(tmp_path)


def test_a_failing_engine_raises_tool_error(tiny_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nli = NLIModel(tiny_dir, num_threads=1)

    def broken(pairs: list[tuple[str, str]], batch_size: int) -> list[list[float]]:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(nli, "_logits", broken)
    with pytest.raises(ToolError, match="NLI failed: RuntimeError: out of memory"):
        nli.classify("a", "b")
    with pytest.raises(ConfigError, match="tuple of strings"):
        nli.batch_classify([("only a premise",)])  # type: ignore[list-item]


# -- the LangChain face -------------------------------------------------------------------------------------
async def test_langchain_tool_returns_label_and_probabilities(
    tiny_nli: NLIModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tiny_nli.as_langchain_tool()
    assert tool.name == "nli" and set(tool.args) == {"premise", "hypothesis"}
    assert "ENTAILMENT" in tool.description
    expected = render_nli_result(tiny_nli.classify(*PAIRS[0]))
    assert tool.invoke({"premise": PAIRS[0][0], "hypothesis": PAIRS[0][1]}) == expected
    assert await tool.ainvoke({"premise": PAIRS[0][0], "hypothesis": PAIRS[0][1]}) == expected
    assert expected.split(" (")[0] in {"ENTAILMENT", "NEUTRAL", "CONTRADICTION"} and "p_neutral=" in expected

    def broken(pairs: list[tuple[str, str]], batch_size: int) -> list[list[float]]:
        raise RuntimeError("device lost <|im_end|>")

    monkeypatch.setattr(tiny_nli, "_logits", broken)
    observation = tool.invoke({"premise": "new premise", "hypothesis": "new hypothesis"})
    assert observation.startswith("NLI failed:") and "<|im_end|>" not in observation  # escaped


# -- the generator fallback ---------------------------------------------------------------------------------
def _overlap_scores(transcript: list[Segment], continuations: list[str]) -> list[float]:
    """Entailment when the hypothesis line appears verbatim in the premise line, else neutral."""
    text = transcript[-1].text
    premise = text.split("Premise: ")[1].split("\n")[0]
    hypothesis = text.split("Hypothesis: ")[1].split("\n")[0]
    entailed = hypothesis.rstrip(".") in premise
    return [-0.1, -3.0, -4.0] if entailed else [-3.0, -0.2, -2.5]


def test_scripted_generator_fallback() -> None:
    seen: list[list[Segment]] = []

    def scores(transcript: list[Segment], continuations: list[str]) -> list[float]:
        seen.append(transcript)
        assert continuations == list(LABEL_WORDS)
        return _overlap_scores(transcript, continuations)

    nli = GeneratorNLI(ScriptedGenerator([], scores=scores, name="judge"))
    entailed, other = nli.batch_classify([("The tower is tall and old.", "The tower is tall."), PAIRS[2]])
    assert entailed.label == "ENTAILMENT" and entailed.engine == "generator:judge"
    assert math.isclose(entailed.p_entailment, softmax([-0.1, -3.0, -4.0])[0])
    assert other.label == "NEUTRAL"
    # Isolation: one user message holding the pair and nothing else; untrusted text is escaped.
    assert [s.origin for s in seen[0]] == ["prompt"]
    nli.classify("a <|im_end|> premise", "a hypothesis")
    assert "<|im_end|>" not in seen[-1][0].text and "premise" in seen[-1][0].text
    nli.classify(*PAIRS[2])
    assert nli.cache_info().hits == 1 and len(seen) == 3
    described = nli.describe()
    assert described["kind"] == "generator" and described["label_order_method"] == "prompt"
    assert "weaker" in described["warnings"][0] and described["source"] == "ScriptedGenerator judge"


async def test_fallback_inside_an_event_loop_is_async_only() -> None:
    nli = GeneratorNLI(ScriptedGenerator([], scores=_overlap_scores))
    assert (await nli.aclassify("It is tall and old.", "It is tall.")).label == "ENTAILMENT"
    with pytest.raises(ConfigError, match="await abatch_classify"):
        nli.classify("x", "y")
    tool = nli.as_langchain_tool()
    assert (await tool.ainvoke({"premise": "It is tall and old.", "hypothesis": "It is tall."})).startswith(
        "ENTAILMENT"
    )


class _TextOnly(BaseGenerator):
    name = "chat-api"

    async def _continue(self, transcript: list[Segment], params: SamplingParams) -> Continuation:
        return Continuation(text="neutral", finish_reason="eos")


def test_a_backend_that_cannot_score_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match=r"_TextOnly \('chat-api'\) returns logprobs of generated tokens only"):
        GeneratorNLI(_TextOnly())


async def test_transformers_generator_fallback(tiny_chat_lm: Any) -> None:
    nli = make_nli(None, tiny_chat_lm)
    assert isinstance(nli, GeneratorNLI)
    results = await nli.abatch_classify(PAIRS[:3])
    for (premise, hypothesis), result in zip(PAIRS[:3], results, strict=True):
        scores = await tiny_chat_lm.score_continuations(nli_transcript(premise, hypothesis), LABEL_WORDS)
        expected = softmax(scores)
        assert result.engine == "generator:tiny-lm"
        assert math.isclose(result.p_entailment, expected[0], abs_tol=1e-6)
        assert math.isclose(result.p_contradiction, expected[2], abs_tol=1e-6)


def test_transformers_generator_fallback_sync(tiny_chat_lm: Any) -> None:
    nli = GeneratorNLI(tiny_chat_lm, cache_size=0)
    assert close(nli.classify(*PAIRS[0]), nli.batch_classify([PAIRS[1], PAIRS[0]])[1], tol=1e-5)


# -- the factory ---------------------------------------------------------------------------------------------
def test_make_nli_picks_the_engine(tiny_dir: Path) -> None:
    generator = ScriptedGenerator([], scores=_overlap_scores)
    assert isinstance(make_nli(tiny_dir, generator, num_threads=1), NLIModel)
    assert isinstance(make_nli(None, generator), GeneratorNLI)
    with pytest.raises(ConfigError, match=r"NLI cross-encoder checkpoint .* or, as a weaker fallback, a generator"):
        make_nli(None, None)
    with pytest.raises(ConfigError, match="label_order apply to an NLI checkpoint"):
        make_nli(None, generator, label_order=("entailment", "neutral", "contradiction"))


def test_coalescing_sends_concurrent_callers_pairs_as_one_batch() -> None:
    import asyncio

    from evigraph.tools.nli import CoalescingNLI

    class Recording:
        engine = "recording"

        def __init__(self) -> None:
            self.batches: list[list[tuple[str, str]]] = []

        async def abatch_classify(self, pairs: list[tuple[str, str]]) -> list[str]:
            self.batches.append(list(pairs))
            return [f"{p}|{h}" for p, h in pairs]

    inner = Recording()
    nli = CoalescingNLI(inner)

    async def callers() -> list[list[str]]:
        return await asyncio.gather(
            nli.abatch_classify([("a", "x"), ("b", "y")]), nli.abatch_classify([("c", "z")]), nli.abatch_classify([])
        )

    first, second, empty = asyncio.run(callers())
    assert inner.batches == [[("a", "x"), ("b", "y"), ("c", "z")]] and nli.flushes == 1
    assert (first, second, empty) == (["a|x", "b|y"], ["c|z"], [])
    assert nli.engine == "recording"  # every other attribute is the engine's

    class Failing(Recording):
        async def abatch_classify(self, pairs: list[tuple[str, str]]) -> list[str]:
            raise RuntimeError("engine down")

    failing = CoalescingNLI(Failing())

    async def both() -> list[object]:
        return await asyncio.gather(
            failing.abatch_classify([("a", "x")]), failing.abatch_classify([("b", "y")]), return_exceptions=True
        )

    assert [str(e) for e in asyncio.run(both())] == ["engine down", "engine down"]
