"""Shared pieces of the agent verbs' terminal output (``verify``, ``check``, ``detect``, ``attribute``, ``rank``).

Everything a run read or a model wrote is untrusted: it goes into :class:`rich.text.Text` objects, never into a
markup string, so ``[bold]`` or ``[/]`` in a claim or a reply prints as written.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from evigraph.errors import ConfigError

__all__ = ("highlighted", "labelled", "plumbing_note", "print_note", "quoted", "table")

HIGHLIGHT = "bold red underline"


def plumbing_note(model: str, model_flag: str = "--model") -> str | None:
    """The one line a verb prints when ``model`` is the embedded model (``None`` for any other model): its
    verdicts show that the pipeline runs, not what the input is worth."""
    from evigraph.generators.factory import parse_model_spec

    try:
        kind = parse_model_spec(model).kind
    except ConfigError:
        return None
    if kind != "embedded":
        return None
    return (
        f"note: {model} is the embedded 135M plumbing model: this output shows the pipeline running, it is not a "
        f"real verifier's verdict; give a real model with {model_flag} (openai:MODEL@URL, vllm:DIR, a local model "
        "directory)."
    )


def print_note(note: str | None, *, as_json: bool, console: Console, err_console: Console) -> None:
    """``note`` as one yellow line: on stdout beside the rendered output, on stderr when stdout carries JSON."""
    if note is not None:
        (err_console if as_json else console).print(Text(note, style="yellow"), soft_wrap=True)


def highlighted(text: str, spans: Iterable[tuple[int, int]], style: str = HIGHLIGHT) -> Text:
    """``text`` with the half-open character ``spans`` styled (offsets outside the text are clipped)."""
    shown = Text(text)
    for start, end in spans:
        start, end = max(0, start), min(len(text), end)
        if start < end:
            shown.stylize(style, start, end)
    return shown


def quoted(text: str, style: str = "") -> Text:
    """``text`` between curly quotes, as text."""
    return Text.assemble("“", (text, style), "”")


def labelled(label: str, value: str | Text, style: str = "bold") -> Text:
    """``label: value`` with the label styled and the value as text."""
    return Text.assemble((f"{label}: ", style), value if isinstance(value, Text) else Text(value))


def table(*columns: str, title: str | None = None) -> Table:
    """A light table with these column headers (cells must be :class:`~rich.text.Text` where they hold
    untrusted text: a plain string cell is read as markup)."""
    return Table(*columns, title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
