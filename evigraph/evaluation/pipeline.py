"""The evaluation every agent shares: run directories, one resumable run over the records, the report.

:func:`evaluate` is ``evigraph eval AGENT``: it pins the settings in ``run.json`` (a resumed run cannot silently
mix predictions made under different settings), runs the compiled graph over the records into
``predictions.jsonl``, and writes ``report.json`` and the agent's plots. :func:`score_report` is the metrics
half, shared with ``evigraph score``. The agent supplies an :class:`~evigraph.evaluation.adapter.EvalAdapter`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, RootModel

from evigraph.errors import ConfigError
from evigraph.evaluation.adapter import EvalAdapter
from evigraph.evaluation.runner import RunSummary, read_results, run_records, write_report
from evigraph.event_loop import run_sync
from evigraph.files import atomic_write

__all__ = ("PREDICTIONS", "REPORT", "RUN_CONFIG", "evaluate", "prepare_run_dir", "run_in_dir", "score_report")

T = TypeVar("T")

PREDICTIONS = "predictions.jsonl"
RUN_CONFIG = "run.json"
REPORT = "report.json"


def prepare_run_dir(out_dir: Path, run_config: dict[str, Any]) -> Path:
    """Create ``out_dir`` (or check it holds a run with the same settings) and return the predictions path.

    Raises:
        ConfigError: ``out_dir`` holds predictions made with other settings (names the keys that differ).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    stored_path = out_dir / RUN_CONFIG
    wanted = json.loads(json.dumps(run_config, sort_keys=True, default=str))
    if stored_path.is_file():
        stored = json.loads(stored_path.read_text(encoding="utf-8"))
        differing = sorted(k for k in {*stored, *wanted} if stored.get(k) != wanted.get(k))
        if differing:
            raise ConfigError(
                f"{out_dir} holds a run with other settings ({', '.join(differing)} differ); "
                "use a new --out directory or delete the old one",
                source=str(stored_path),
            )
    else:
        atomic_write(stored_path, json.dumps(wanted, indent=2, sort_keys=True) + "\n")
    return out_dir / PREDICTIONS


def run_in_dir(
    items: Sequence[T],
    run_one: Callable[[T], Awaitable[BaseModel]],
    *,
    id_of: Callable[[T], str],
    out_dir: Path,
    run_config: dict[str, Any],
    concurrency: int = 4,
    retry_failed: bool = False,
    description: str = "eval",
) -> RunSummary:
    """What every agent's ``eval`` does: pin the settings in ``out_dir``, freeze the startup heap, and run
    (or resume) ``items`` into ``out_dir/predictions.jsonl`` with :func:`~evigraph.evaluation.runner.run_records`.
    """
    from evigraph.machine import tune_gc_for_long_run

    predictions = prepare_run_dir(out_dir, run_config)
    tune_gc_for_long_run()  # the loaded model, index and graph live all run: keep the collector from rescanning them
    return run_sync(
        lambda: run_records(
            items,
            run_one,
            id_of=id_of,
            out_path=predictions,
            concurrency=concurrency,
            retry_failed=retry_failed,
            description=description,
        )
    )


def score_report(
    adapter: EvalAdapter, predictions: Sequence[Any], gold: Mapping[str, Any], options: BaseModel
) -> tuple[dict[str, Any], BaseModel]:
    """The agent's report over ``predictions`` matched to ``gold`` by id, plus ``n_gold`` and ``n_missing``
    (gold records with no prediction, left out of every metric).

    Raises:
        ConfigError: a prediction id that no gold record has (a mismatched pair of files).
    """
    unknown = [str(p.id) for p in predictions if str(p.id) not in gold]
    if unknown:
        shown = ", ".join(repr(i) for i in unknown[:5])
        raise ConfigError(
            f"{len(unknown)} prediction id(s) have no gold record with the same id, e.g. {shown} "
            "(are the predictions and the gold from the same data?)"
        )
    pairs = [(p, gold[str(p.id)]) for p in predictions]
    report = adapter.report(pairs, options)
    body = {**report.model_dump(mode="json"), "n_gold": len(gold), "n_missing": len(gold) - len(pairs)}
    return body, report


def evaluate(
    adapter: EvalAdapter,
    graph: Any,
    records: Sequence[Any],
    *,
    out_dir: Path,
    run_config: dict[str, Any],
    options: BaseModel,
    concurrency: int = 4,
    retry_failed: bool = False,
    description: str = "eval",
    context: Any = None,
) -> dict[str, Any]:
    """Run ``graph`` over ``records`` into ``out_dir`` (resumable) and write the report and plots.

    ``context`` is every run's LangGraph run context (a :class:`~evigraph.graphs.kit.context.RunContext` handing
    the runs their generator, for a graph compiled without one).

    Returns:
        The report: the run summary, ``n_failed_runs`` and -- when the records carry gold answers -- the
        agent's metrics over the results of these records.

    Raises:
        ConfigError: some records carry a gold answer and others do not (checked before anything runs, so that
            a long run does not end in a report that cannot be made).
    """
    golds = {str(r.id): adapter.gold_of(r) for r in records}
    ungraded = [record_id for record_id, g in golds.items() if g is None]
    if ungraded and len(ungraded) < len(golds):
        shown = ", ".join(repr(i) for i in ungraded[:5])
        raise ConfigError(
            f"{len(ungraded)} of {len(golds)} records have no gold answer while the others have one, e.g. {shown}; "
            "give every record its gold answer, or none"
        )

    async def run_one(record: Any) -> BaseModel:
        return adapter.result(record, await graph.ainvoke(adapter.graph_input(record), context=context))

    summary = run_in_dir(
        records,
        run_one,
        id_of=lambda r: str(r.id),
        out_dir=out_dir,
        run_config=run_config,
        concurrency=concurrency,
        retry_failed=retry_failed,
        description=description,
    )
    wanted = {str(r.id) for r in records}
    results = [r for r in read_results(out_dir / PREDICTIONS, adapter.result_model) if str(r.id) in wanted]
    report: dict[str, Any] = {
        "run": summary.model_dump(mode="json"),
        "n_failed_runs": sum(getattr(r, "error", None) is not None for r in results),
    }
    gold = {record_id: g for record_id, g in golds.items() if g is not None}
    if gold:
        body, metrics = score_report(adapter, [adapter.prediction_of(r) for r in results], gold, options)
        report.update(body)
        adapter.plots(metrics, out_dir)
    write_report(out_dir, RootModel[dict[str, Any]](report), name=REPORT)
    return report
