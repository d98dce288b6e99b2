"""Ranked candidate sets by context-aware decoding (specs/rag-zeval.md §2.4, §6, §8, O12-O14), and the resumable
job that writes them.

For each item (question + grounding passage, :mod:`.synthesis_data`) one greedy CAD response per alpha is decoded
(:func:`evigraph.agents.rag_zeval.cad.cad_generate`) from the prompts of :mod:`.synthesis_prompts`; larger alpha =
more grounded, so the candidates of a :class:`RankedSet` are stored best first. An item whose responses contain an
empty text or two identical texts (after ``strip``) cannot be ranked (§8) and is skipped and reported
(:class:`Skipped`, O14), as is an item whose passage is longer than ``max_passage_tokens`` tokens of the
generator's tokenizer (§6).

:func:`run_synthesis` writes one ``RankedSet`` JSON line per item, appending and resuming (ids already in the
output, or already reported as skipped in its ``.skipped.jsonl`` companion, are not decoded again).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evigraph.agents.rag_zeval.cad import CadOutput, cad_generate
from evigraph.agents.rag_zeval.schemas import LETTERS, RankedCandidate, RankedSet
from evigraph.agents.rag_zeval.synthesis_data import SynthesisItem
from evigraph.agents.rag_zeval.synthesis_prompts import encode_prompts
from evigraph.errors import ConfigError, InputDataError
from evigraph.jsonl import append_jsonl, iter_json_objects, repair_torn_tail

__all__ = (
    "DEFAULT_ALPHAS",
    "SkipReason",
    "Skipped",
    "SynthesisConfig",
    "SynthesisSummary",
    "dedupe_check",
    "passage_token_count",
    "run_synthesis",
    "skipped_path",
    "synthesize",
)

DEFAULT_ALPHAS = (0.0, -0.5, -1.0, -1.4)
"""The paper's CAD weights (§2.4), best first."""

SkipReason = Literal["duplicate", "empty", "too_long"]


# ---------------------------------------------------------------------------------------------- synthesis


class Skipped(BaseModel):
    """An item that produced no ranked set, and why."""

    model_config = ConfigDict(frozen=True)

    id: str
    source: str
    reason: SkipReason
    detail: str
    alphas: tuple[float, ...] = ()
    texts: tuple[str, ...] = ()
    """The responses (stripped), one per alpha; empty for ``too_long``."""


def dedupe_check(outputs: Sequence[CadOutput]) -> tuple[SkipReason, str] | None:
    """Why these responses cannot make a ranked set (an empty text, or two identical texts after ``strip``),
    or None when they can (§8, O14)."""
    texts = [o.text.strip() for o in outputs]
    empty = [o.alpha for o, text in zip(outputs, texts, strict=True) if not text]
    if empty:
        return "empty", f"empty response at alpha {', '.join(f'{a:g}' for a in empty)}"
    seen: dict[str, float] = {}
    pairs = []
    for output, text in zip(outputs, texts, strict=True):
        if text in seen:
            pairs.append(f"{seen[text]:g} = {output.alpha:g}")
        else:
            seen[text] = output.alpha
    if pairs:
        return "duplicate", f"identical responses at alpha {'; '.join(pairs)}"
    return None


def passage_token_count(tokenizer: Any, passage: str) -> int:
    """The passage's length in the generator's tokens (no special tokens), for the §6 length filter."""
    return len(tokenizer(passage, add_special_tokens=False)["input_ids"])


def _check_alphas(alphas: Sequence[float]) -> tuple[float, ...]:
    values = tuple(float(a) for a in alphas)
    if len(values) < 2:
        raise ConfigError(f"a ranked set needs at least 2 alphas, got {list(values)}", source="alphas")
    if len(values) > len(LETTERS):
        raise ConfigError(f"at most {len(LETTERS)} alphas, got {len(values)}", source="alphas")
    if len(set(values)) != len(values):
        raise ConfigError(f"alphas must be distinct (a tie has no order), got {list(values)}", source="alphas")
    return values


def synthesize(
    items: Iterable[SynthesisItem],
    model: Any,
    tokenizer: Any,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    *,
    max_new_tokens: int = 256,
    max_passage_tokens: int | None = 6000,
    stop_strings: Sequence[str] = ("\nQuestion:",),
    eos_ids: Iterable[int] | None = None,
) -> Iterator[RankedSet | Skipped]:
    """One :class:`RankedSet` (candidates best first, ``kind="faithfulness"``, reference = the passage) or one
    :class:`Skipped` per item, lazily and in order.

    ``max_passage_tokens=None`` turns the length filter off.
    """
    values = _check_alphas(alphas)
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ends = None if eos_ids is None else frozenset(eos_ids)
    for item in items:
        if max_passage_tokens is not None:
            length = passage_token_count(tokenizer, item.passage)
            if length > max_passage_tokens:
                yield Skipped(
                    id=item.id,
                    source=item.source,
                    reason="too_long",
                    detail=f"passage has {length} tokens (limit {max_passage_tokens})",
                )
                continue
        with_ids, without_ids = encode_prompts(tokenizer, item.question, item.passage)
        outputs = cad_generate(
            model,
            tokenizer,
            with_ids,
            without_ids,
            values,
            max_new_tokens=max_new_tokens,
            stop_strings=stop_strings,
            eos_ids=ends,
        )
        problem = dedupe_check(outputs)
        if problem is not None:
            yield Skipped(
                id=item.id,
                source=item.source,
                reason=problem[0],
                detail=problem[1],
                alphas=values,
                texts=tuple(o.text.strip() for o in outputs),
            )
            continue
        yield RankedSet(
            id=item.id,
            question=item.question,
            reference=item.passage,
            candidates=tuple(RankedCandidate(text=outputs[i].text.strip(), alpha=values[i]) for i in order),
            kind="faithfulness",
            source=item.source,
        )


# ---------------------------------------------------------------------------------------------------- job


class SynthesisConfig(BaseModel):
    """Knobs of one synthesis job (``evigraph synthesize rag-zeval``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    """CAD weights, one response each; larger = more grounded (§2.4)."""
    max_new_tokens: int = Field(256, ge=1)
    """Token cap per response (O12)."""
    max_passage_tokens: int = Field(6000, ge=1)
    """Items whose passage has more tokens (generator's tokenizer) are skipped (§6)."""
    limit: int | None = Field(None, ge=1)
    """Stop once the output holds this many sets (earlier runs included); items are then visited in a random
    order fixed by ``seed`` (the paper samples 5,500 questions). None: every item, in input order."""
    seed: int = 0
    """Seed of the visiting order under ``limit``."""
    stop_strings: tuple[str, ...] = ("\nQuestion:",)
    """A response ends where one of these appears (O12)."""

    @field_validator("alphas")
    @classmethod
    def _valid_alphas(cls, alphas: tuple[float, ...]) -> tuple[float, ...]:
        return _check_alphas(alphas)


class SynthesisSummary(BaseModel):
    """What a synthesis job did."""

    out_path: str
    written: int = 0
    skipped_duplicate: int = 0
    skipped_empty: int = 0
    skipped_long: int = 0
    already_done: int = 0
    """Items found in the output (or its skipped companion) from an earlier run and not decoded again."""
    seconds: float = 0.0


def skipped_path(out_path: str | Path) -> Path:
    """The companion file that lists items skipped as duplicate or empty (``out.jsonl`` → ``out.skipped.jsonl``)."""
    out_path = Path(out_path)
    stem = out_path.name[: -len(".jsonl")] if out_path.name.endswith(".jsonl") else out_path.name
    return out_path.with_name(f"{stem}.skipped.jsonl")


def _done_ids(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    repair_torn_tail(path)
    ids = set()
    for number, data in iter_json_objects(path):
        if not isinstance(data.get("id"), str):
            raise InputDataError(str(path), number, "field id: missing or not a string (is this a synthesis output?)")
        ids.add(data["id"])
    return ids


def run_synthesis(
    config: SynthesisConfig,
    items: Iterable[SynthesisItem],
    model: Any,
    tokenizer: Any,
    out_path: str | Path,
    *,
    on_result: Callable[[RankedSet | Skipped], None] | None = None,
) -> SynthesisSummary:
    """Synthesise ranked sets for ``items`` and append them to ``out_path`` (one ``RankedSet`` JSON line each,
    flushed and fsynced); duplicates/empties go to :func:`skipped_path`. Safe to rerun after a crash: ids
    already in either file are not decoded again. ``on_result`` sees every set and skip (progress display).
    """
    started = time.perf_counter()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    skip_file = skipped_path(out_path)
    written_ids = _done_ids(out_path)
    done = written_ids | _done_ids(skip_file)
    summary = SynthesisSummary(out_path=str(out_path))

    ordered = list(items)
    if config.limit is not None:
        random.Random(config.seed).shuffle(ordered)
    total_sets = len(written_ids)

    def pending() -> Iterator[SynthesisItem]:
        for item in ordered:
            if config.limit is not None and total_sets >= config.limit:
                return
            if item.id in done:
                summary.already_done += 1
                continue
            yield item

    results = synthesize(
        pending(),
        model,
        tokenizer,
        config.alphas,
        max_new_tokens=config.max_new_tokens,
        max_passage_tokens=config.max_passage_tokens,
        stop_strings=config.stop_strings,
    )
    for result in results:
        if isinstance(result, RankedSet):
            append_jsonl(out_path, result)
            summary.written += 1
            total_sets += 1
        elif result.reason == "too_long":
            summary.skipped_long += 1
        else:
            append_jsonl(skip_file, result)
            if result.reason == "duplicate":
                summary.skipped_duplicate += 1
            else:
                summary.skipped_empty += 1
        if on_result is not None:
            on_result(result)
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary
