"""StepGap's own command: ``evigraph check TRACE.json`` (one trace, per-step labels and pipeline paths).

``eval``, ``score`` and ``reward`` come from the agent's contract; the flags (``--config``, ``--generator.*`` for
the judge, the config's fields, ``--nli``) from :mod:`evigraph.cli.kit`. ``check`` runs the judge alone, so it
refuses the flags of the Search-R1 generator's turns (their caps and budgets), whose values it could not use.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from evigraph.cli.kit import AgentRun, agent_command
from evigraph.errors import InputDataError

__all__ = ("check_command", "read_trace")

console = Console()
err_console = Console(stderr=True)


def read_trace(path: Path) -> Any:
    """A trace file: ``{"question", "steps": [...]}`` (:class:`~.schemas.Trace`), or ``{"question", "response"}``
    with a flat Search-R1 transcript (information blocks inline), split into steps.

    Raises:
        InputDataError: the file is unreadable or not a trace, or its question or a step is empty or blank
            (nothing to judge), naming the field.
    """
    from pydantic import ValidationError

    from evigraph.agents.search_r1.steps import steps_from_text
    from evigraph.agents.stepgap.schemas import Trace
    from evigraph.jsonl import format_validation_error

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise InputDataError(str(path), 1, f"cannot read: {error}") from None
    except json.JSONDecodeError as error:
        raise InputDataError(str(path), error.lineno, f"not valid JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise InputDataError(str(path), 1, "expected one JSON object (a trace)")
    if "steps" not in data and isinstance(data.get("response"), str):
        data = {**data, "steps": [s.model_dump() for s in steps_from_text(data["response"])]}
    try:
        trace = Trace.model_validate(data)
    except ValidationError as error:
        raise InputDataError(str(path), 1, format_validation_error(error)) from None
    if not trace.question.strip():
        raise InputDataError(str(path), 1, "field question: empty or blank")
    blank = next((i for i, step in enumerate(trace.steps) if not step.shown().strip()), None)
    if blank is not None:
        raise InputDataError(str(path), 1, f"field steps.{blank}: an empty step (no text, query or answer)")
    return trace


_JUDGE_ONLY = "check runs the judge alone"


@agent_command(
    resources=("nli",),
    refuses={
        "--generator.max-new-tokens": f"{_JUDGE_ONLY}, whose reply cap is --judge-max-new-tokens",
        **{
            flag: f"{_JUDGE_ONLY}; this is a setting of the Search-R1 generator's run"
            for flag in ("--max-searches", "--top-k", "--max-information-tokens", "--repair-budget")
        },
    },
)
def check_command(
    run: AgentRun,
    trace_path: Annotated[Path, typer.Argument(help="Trace JSON: question and steps, or question and response.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole check as JSON.")] = False,
) -> None:
    """Check every step of one trace (the configured model is the judge): label, repair action, confidence and
    pipeline path per step. Exits 1 when a step could not be checked."""
    from evigraph.graphs.stepgap_checker import build_checker_graph

    trace = read_trace(trace_path)
    graph = build_checker_graph(None, nli=run.resource("nli"), config=run.config(), sampling=run.sampling())
    with err_console.status("checking ..."):
        result = asyncio.run(graph.ainvoke({"trace": trace}, context=run.context()))
    checks = result["checks"]
    if as_json:
        sys.stdout.write(checks.model_dump_json(indent=2) + "\n")
    else:
        for check in checks.steps:
            label = check.label or "unchecked"
            console.print(
                f"[bold]step {check.index + 1}[/] ({check.kind}): [bold]{label}[/] -> {check.repair}, "
                f"confidence {check.confidence:.2f}"
            )
            console.print(f"  [dim]{escape(check.pipeline_path or check.error or '')}[/]", soft_wrap=True)
        console.print(f"[dim]judge: {escape(checks.judge)}; NLI: {escape(checks.nli or 'not needed')}[/]")
    failed = [c for c in checks.steps if c.error is not None]
    if failed:
        err_console.print(f"[red]{len(failed)} step(s) could not be checked: {escape(failed[0].error or '')}[/]")
        raise typer.Exit(1)
