"""WikiEval faithfulness (specs/rag-zeval.md §4.1, O9): pairwise agreement of an evaluator's scores on (good,
poor) answer pairs -- best / middle / worst, compared exactly -- and a loader for WikiEval's public release
(``explodinggradients/WikiEval``: good = ``answer``, poor = ``ungrounded_answer``, reference = ``context_v1``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evigraph.agents.rag_zeval.rows import Origin, row_text
from evigraph.errors import ConfigError, InputDataError, MissingDependencyError
from evigraph.jsonl import iter_json_objects, read_json_list

__all__ = ("ExactScore", "PairwiseReport", "WikiEvalPair", "exact_score", "load_wikieval", "pairwise_agreement")

_FROZEN = ConfigDict(frozen=True)


ExactScore = Fraction | int | float | tuple[int, int]
"""A faithfulness score: a :class:`~fractions.Fraction`, an int, a float or ``(supported, total)``."""


def exact_score(score: ExactScore) -> Fraction:
    """``score`` as an exact fraction, so that ties are ties (§4.1).

    ``(supported, total)`` and Fractions are exact. A float becomes ``Fraction(str(score))``: its shortest
    decimal form, so ``0.8`` is exactly 4/5 and two floats tie iff they print the same. (``limit_denominator``
    would instead merge distinct nearby scores.) A float computed as ``1/3`` still differs from ``(1, 3)``:
    pass claim counts where you have them.

    Raises:
        ValueError: a bool, NaN/inf, a negative or non-integer count, or ``total <= 0``.
    """
    if isinstance(score, bool):
        raise ValueError(f"a score cannot be a bool ({score})")
    if isinstance(score, Fraction | int):
        return Fraction(score)
    if isinstance(score, float):
        if not math.isfinite(score):
            raise ValueError(f"a score must be finite, got {score}")
        return Fraction(str(score))
    if isinstance(score, tuple) and len(score) == 2:
        supported, total = score
        counts = all(isinstance(c, int) and not isinstance(c, bool) for c in score)
        if not counts or total <= 0 or not 0 <= supported <= total:
            raise ValueError(f"(supported, total) must be integers with 0 <= supported <= total > 0, got {score}")
        return Fraction(supported, total)
    raise ValueError(f"not a score: {score!r} (expected a Fraction, int, float or (supported, total))")


class PairwiseReport(BaseModel):
    """WikiEval agreement over ``n`` (good, poor) pairs (§4.1): ties count as right (best), half (middle) or
    wrong (worst)."""

    model_config = _FROZEN

    best: float
    middle: float
    worst: float
    n: int
    wins: int
    """Pairs with F(good) > F(poor)."""
    ties: int


def pairwise_agreement(pairs: Iterable[tuple[ExactScore, ExactScore]]) -> PairwiseReport:
    """best / middle / worst of §4.1 over ``(F(good), F(poor))`` pairs, compared exactly (:func:`exact_score`).

    Raises:
        ValueError: no pairs, or a score :func:`exact_score` rejects.
    """
    wins = ties = n = 0
    for good, poor in pairs:
        difference = exact_score(good) - exact_score(poor)
        wins += difference > 0
        ties += difference == 0
        n += 1
    if n == 0:
        raise ValueError("pairwise agreement needs at least one pair")
    return PairwiseReport(
        best=float(Fraction(wins + ties, n)),
        middle=float(Fraction(2 * wins + ties, 2 * n)),
        worst=float(Fraction(wins, n)),
        n=n,
        wins=wins,
        ties=ties,
    )


class WikiEvalPair(BaseModel):
    """One WikiEval question with its faithful (good) and unfaithful (poor) answer and the reference (O9)."""

    model_config = _FROZEN

    id: str
    question: str
    context: str
    """The Wikipedia context the good answer was written from (``context_v1``), passages joined by blank lines."""
    good: str
    poor: str


GOOD_FIELDS = ("answer", "grounded_answer")
"""The good answer's column: ``answer`` (spec §4.1); some revisions of the release name it ``grounded_answer``."""


def _plain(value: Any) -> Any:
    """A parquet cell as plain Python (pandas hands list columns over as numpy arrays)."""
    return value.tolist() if hasattr(value, "tolist") else value


def _parquet_rows(path: Path) -> list[tuple[int, Any]]:
    """Rows of a parquet file (line = 1-based row number): pyarrow, else pandas with any parquet engine."""
    hint = "pip install pyarrow, or convert the file to JSONL (one JSON object per row) and pass that"
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        parquet = None
    try:
        if parquet is not None:
            records = parquet.read_table(path).to_pylist()
        else:
            import pandas

            records = [{k: _plain(v) for k, v in r.items()} for r in pandas.read_parquet(path).to_dict("records")]
    except ImportError:
        raise MissingDependencyError("pyarrow", f"reading {path} needs a parquet engine: {hint}") from None
    except (OSError, ValueError) as error:
        raise InputDataError(str(path), 1, f"not a readable parquet file ({error})") from None
    return [(index + 1, record) for index, record in enumerate(records)]


def _wikieval_rows(path: Path) -> list[tuple[int, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return list(iter_json_objects(path))
    if suffix == ".json":
        return read_json_list(path)
    if suffix == ".parquet":
        return _parquet_rows(path)
    raise ConfigError(f"{path}: unsupported WikiEval file; expected .json (a list of rows), .jsonl or .parquet")


def _context(row: Mapping[str, Any], name: str, origin: Origin) -> str:
    value = row.get(name)
    passages = [value] if isinstance(value, str) else value
    if not isinstance(passages, list) or not all(isinstance(p, str) for p in passages):
        raise origin.error(f"field {name}: expected a string or a list of strings, got {type(value).__name__}")
    text = "\n\n".join(p.strip() for p in passages if p.strip())
    if not text:
        raise origin.error(f"field {name}: empty context")
    return text


def _wikieval_pair(
    row: Mapping[str, Any], origin: Origin, good_field: str | None, poor_field: str, context_field: str
) -> WikiEvalPair:
    good_name = good_field or next((name for name in GOOD_FIELDS if name in row), GOOD_FIELDS[0])
    given_id = row.get("id")
    return WikiEvalPair(
        id=str(given_id) if given_id not in (None, "") else f"wikieval-{origin.index}",
        question=row_text(row, "question", origin),
        context=_context(row, context_field, origin),
        good=row_text(row, good_name, origin),
        poor=row_text(row, poor_field, origin),
    )


def load_wikieval(
    path: str | Path,
    *,
    good_field: str | None = None,
    poor_field: str = "ungrounded_answer",
    context_field: str = "context_v1",
) -> list[WikiEvalPair]:
    """WikiEval's public release (``explodinggradients/WikiEval``, 50 rows) as (good, poor) pairs.

    Args:
        path: ``.json`` (a list of rows), ``.jsonl``, or ``.parquet`` (only where pyarrow, or pandas with a
            parquet engine, is installed).
        good_field: the faithful answer's column (default: ``answer``, else ``grounded_answer``).
        poor_field: the unfaithful answer's column (spec §4.1: ``ungrounded_answer``, not ``poor_answer``).
        context_field: the reference (O9: ``context_v1``, the context the good answer was written from); a
            list of passages is joined with blank lines.

    Ids are the row's ``id`` when it has one, else ``wikieval-<0-based row>``.

    Raises:
        ConfigError: ``path`` is missing or has another suffix.
        MissingDependencyError: a parquet file without a parquet engine (convert it to JSONL).
        InputDataError: ``file:line: row [i]: field <name>: ...``; a duplicate id; an empty file.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such input file: {path}" if not path.exists() else f"not a file: {path}")
    pairs: list[WikiEvalPair] = []
    first_row: dict[str, int] = {}
    for index, (line, row) in enumerate(_wikieval_rows(path)):
        origin = Origin(path=str(path), line=line, index=index)
        if not isinstance(row, dict):
            raise origin.error(f"expected a JSON object, got {type(row).__name__}")
        pair = _wikieval_pair(row, origin, good_field, poor_field, context_field)
        if pair.id in first_row:
            raise origin.error(f"field id: duplicate id {pair.id!r} (first at row [{first_row[pair.id]}])")
        first_row[pair.id] = index
        pairs.append(pair)
    if not pairs:
        raise InputDataError(str(path), 1, "no rows")
    return pairs
