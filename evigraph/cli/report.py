"""``evigraph report RUN --html OUT``: a static, self-contained HTML report of an eval run directory.

The agent that made the run (``run.json``, or ``--agent``) draws its records through its ``AgentSpec.report_view``;
an agent without one gets the generic view (input fields, transcript, output as JSON). The page is built by
:mod:`evigraph.report`; ``docs/report.md`` says what it shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from evigraph.files import atomic_write

__all__ = ("report_command",)

console = Console()
err_console = Console(stderr=True)


def report_command(
    run: Annotated[Path, typer.Argument(help="An eval run directory (the --out of `evigraph eval AGENT`).")],
    html_out: Annotated[
        Path | None, typer.Option("--html", help="Where to write the page.", show_default="RUN/report.html")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Draw the records with this agent's view.", show_default="the one run.json names"),
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="The page's title.")] = None,
    page_size: Annotated[int, typer.Option("--page-size", min=1, help="Records per page.")] = 25,
) -> None:
    """Write a self-contained HTML report of an eval run: metrics, plots, and every record's input, verdict, gold
    and trajectory, with filters. Opens from file:// with no server and no network."""
    from evigraph.registry import get_agent
    from evigraph.report import read_run, render_page, run_agent

    name = agent or run_agent(run)
    view = None
    if name is None:
        err_console.print("[yellow]run.json names no agent (pass --agent NAME): records are shown generically[/]")
    else:
        view = get_agent(name).load().report_view
        if view is None:
            err_console.print(f"[dim]agent {escape(name)} declares no report_view: records are shown generically[/]")
    report = read_run(run, view, title=title, page_size=page_size)
    out = html_out or run / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, render_page(report.page).encode("utf-8"))
    size_mb = out.stat().st_size / 1e6
    console.print(f"{escape(str(out))}: {len(report.page.records)} records, {size_mb:.2f} MB", soft_wrap=True)
    if report.view_failures:
        err_console.print(
            f"[yellow]{report.view_failures} record(s) shown generically: the agent's view failed on them; first: "
            f"{escape(report.first_failure or '')}[/]",
            soft_wrap=True,
        )
