"""``--help`` of the agent commands, readable in an 80-column terminal.

typer's rich help lays every panel out as a six-column table that cuts long flag names
(``--generator.max-new…``) to fit. Here each panel lists its options as flag names over a help column of fixed
indent: a flag that fits sits beside its help, a longer one gets a line of its own with the help below it, the
way ``argparse`` does. Every name is printed whole, and all text is printed as text (no rich markup), so a help
string with brackets shows as written.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import typer.core
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

__all__ = ("CompactHelpCommand", "help_panels")

_ARGUMENTS, _OPTIONS = "Arguments", "Options"
_MAX_FLAG_COLUMN = 30
_MIN_HELP_COLUMN = 30


def help_panels(command: Any, ctx: Any) -> dict[str, list[tuple[str, str]]]:
    """``panel → [(flags, help)]`` for the visible parameters of ``command``, arguments first, then the
    command's own options, then the generated panels in declaration order (Generator, Agent, tools ...)."""
    panels: dict[str, list[tuple[str, str]]] = defaultdict(list)
    panels[_ARGUMENTS], panels[_OPTIONS] = [], []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        flags, help_text = record
        default = _ARGUMENTS if isinstance(param, typer.core.TyperArgument) else _OPTIONS
        panel = getattr(param, "rich_help_panel", None) or default
        panels[panel].append((flags, " ".join(help_text.replace("``", "`").split())))
    return {name: rows for name, rows in panels.items() if rows}


def _option_lines(rows: list[tuple[str, str]], flag_width: int) -> RenderableType:
    parts: list[RenderableType] = []
    for flags, help_text in rows:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=flag_width, no_wrap=True)
        grid.add_column(ratio=1)
        if len(flags) <= flag_width:
            grid.add_row(Text(flags, style="bold cyan"), Text(help_text))
            parts.append(grid)
        else:  # a name too long for the column: on a line of its own, the help below it at the same indent
            parts.append(Text(flags, style="bold cyan", overflow="fold"))
            if help_text:
                grid.add_row("", Text(help_text))
                parts.append(grid)
    return Group(*parts)


def print_help(command: Any, ctx: Any, console: Console) -> None:
    """Usage, the command's description, then one panel per option group."""
    console.print(Text(command.get_usage(ctx), style="bold"))
    if command.help:
        description = "\n\n".join(" ".join(p.split()) for p in command.help.strip().split("\n\n"))
        console.print(Text("\n" + description + "\n"))
    panels = help_panels(command, ctx)
    inner = max(console.width - 4, 40)  # panel border and padding
    longest = max((len(flags) for rows in panels.values() for flags, _ in rows), default=10)
    flag_width = min(longest, _MAX_FLAG_COLUMN, inner - _MIN_HELP_COLUMN)
    for name, rows in panels.items():
        console.print(Panel(_option_lines(rows, flag_width), title=name, title_align="left", border_style="dim"))


class CompactHelpCommand(typer.core.TyperCommand):
    """A typer command whose ``--help`` is :func:`print_help` (everything else is typer's)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_help(self, ctx, Console(highlight=False))
