"""RAGChecker's meta-evaluation release (specs/rag-zeval.md §4.2, O10) and the correlation of an evaluator with it.

``human_labeled_data.json``: 280 instances x 2 annotators, a five-level preference of response 2 over response 1
per aspect. A system-score file is shaped like ``baseline_ragchecker.json``: per instance ``model1.<key>`` /
``model2.<key>`` score blocks (RAGChecker writes ``ragchecker``, our evaluator ``rag_zeval``). Per instance
``e_i = f(E(r2) - E(r1))`` with ``f`` = min-max to [-2, 2], paired with *each* annotator's label (n = 560), then
Pearson, Spearman and Kendall tau-b (:mod:`.correlation`), as fractions. Errors are
:class:`~evigraph.errors.InputDataError` ``file:line: row [index]: field <name>: ...``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evigraph.agents.rag_zeval.correlation import (
    Correlation,
    correlation,
    maybe_correlation,
    minmax_normalise,
    pair_with_annotators,
)
from evigraph.agents.rag_zeval.rows import Origin, object_rows, row_text

__all__ = (
    "ASPECTS",
    "Aspect",
    "HumanJudgement",
    "MetaEvalInstance",
    "MetaEvalReport",
    "SystemScores",
    "annotator_agreement",
    "dataset_family",
    "meta_evaluate",
    "meta_evaluate_files",
    "read_human_labels",
    "read_instances",
    "read_system_scores",
)

Aspect = Literal["correctness", "completeness", "overall"]
ASPECTS: tuple[Aspect, ...] = ("correctness", "completeness", "overall")
"""The release's aspects, each a ``<aspect>_label`` field (RAG-Zeval itself scores correctness only)."""
PREFERENCE_LABELS = range(-2, 3)
"""Human preference of response 2 over response 1 (§4.2): −2 … 2."""

_FROZEN = ConfigDict(frozen=True)

_FROZEN = ConfigDict(frozen=True)


def _failure(origin: Origin | None, message: str) -> ValueError:
    return origin.error(message) if origin is not None else ValueError(message)


class HumanJudgement(BaseModel):
    """One annotator's labels for one instance (a row of ``human_labeled_data.json``)."""

    model_config = _FROZEN

    instance_id: str
    dataset: str
    annotator: int = Field(ge=1)
    """1-based order of this row among its instance's rows in the file (the release has no annotator ids)."""
    labels: dict[Aspect, int]
    """Preference of response 2 over response 1 per aspect, −2 … 2."""
    origin: Origin | None = Field(None, repr=False)


class SystemScores(BaseModel):
    """An evaluator's scores for both responses of one instance (a row of a ``baseline_*.json`` file)."""

    model_config = _FROZEN

    instance_id: str
    response1: dict[Aspect, float]
    response2: dict[Aspect, float]
    dataset: str | None = None
    origin: Origin | None = Field(None, repr=False)

    def delta(self, aspect: Aspect) -> float:
        """``E(r2) − E(r1)``: positive when the evaluator prefers response 2, like the human label."""
        return self.response2[aspect] - self.response1[aspect]


def _instance_id(row: Mapping[str, Any], origin: Origin) -> str:
    value = row.get("instance_id")
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        raise origin.error(f"field instance_id: expected an integer or a non-empty string, got {value!r}")
    return str(value)  # joined as text: 17 and "17" are the same instance


def _label(row: Mapping[str, Any], name: str, origin: Origin) -> int:
    value = row.get(name)
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is None or not float(number).is_integer() or int(number) not in PREFERENCE_LABELS:
        raise origin.error(f"field {name}: {value!r} is not a preference label (expected an integer in -2..2)")
    return int(number)


def read_human_labels(path: str | Path) -> list[HumanJudgement]:
    """Every row of RAGChecker's ``human_labeled_data.json`` (a JSON list; one row per instance and annotator).

    Annotators are numbered by file order within an instance (the release puts them at rows 2i and 2i+1).

    Raises:
        ConfigError: ``path`` is not a file.
        InputDataError: not a JSON list of objects; a missing ``instance_id`` / ``dataset``; a missing label
            or one outside −2..2 (``file:line: row [i]: field correctness_label: ...``).
    """
    seen: dict[str, int] = defaultdict(int)
    judgements = []
    for origin, row in object_rows(path):
        instance = _instance_id(row, origin)
        seen[instance] += 1
        judgements.append(
            HumanJudgement(
                instance_id=instance,
                dataset=row_text(row, "dataset", origin),
                annotator=seen[instance],
                labels={aspect: _label(row, f"{aspect}_label", origin) for aspect in ASPECTS},
                origin=origin,
            )
        )
    return judgements


class MetaEvalInstance(BaseModel):
    """What an evaluator sees of one instance: the question, the ground-truth answer (correctness's reference)
    and the two responses, in the release's order (``model1`` then ``model2``)."""

    model_config = _FROZEN

    instance_id: str
    dataset: str
    query: str
    gt_answer: str
    responses: tuple[str, str]


def read_instances(path: str | Path) -> list[MetaEvalInstance]:
    """The distinct instances of ``human_labeled_data.json`` (the first row of each), to score with an evaluator.

    Raises:
        InputDataError: a row without ``query``, ``gt_answer`` or ``model1``/``model2`` ``response`` text.
    """
    instances: dict[str, MetaEvalInstance] = {}
    for origin, row in object_rows(path):
        instance = _instance_id(row, origin)
        if instance in instances:
            continue
        responses = []
        for model in ("model1", "model2"):
            block = row.get(model)
            text = block.get("response") if isinstance(block, dict) else None
            if not isinstance(text, str):  # may be empty: the release has systems that answered nothing
                raise origin.error(f"field {model}.response: expected a string, got {text!r}")
            responses.append(text)
        instances[instance] = MetaEvalInstance(
            instance_id=instance,
            dataset=row_text(row, "dataset", origin),
            query=row_text(row, "query", origin),
            gt_answer=row_text(row, "gt_answer", origin),
            responses=(responses[0], responses[1]),
        )
    return list(instances.values())


def _score_key(row: Mapping[str, Any], origin: Origin) -> str:
    """The one object under ``model1`` that holds ``correctness_label`` (``ragchecker``, ``rag_zeval`` ...)."""
    model = row.get("model1")
    blocks = model.items() if isinstance(model, dict) else ()
    keys = sorted(k for k, v in blocks if isinstance(v, dict) and "correctness_label" in v)
    if len(keys) != 1:
        found = f"several: {keys}" if keys else "none"
        raise origin.error(f"field model1: expected one score object holding correctness_label, found {found}; name it")
    return keys[0]


def _score_block(row: Mapping[str, Any], response: str, key: str, origin: Origin) -> Mapping[str, Any]:
    model = row.get(response)
    block = model.get(key) if isinstance(model, dict) else None
    if not isinstance(block, dict):
        raise origin.error(f"field {response}.{key}: missing score object")
    return block


def _score(block: Mapping[str, Any], name: str, where: str, origin: Origin) -> float:
    value = block.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise origin.error(f"field {where}.{name}: missing score (expected a finite number, got {value!r})")
    return float(value)


def read_system_scores(path: str | Path, *, score_key: str | None = None) -> list[SystemScores]:
    """Every row of a system-score file shaped like RAGChecker's ``baseline_ragchecker.json``.

    Args:
        path: a JSON list, one row per instance, with ``instance_id`` and ``model1`` / ``model2`` objects.
        score_key: the score object under ``model1`` / ``model2`` (``ragchecker``; our evaluator writes
            ``rag_zeval``). Default: the one object under the first row's ``model1`` holding
            ``correctness_label``.

    The aspects read are those of ``correctness_label``, ``completeness_label``, ``overall_label`` that the
    first row's score object holds; every row must then hold them for both responses.

    Raises:
        ConfigError: ``path`` is not a file.
        InputDataError: ``file:line: row [i]: field model2.ragchecker.correctness_label: missing score``; a
            duplicate instance; no or several candidate score objects when ``score_key`` is not given.
    """
    rows = object_rows(path)
    first_origin, first = rows[0]
    key = score_key or _score_key(first, first_origin)
    head = _score_block(first, "model1", key, first_origin)
    aspects = [a for a in ASPECTS if f"{a}_label" in head]
    if not aspects:
        raise first_origin.error(f"field model1.{key}: holds none of {[f'{a}_label' for a in ASPECTS]}")
    first_row: dict[str, int] = {}
    scores = []
    for origin, row in rows:
        instance = _instance_id(row, origin)
        if instance in first_row:
            raise origin.error(f"field instance_id: instance {instance} again (first at row [{first_row[instance]}])")
        first_row[instance] = origin.index
        blocks = {r: _score_block(row, r, key, origin) for r in ("model1", "model2")}
        values = {
            r: {a: _score(block, f"{a}_label", f"{r}.{key}", origin) for a in aspects} for r, block in blocks.items()
        }
        dataset = row.get("dataset")
        scores.append(
            SystemScores(
                instance_id=instance,
                response1=values["model1"],
                response2=values["model2"],
                dataset=dataset if isinstance(dataset, str) else None,
                origin=origin,
            )
        )
    return scores


class MetaEvalReport(BaseModel):
    """Correlations of an evaluator with human preferences, per aspect, as fractions in [−1, 1] (the
    ``meta-eval`` command reports fractions; multiply by 100 to compare with RAGChecker's README)."""

    model_config = _FROZEN

    aspects: tuple[Aspect, ...]
    """The aspects the system file scores (RAG-Zeval: correctness)."""
    correlations: dict[Aspect, Correlation | None]
    """``None`` where the system scores both responses of every instance alike (no correlation is defined)."""
    """System ``e_i`` vs each annotator's label (n = instances × annotators)."""
    agreement: dict[Aspect, Correlation | None]
    """Human inter-annotator agreement: annotator 1 vs annotator 2 over the scored instances labelled by both
    (the ceiling to read the system's numbers against); ``None`` when no instance has two annotators."""
    by_group: dict[str, dict[Aspect, Correlation | None]] = Field(default_factory=dict)
    """Per group of ``dataset`` (when asked); ``None`` where a group's correlation is undefined."""
    instances: int
    judgements: int
    normalised: bool
    """Whether ``e_i`` went through min–max to [−2, 2] (it does not change the coefficients)."""


def dataset_family(dataset: str) -> str:
    """``robustqa/fiqa`` → ``robustqa``: the paper's Table 9 groups RobustQA's seven domains into one."""
    return dataset.split("/", 1)[0]


def _labels_by_instance(human: Sequence[HumanJudgement]) -> dict[str, list[HumanJudgement]]:
    grouped: dict[str, list[HumanJudgement]] = defaultdict(list)
    for judgement in human:
        grouped[judgement.instance_id].append(judgement)
    return {k: sorted(v, key=lambda j: j.annotator) for k, v in grouped.items()}


def annotator_agreement(human: Sequence[HumanJudgement], aspect: Aspect) -> Correlation | None:
    """Annotator 1 vs annotator 2 on ``aspect`` over the instances labelled by both (RAGChecker reports
    63.67 / 59.19 Pearson / Spearman ×100 for correctness)."""
    first, second = [], []
    for judgements in _labels_by_instance(human).values():
        own = {j.annotator: j for j in judgements}
        if 1 in own and 2 in own:
            first.append(_aspect_label(own[1], aspect))
            second.append(_aspect_label(own[2], aspect))
    return maybe_correlation(first, second)


def _aspect_label(judgement: HumanJudgement, aspect: Aspect) -> int:
    if aspect not in judgement.labels:
        raise _failure(judgement.origin, f"field {aspect}_label: missing")
    return judgement.labels[aspect]


def _joined(
    human: Sequence[HumanJudgement], system: Sequence[SystemScores], require_all: bool
) -> tuple[list[SystemScores], dict[str, list[HumanJudgement]]]:
    """System rows in file order with their instance's judgements; every mismatch is an error."""
    labels = _labels_by_instance(human)
    scored: dict[str, SystemScores] = {}
    for row in system:
        if row.instance_id in scored:
            raise _failure(row.origin, f"field instance_id: instance {row.instance_id} scored twice")
        if row.instance_id not in labels:
            raise _failure(row.origin, f"field instance_id: instance {row.instance_id} has no human label")
        scored[row.instance_id] = row
    if require_all:
        for judgement in human:
            if judgement.instance_id not in scored:
                source = next((s.origin.path for s in system if s.origin is not None), "the system scores")
                message = f"field instance_id: instance {judgement.instance_id} is missing from {source}"
                raise _failure(judgement.origin, message)
    return list(scored.values()), labels


def _system_aspects(system: Sequence[SystemScores]) -> tuple[Aspect, ...]:
    if not system:
        raise ValueError("no system scores")
    shared = [a for a in ASPECTS if all(a in s.response1 and a in s.response2 for s in system)]
    if not shared:
        raise ValueError(f"no aspect of {list(ASPECTS)} is scored for every instance")
    return tuple(shared)


def meta_evaluate(
    human: Sequence[HumanJudgement],
    system: Sequence[SystemScores],
    *,
    group_by: Callable[[str], str] | None = None,
    normalise: bool = True,
    require_all: bool = True,
) -> MetaEvalReport:
    """§4.2: ``e_i = f(E(r2) − E(r1))`` per instance, paired with every annotator's label, correlated.

    Args:
        human: the judgements (:func:`read_human_labels`).
        system: the evaluator's scores (:func:`read_system_scores`); the aspects reported are those every
            row scores.
        group_by: adds a breakdown by ``group_by(dataset)`` (``lambda d: d`` per dataset, or
            :func:`dataset_family`); ``e_i`` is normalised over all instances first.
        normalise: apply O10's min–max to [−2, 2] (off: raw differences; the coefficients are the same).
        require_all: every labelled instance must be scored (off: evaluate the scored subset).

    Raises:
        InputDataError / ValueError: an instance labelled but not scored (or the reverse, or twice); a
            constant input (no correlation).
    """
    rows, labels = _joined(human, system, require_all)
    aspects = _system_aspects(rows)
    groups: dict[str, list[int]] = defaultdict(list)
    for position, row in enumerate(rows):
        if group_by is not None:
            groups[group_by(labels[row.instance_id][0].dataset)].append(position)
    correlations: dict[Aspect, Correlation | None] = {}
    by_group: dict[str, dict[Aspect, Correlation | None]] = {name: {} for name in sorted(groups)}
    for aspect in aspects:
        deltas = [row.delta(aspect) for row in rows]
        if len(set(deltas)) < 2:  # the system never separates the two responses: nothing to correlate
            correlations[aspect] = None
            for name in groups:
                by_group[name][aspect] = None
            continue
        scores = minmax_normalise(deltas) if normalise else deltas
        own = [[_aspect_label(j, aspect) for j in labels[row.instance_id]] for row in rows]
        correlations[aspect] = correlation(*pair_with_annotators(scores, own))
        for name, members in groups.items():
            pairs = pair_with_annotators([scores[i] for i in members], [own[i] for i in members])
            by_group[name][aspect] = maybe_correlation(*pairs)
    used = [j for row in rows for j in labels[row.instance_id]]
    return MetaEvalReport(
        aspects=aspects,
        correlations=correlations,
        agreement={aspect: annotator_agreement(used, aspect) for aspect in aspects},
        by_group=by_group,
        instances=len(rows),
        judgements=len(used),
        normalised=normalise,
    )


def meta_evaluate_files(
    human_path: str | Path,
    system_path: str | Path,
    *,
    score_key: str | None = None,
    group_by: Callable[[str], str] | None = None,
    require_all: bool = True,
) -> MetaEvalReport:
    """:func:`meta_evaluate` over the two files of the release (see the readers for their errors)."""
    return meta_evaluate(
        read_human_labels(human_path),
        read_system_scores(system_path, score_key=score_key),
        group_by=group_by,
        require_all=require_all,
    )
