"""Response synthesis for RAG-Zeval (specs/rag-zeval.md §2.4, §6, §8, O6, O12-O14): prompts
(:mod:`~evigraph.agents.rag_zeval.synthesis_prompts`), loaders (:mod:`~evigraph.agents.rag_zeval.synthesis_data`),
the length filter, dedupe, ranked sets, the 3 -> 4 curriculum and the resumable job
(:mod:`~evigraph.agents.rag_zeval.synthesis`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evigraph.agents.rag_zeval import synthesis
from evigraph.agents.rag_zeval.cad import CadOutput
from evigraph.agents.rag_zeval.schemas import RankedCandidate, RankedSet
from evigraph.agents.rag_zeval.synthesis import (
    Skipped,
    SynthesisConfig,
    dedupe_check,
    passage_token_count,
    run_synthesis,
    skipped_path,
    synthesize,
)
from evigraph.agents.rag_zeval.synthesis_data import SynthesisItem, load_items
from evigraph.agents.rag_zeval.synthesis_prompts import (
    DEMONSTRATIONS,
    encode_prompts,
    with_passage_prompt,
    without_passage_prompt,
)
from evigraph.errors import ConfigError, InputDataError
from tests.markers import shared_data

HOTPOTQA = shared_data("hotpotqa-dev-ircot500") / "dev_subsampled.jsonl"
VERI_R1 = shared_data("veri-r1-claim-verification") / "test_offline.jsonl"


class WordTokenizer:
    """Whitespace 'tokenizer' (one id per distinct word): enough for prompt encoding and the length filter."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": [self.vocab.setdefault(word, len(self.vocab)) for word in text.split()]}

    def decode(self, ids: Sequence[int]) -> str:
        words = {i: w for w, i in self.vocab.items()}
        return " ".join(words[i] for i in ids)


def _write(path: Path, *lines: Any) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def _item(i: int, passage: str = "Paris is the capital of France.") -> SynthesisItem:
    return SynthesisItem(id=f"q{i}", question=f"question {i}", passage=passage, dataset="toy")


def _fake_cad(texts_by_question: dict[str, Sequence[str]] | None = None) -> Any:
    """A stand-in for cad_generate: per alpha a text naming the alpha (or the given texts)."""
    calls: list[tuple[list[int], list[int]]] = []

    def fake(
        model: Any, tokenizer: Any, with_ids: list[int], without_ids: list[int], alphas: Sequence[float], **_: Any
    ) -> list[CadOutput]:
        calls.append((with_ids, without_ids))
        texts = [f"answer at {a}" for a in alphas]
        prompt = tokenizer.decode(with_ids)
        for question, given in (texts_by_question or {}).items():
            if f"Question: {question} Passage:" in prompt:
                texts = list(given)
        return [
            CadOutput(alpha=a, token_ids=(1,), text=t, finish_reason="stop") for a, t in zip(alphas, texts, strict=True)
        ]

    fake.calls = calls  # type: ignore[attr-defined]
    return fake


# --------------------------------------------------------------------------------------------------- prompts


def test_prompts_share_the_demonstrations_and_differ_only_by_passages() -> None:
    question, passage = "who built the eiffel tower", "The tower was built by Gustave Eiffel's company."
    with_prompt, without_prompt = with_passage_prompt(question, passage), without_passage_prompt(question)
    assert with_prompt.endswith(f"Question: {question}\nPassage: {passage}\nAnswer:")
    assert without_prompt.endswith(f"Question: {question}\nAnswer:")
    assert "Passage:" not in without_prompt and passage not in without_prompt
    assert with_prompt.count("Question:") == without_prompt.count("Question:") == 3
    assert with_prompt.count("Passage:") == 3 and "passage" in with_prompt.split("\n")[0].lower()
    assert len(DEMONSTRATIONS) == 2
    for demo in DEMONSTRATIONS:
        qa = f"Question: {demo.question}\n"
        assert qa in with_prompt and qa in without_prompt
        assert f"Passage: {demo.passage}\nAnswer: {demo.answer}\n\n" in with_prompt
        assert f"{qa}Answer: {demo.answer}\n\n" in without_prompt
        text = (demo.question + demo.passage).lower()
        assert "concept car" not in text and "pope" not in text


def test_encode_prompts_and_passage_token_count(tiny_tokenizer: Any) -> None:
    with_ids, without_ids = encode_prompts(tiny_tokenizer, "who wrote hamlet", "Shakespeare wrote it.")
    assert tiny_tokenizer.decode(with_ids).endswith("Passage: Shakespeare wrote it.\nAnswer:")
    assert tiny_tokenizer.decode(without_ids).endswith("Question: who wrote hamlet\nAnswer:")
    text = "one two three"
    assert passage_token_count(tiny_tokenizer, text) == len(tiny_tokenizer.encode(text, add_special_tokens=False))


# --------------------------------------------------------------------------------------------------- loaders


def test_load_our_jsonl(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "mine.jsonl",
        {"id": 7, "question": "q?", "passage": "p.", "extra": 1},
        "",
        {"id": "b", "question": "r?", "passage": "s.", "dataset": "nq"},
    )
    items = load_items(path)
    assert [(i.id, i.source) for i in items] == [("7", "mine:7"), ("b", "nq:b")]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"id": "a", "question": "q?"}, "mine.jsonl:2: field passage"),
        ({"id": "a", "question": "  ", "passage": "p"}, "mine.jsonl:2: field question"),
        ({"id": "x", "question": "q?", "passage": "p"}, "mine.jsonl:2: field id: duplicate id 'x' (line 1)"),
        ("[1, 2]", "mine.jsonl:2: expected a JSON object"),
        ({"question_id": "h", "question_text": "q?", "contexts": "no"}, "mine.jsonl:2: field contexts"),
        (
            {"question_id": "h", "question_text": "q?", "contexts": [{"paragraph_text": "t", "is_supporting": False}]},
            "mine.jsonl:2: field contexts: no paragraph has is_supporting",
        ),
        ({"question_id": "h", "contexts": []}, "mine.jsonl:2: field question_text: missing"),
        ({"id": "v", "question": "A claim.", "golden_answers": {}}, "mine.jsonl:2: a Veri-R1"),
    ],
)
def test_loader_errors_name_file_line_and_field(tmp_path: Path, line: Any, message: str) -> None:
    path = _write(tmp_path / "mine.jsonl", {"id": "x", "question": "q?", "passage": "p"}, line)
    with pytest.raises(InputDataError, match=re.escape(message)):
        load_items(path)


def test_loader_refuses_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such input file"):
        load_items(tmp_path / "absent.jsonl")
    with pytest.raises(InputDataError, match="no item"):
        load_items(_write(tmp_path / "empty.jsonl", ""))


def test_hotpotqa_line_joins_the_supporting_paragraphs(tmp_path: Path) -> None:
    line = {
        "question_id": "h1",
        "question_text": "Which river flows through the capital?",
        "answers_objects": [{"spans": ["Seine"]}],
        "contexts": [
            {
                "id": "0",
                "title": "Paris",
                "paragraph_text": "Paris is the capital.  It is large.",
                "is_supporting": True,
            },
            {"id": "1", "title": "Rome", "paragraph_text": "Rome is old.", "is_supporting": False},
            {"id": "2", "title": "Seine", "paragraph_text": "The Seine flows\nthrough Paris.", "is_supporting": True},
        ],
    }
    (item,) = load_items(_write(tmp_path / "dev.jsonl", line))
    assert item.passage == "Paris is the capital. It is large.\nThe Seine flows through Paris."
    assert (item.id, item.question, item.source) == ("h1", "Which river flows through the capital?", "hotpotqa:h1")


@pytest.mark.skipif(not HOTPOTQA.is_file(), reason="shared HotpotQA data absent")
def test_shared_hotpotqa_file() -> None:
    items = load_items(HOTPOTQA)
    assert len(items) == 500 and len({i.id for i in items}) == 500
    first = items[0]
    assert first.source == "hotpotqa:5a8c7595554299585d9e36b6"
    assert first.question.startswith("What government position was held by the woman who portrayed Corliss")
    assert "Chief of Protocol" in first.passage and "  " not in first.passage
    assert all(item.passage.count("\n") == 1 for item in items)  # exactly two supporting paragraphs each


@pytest.mark.skipif(not VERI_R1.is_file(), reason="shared Veri-R1 data absent")
def test_shared_veri_r1_file_is_refused_with_a_reason() -> None:
    with pytest.raises(InputDataError, match=r"test_offline\.jsonl:1: a Veri-R1 claim-verification record"):
        load_items(VERI_R1)


# --------------------------------------------------------------------------------------------- dedupe / sets


def _outputs(*texts: str, alphas: Sequence[float] = (0.0, -0.5, -1.0, -1.4)) -> list[CadOutput]:
    return [CadOutput(alpha=a, token_ids=(), text=t, finish_reason="eos") for a, t in zip(alphas, texts, strict=True)]


def test_dedupe_check() -> None:
    assert dedupe_check(_outputs("a", "b", "c", "d")) is None
    assert dedupe_check(_outputs("a", "b", " c\n", "c")) == ("duplicate", "identical responses at alpha -1 = -1.4")
    assert dedupe_check(_outputs("a", "b", "c", " \n")) == ("empty", "empty response at alpha -1.4")
    assert dedupe_check(_outputs("a", "a", "", "")) is not None


def test_synthesize_builds_best_first_sets_and_skips_duplicates(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = {
        "question 1": [" same ", "x", "same", "y"],  # alpha (-0.5, 0, -1.4, -1) order below: 0 == -1.4
        "question 2": ["a", "", "b", "c"],
    }
    fake = _fake_cad(texts)
    monkeypatch.setattr(synthesis, "cad_generate", fake)
    alphas = (-0.5, 0.0, -1.4, -1.0)  # any order: candidates come out best first
    items = [_item(0), _item(1), _item(2), _item(3, passage="word " * 50)]
    results = list(synthesize(items, None, WordTokenizer(), alphas, max_passage_tokens=40))
    first, dup, empty, long = results
    assert isinstance(first, RankedSet)
    assert [c.alpha for c in first.candidates] == [0.0, -0.5, -1.0, -1.4]
    assert [c.text for c in first.candidates] == ["answer at 0.0", "answer at -0.5", "answer at -1.0", "answer at -1.4"]
    assert (first.id, first.source, first.kind, first.reference) == ("q0", "toy:q0", "faithfulness", items[0].passage)
    assert first.question == "question 0"
    assert isinstance(dup, Skipped) and (dup.reason, dup.id) == ("duplicate", "q1")
    assert dup.detail == "identical responses at alpha -0.5 = -1.4" and dup.texts == ("same", "x", "same", "y")
    assert isinstance(empty, Skipped) and empty.reason == "empty" and empty.detail.endswith("alpha 0")
    assert isinstance(long, Skipped) and long.reason == "too_long" and long.detail == "passage has 50 tokens (limit 40)"
    assert len(fake.calls) == 3  # the long item was never decoded
    assert list(synthesize([_item(3, passage="word " * 50)], None, WordTokenizer(), max_passage_tokens=None))


def test_synthesize_rejects_bad_alphas() -> None:
    with pytest.raises(ConfigError, match="distinct"):
        next(synthesize([_item(0)], None, WordTokenizer(), (0.0, 0.0)))
    with pytest.raises(ConfigError, match="at least 2"):
        next(synthesize([_item(0)], None, WordTokenizer(), (0.0,)))


def test_synthesize_on_the_tiny_model(tiny_llama_dir: Path) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_llama_dir, dtype=torch.float32).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_llama_dir)
    item = SynthesisItem(
        id="t1", question="where is the louvre", passage="The Louvre is a museum in Paris.", dataset="toy"
    )
    (result,) = synthesize([item], model, tokenizer, max_new_tokens=8)
    assert isinstance(result, RankedSet | Skipped)
    if isinstance(result, RankedSet):
        assert [c.alpha for c in result.candidates] == [0.0, -0.5, -1.0, -1.4]
        assert all(c.text == c.text.strip() and c.text for c in result.candidates)


# ------------------------------------------------------------------------------------------------ curriculum


def _set(i: int, size: int = 4) -> RankedSet:
    alphas = (0.0, -0.5, -1.0, -1.4, -2.0)[:size]
    return RankedSet(
        id=f"s{i}",
        question="q",
        reference="r",
        candidates=tuple(RankedCandidate(text=f"t{a}", alpha=a) for a in alphas),
    )


def test_curriculum_subsets_are_seeded_and_best_first() -> None:
    """Spec O6: epoch 1 sees a seeded random 3 of each question's 4 candidates (``RankedSet.subset``, which the
    training curriculum's first stage applies through the adapter)."""
    sets = [_set(i) for i in range(40)]
    first = [s.subset(3, seed=1) for s in sets]
    assert first == [s.subset(3, seed=1) for s in sets]
    assert all(len(s.candidates) == 3 for s in first)
    assert all([c.alpha for c in s.candidates] == sorted((c.alpha for c in s.candidates), reverse=True) for s in first)
    choices = {tuple(c.alpha for c in s.candidates) for s in first}
    assert len(choices) > 1  # a random 3-subset per question, not always the same three
    assert [s.subset(3, seed=2) for s in sets] != first
    assert sets[0].subset(4, seed=1) == sets[0]
    with pytest.raises(ValueError, match="at least 2"):
        sets[0].subset(1, seed=0)


# ------------------------------------------------------------------------------------------------------ job


def test_config_defaults_and_validation() -> None:
    config = SynthesisConfig()
    assert config.alphas == (0.0, -0.5, -1.0, -1.4)
    assert (config.max_new_tokens, config.max_passage_tokens, config.limit, config.seed) == (256, 6000, None, 0)
    assert config.stop_strings == ("\nQuestion:",)
    with pytest.raises(ValidationError, match="distinct"):
        SynthesisConfig(alphas=(0, -1, -1))
    with pytest.raises(ValidationError):
        SynthesisConfig(max_new_tokens=0)
    with pytest.raises(ValidationError):
        SynthesisConfig(temperature=1.0)  # type: ignore[call-arg]


def test_run_synthesis_writes_skips_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_cad({"question 2": ["a", "b", "b", "c"]})
    monkeypatch.setattr(synthesis, "cad_generate", fake)
    out = tmp_path / "sets" / "out.jsonl"
    items = [_item(i) for i in range(4)] + [_item(9, passage="word " * 20)]
    config = SynthesisConfig(max_passage_tokens=10)
    seen: list[Any] = []
    summary = run_synthesis(config, items, None, WordTokenizer(), out, on_result=seen.append)
    assert (summary.written, summary.skipped_duplicate, summary.skipped_long, summary.already_done) == (3, 1, 1, 0)
    assert summary.skipped_empty == 0 and summary.seconds >= 0 and summary.out_path == str(out)
    lines = [RankedSet.model_validate_json(line) for line in out.read_text().splitlines()]
    assert [s.id for s in lines] == ["q0", "q1", "q3"] and len(seen) == 5
    skipped = skipped_path(out)
    assert skipped.name == "out.skipped.jsonl"
    assert [json.loads(line)["id"] for line in skipped.read_text().splitlines()] == ["q2"]

    # a writer killed mid-line: the torn tail is cut, and that item is decoded again
    out.write_text(out.read_text() + '{"id": "q4", "questi')
    calls_before = len(fake.calls)
    again = run_synthesis(config, [*items, _item(4)], None, WordTokenizer(), out)
    assert (again.written, again.already_done, again.skipped_long) == (1, 4, 1)
    assert len(fake.calls) == calls_before + 1
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["q0", "q1", "q3", "q4"]


def test_run_synthesis_limit_counts_earlier_sets_and_is_seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synthesis, "cad_generate", _fake_cad())
    items = [_item(i) for i in range(20)]
    config = SynthesisConfig(limit=5, seed=7)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert run_synthesis(config, items, None, WordTokenizer(), a).written == 5
    assert run_synthesis(config, items, None, WordTokenizer(), b).written == 5
    ids = [json.loads(line)["id"] for line in a.read_text().splitlines()]
    assert ids == [json.loads(line)["id"] for line in b.read_text().splitlines()]
    assert ids != [f"q{i}" for i in range(5)]  # a seeded random sample, not the first five
    resumed = run_synthesis(config, items, None, WordTokenizer(), a)
    assert resumed.written == 0
    bigger = run_synthesis(config.model_copy(update={"limit": 7}), items, None, WordTokenizer(), a)
    assert (bigger.written, bigger.already_done) == (2, 5)
    assert len(a.read_text().splitlines()) == 7


def test_run_synthesis_rejects_a_foreign_output_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synthesis, "cad_generate", _fake_cad())
    out = _write(tmp_path / "out.jsonl", {"question": "no id"})
    with pytest.raises(InputDataError, match=r"out\.jsonl:1: field id"):
        run_synthesis(SynthesisConfig(), [_item(0)], None, WordTokenizer(), out)
