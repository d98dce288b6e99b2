"""StepGap's own command: ``evigraph check TRACE`` (one trace, per-step labels and pipeline paths).

``eval``, ``score`` and ``reward`` come from the agent's contract; the flags (``--config``, the judge model's
``--judge`` and ``--generator.*``, the config's fields, ``--nli``) from :mod:`evigraph.cli.kit`. ``check`` runs the
judge alone, so it refuses the flags of the Search-R1 generator's turns (their caps and budgets), whose values it
could not use; ``--generator.constrained`` switches the judge's weak-model guide (quotes drawn from the evidence).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from evigraph.cli.kit import AgentRun, agent_command
from evigraph.cli.render import table
from evigraph.cli.text_args import read_inputs
from evigraph.errors import InputDataError
from evigraph.event_loop import run_sync

__all__ = ("check_command", "read_trace")

console = Console()
err_console = Console(stderr=True)


def read_trace(path: Path) -> Any:
    """A trace file (:func:`~evigraph.agents.stepgap.trace_file.parse_trace`).

    Raises:
        InputDataError: the file is unreadable or not a trace, naming the field.
    """
    from evigraph.agents.stepgap.trace_file import parse_trace

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputDataError(str(path), 1, f"cannot read: {error}") from None
    return parse_trace(text, str(path))


def _print_schema(value: bool) -> None:
    """``--schema``: print the trace format and stop (before the required TRACE is asked for)."""
    if value:
        from evigraph.agents.stepgap.trace_file import trace_schema

        sys.stdout.write(json.dumps(trace_schema(), indent=2, ensure_ascii=False) + "\n")
        raise typer.Exit(0)


_JUDGE_ONLY = "check runs the judge alone"
_TRACE_HELP = (
    "The trace, a JSON object: question and steps, or question and a flat Search-R1 response (--schema prints "
    "the format). A file path, @FILE, - (stdin) or the JSON itself."
)


@agent_command(
    resources=("nli",),
    model_flags=("--judge", "--model", "--generator.model"),
    model_panel="Judge model",
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
    trace_arg: Annotated[str, typer.Argument(metavar="TRACE", help=_TRACE_HELP, show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole check as JSON.")] = False,
    schema: Annotated[
        bool,
        typer.Option(
            "--schema",
            is_eager=True,
            callback=_print_schema,
            help="Print the JSON schema of a trace (required and optional fields) and exit.",
        ),
    ] = False,
) -> None:
    """Check every step of one trace, the model given by --judge judging: per step its label, the repair it
    calls for, its confidence and the stages that decided, in words. Exits 1 when a step could not be checked."""
    from evigraph.agents.stepgap.trace_file import parse_trace
    from evigraph.graphs.stepgap_checker import build_checker_graph

    given = read_inputs({"TRACE": trace_arg}, path_ok=("TRACE",)).one("TRACE")
    assert given is not None
    trace = parse_trace(given.text, given.origin or "TRACE")
    graph = build_checker_graph(None, nli=run.resource("nli"), config=run.config(), sampling=run.sampling())
    with err_console.status("checking ..."):
        result = run_sync(lambda: graph.ainvoke({"trace": trace}, context=run.context()))
    checks = result["checks"]
    if as_json:
        sys.stdout.write(checks.model_dump_json(indent=2) + "\n")
    else:
        _show(trace, checks)
    run.note_plumbing(as_json=as_json)
    failed = [c for c in checks.steps if c.error is not None]
    if failed:
        err_console.print(
            Text(f"{len(failed)} step(s) could not be checked: {failed[0].error or ''}", style="red"), soft_wrap=True
        )
        raise typer.Exit(1)


def _step_text(step: Any) -> Text:
    """What the step did, in one cell: its reasoning, then its search or its answer."""
    shown = Text(" ".join(step.reasoning.split()))
    if step.query is not None:
        shown.append_text(Text.assemble(("\nsearch: ", "cyan"), step.query))
    if step.answer is not None:
        shown.append_text(Text.assemble(("\nanswer: ", "green"), step.answer))
    return shown


def _show(trace: Any, checks: Any) -> None:
    """A table of the steps (what each did, its label, repair and confidence), then per step the stages that
    decided, in words, and a legend of the labels."""
    from evigraph.agents.stepgap.explain import LABEL_WORDS, explain_path

    console.print(Text.assemble(("question: ", "bold"), trace.question), soft_wrap=True)
    steps = table("#", "step", "label", "repair", "conf.", title="steps")
    for check in checks.steps:
        step = trace.steps[check.index]
        label = check.label or "unchecked"
        style = "green" if label == "no-gap" else "yellow" if label == "unchecked" else "bold red"
        steps.add_row(
            str(check.index + 1),
            _step_text(step),
            Text(label, style=style),
            Text(check.repair),
            "n/a" if check.label is None else f"{check.confidence:.2f}",  # an unchecked step's 0.0 is a stand-in
        )
    console.print(steps)
    for check in checks.steps:
        console.print(Text(f"step {check.index + 1} ({check.kind}): {check.label or 'unchecked'}", style="bold"))
        if check.error is not None:
            console.print(Text(f"   could not be checked: {check.error}", style="red"), soft_wrap=True)
        for words in explain_path(check.pipeline_path, check.kind):
            console.print(Text(f"   {words}"))
        if check.tree_label is not None:
            console.print(Text(f"   below the flag threshold: the tree said {check.tree_label}", style="dim"))
    used = sorted({c.label for c in checks.steps if c.label not in (None, "no-gap")})
    if used:
        console.print(Text("; ".join(f"{label} = {LABEL_WORDS[label]}" for label in used), style="dim"))
    console.print(Text(f"judge: {checks.judge}; NLI: {checks.nli or 'not needed'}", style="dim"))
