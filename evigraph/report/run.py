"""Reading an eval run directory into a report page: ``run.json`` (the pinned settings), ``report.json`` (the
metrics), ``predictions.jsonl`` (one line per record) and the plots (``*.png``) that ``evigraph eval`` writes.

Each prediction line becomes a :class:`~evigraph.report.view.RecordView` through the agent's view function. A
view function that fails on one line does not lose the report: that record falls back to the generic view with
the failure named in its ``error``, and :attr:`RunReport.view_failures` counts such lines.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from evigraph.errors import ConfigError, InputDataError
from evigraph.jsonl import iter_json_objects
from evigraph.report.helpers import generic_view
from evigraph.report.page import Plot, ReportPage
from evigraph.report.view import RecordView

__all__ = ("PREDICTIONS", "REPORT", "RUN_CONFIG", "RunReport", "ViewFn", "read_run", "run_agent")

PREDICTIONS = "predictions.jsonl"
REPORT = "report.json"
RUN_CONFIG = "run.json"

ViewFn = Callable[[Mapping[str, Any]], RecordView]
"""An agent's ``report_view``: one prediction line (a JSON object, its ``gold`` included) → its view."""


class RunReport(BaseModel):
    """A run directory read into a page, and how many lines needed the generic fallback."""

    model_config = ConfigDict(frozen=True)

    page: ReportPage
    view_failures: int = 0
    first_failure: str | None = None
    """``file:line: error`` of the first line whose agent view failed."""


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputDataError(str(path), error.lineno, f"not valid JSON ({error.msg})") from None
    if not isinstance(value, dict):
        raise InputDataError(str(path), 1, f"expected a JSON object, got {type(value).__name__}")
    return value


def _predictions(run_dir: Path) -> Path:
    if not run_dir.is_dir():
        raise ConfigError(
            f"no such run directory: {run_dir}" if not run_dir.exists() else f"not a directory: {run_dir}"
        )
    path = run_dir / PREDICTIONS
    if not path.is_file():
        raise ConfigError(f"{run_dir} holds no {PREDICTIONS}: is it the --out directory of `evigraph eval`?")
    return path


def run_agent(run_dir: Path) -> str | None:
    """The agent a run directory was made by (``run.json``'s ``agent``), if it says.

    Raises:
        ConfigError: ``run_dir`` is not a run directory (no ``predictions.jsonl``).
        InputDataError: ``run.json`` is not a JSON object.
    """
    _predictions(run_dir)
    agent = _read_json(run_dir / RUN_CONFIG).get("agent")
    return agent if isinstance(agent, str) and agent else None


def _facts(run_dir: Path, config: Mapping[str, Any], n_records: int) -> tuple[tuple[str, str], ...]:
    generator = config.get("generator") if isinstance(config.get("generator"), Mapping) else {}
    facts = [
        ("agent", str(config.get("agent") or "unknown")),
        ("model", str(generator.get("model") or "unknown")),
        ("data", str(config.get("data") or "unknown")),
        ("records", str(n_records)),
        ("run directory", str(run_dir)),
    ]
    return tuple(facts)


def _fallback(line: Mapping[str, Any], reason: str) -> RecordView:
    try:
        shown = generic_view(line)
    except (ValidationError, ValueError, KeyError, TypeError, AttributeError):
        return RecordView(id=str(line.get("id")), verdict="unreadable line", error=reason)
    return shown.model_copy(update={"error": "; ".join(filter(None, [shown.error, reason]))})


def read_run(run_dir: Path, view: ViewFn | None, *, title: str | None = None, page_size: int = 25) -> RunReport:
    """Read ``run_dir`` into a page, each prediction line through ``view`` (``None``: the generic view).

    Raises:
        ConfigError: ``run_dir`` is not a run directory; ``page_size`` < 1.
        InputDataError: a line of ``predictions.jsonl`` (``file:line``) or ``run.json``/``report.json`` is not
            JSON; a torn last line (a run still writing) is skipped.
    """
    if page_size < 1:
        raise ConfigError(f"page size must be >= 1, got {page_size}", source="--page-size")
    predictions = _predictions(run_dir)
    config = _read_json(run_dir / RUN_CONFIG)
    views: list[RecordView] = []
    failures = 0
    first: str | None = None
    for number, line in iter_json_objects(predictions, tolerate_truncated_tail=True):
        try:
            views.append(view(line) if view is not None else generic_view(line))
        except (ValidationError, ValueError, KeyError, TypeError, AttributeError, IndexError) as error:
            # A view bug on one odd line must not cost the whole report: show that line generically, say why.
            failures += 1
            reason = f"{predictions}:{number}: report view failed: {type(error).__name__}: {error}"
            first = first or reason
            views.append(_fallback(line, reason))
    plots = tuple(Plot(name=str(p.relative_to(run_dir)), png=p.read_bytes()) for p in sorted(run_dir.rglob("*.png")))
    agent = config.get("agent") or "run"
    page = ReportPage(
        title=title or f"evigraph report: {agent} · {run_dir.resolve().name}",
        facts=_facts(run_dir, config, len(views)),
        metrics=_read_json(run_dir / REPORT),
        plots=plots,
        records=tuple(views),
        page_size=page_size,
    )
    return RunReport(page=page, view_failures=failures, first_failure=first)
