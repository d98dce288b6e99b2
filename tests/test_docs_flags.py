"""Every flag the docs show exists (issue 25): each ``evigraph ...`` command line in a fenced code block of
README.md or docs/ names a command the CLI has, and every ``--flag`` on it is one of that command's parameters
(read from the click command typer builds, through the registry for agent commands, not from rendered help).
Inline code spans that start with ``evigraph`` are checked too, where their words name a command (they may be
patterns such as ``evigraph eval|score AGENT``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer

from evigraph.cli.app import agent_cli_command, build_app
from evigraph.registry import load_agents

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^\s*(```|~~~)")
_SHELLS = {"bash", "sh", "shell", "console", "zsh"}
_INLINE = re.compile(r"`(evigraph [^`]+)`")
_PROGRAM = re.compile(r"(?:^|[\s;&|(])(?:\S*/)?evigraph(?=\s)")
_FLAG = re.compile(r"^\[?(--[A-Za-z][\w.-]*)")


@dataclass(frozen=True)
class Usage:
    """One ``evigraph`` command line in a page."""

    page: Path
    line: int
    words: list[str]
    fenced: bool

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}: evigraph {' '.join(self.words)}"


def _command_lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """``(line number, command text after 'evigraph', fenced)`` for each use in a page: in shell code blocks
    (continued lines joined), and in inline code spans outside code blocks. Blocks in other languages
    (Python, TOML, diagrams) are skipped."""
    fenced, shell, pending, start = False, False, "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if match := _FENCE.match(line):
            fenced, pending = not fenced, ""
            shell = fenced and line.strip().removeprefix(match.group(1)).strip() in _SHELLS
            continue
        if not fenced:
            for match in _INLINE.finditer(line):
                yield number, match.group(1).removeprefix("evigraph "), False
            continue
        if not shell or line.lstrip().startswith("#"):  # other languages; shell comments
            continue
        line = re.split(r"\s#\s", line)[0]
        if not pending:
            start = number
        pending += " " + line.rstrip().removesuffix("\\")
        if line.rstrip().endswith("\\"):
            continue
        for match in _PROGRAM.finditer(pending):
            yield start, pending[match.end() :], True
        pending = ""


def _words(command: str) -> list[str]:
    """The command's words up to a shell comment, pipe or command separator."""
    command = re.split(r"\s#|\s\|\s|&&|;|\)", command)[0]
    try:
        return shlex.split(command)
    except ValueError:  # an unbalanced quote (a "…" placeholder): split on spaces
        return command.split()


def usages() -> list[Usage]:
    found = []
    for page in PAGES:
        for line, command, fenced in _command_lines(page.read_text(encoding="utf-8")):
            found.append(Usage(page, line, _words(command), fenced))
    return found


@cache
def _root() -> Any:
    return typer.main.get_command(build_app())


@cache
def _agents() -> dict[str, Any]:
    agents, broken = load_agents()
    assert not broken, broken
    return {name: spec.load() for name, spec in agents.items()}


def resolve(words: list[str]) -> tuple[Any, str] | None:
    """The click command ``words`` run and its name, or ``None`` when they name no command."""
    agents = _agents()
    verbs = {agent.spec.verb: agent for agent in agents.values() if agent.spec.verb}
    if not words:
        return None
    first = words[0]
    if first in verbs:
        return agent_cli_command(verbs[first], "run"), first
    root = _root()
    command = root.commands.get(first) if hasattr(root, "commands") else None
    if command is None:
        return None
    if getattr(command, "context_settings", {}).get("allow_extra_args"):  # `HOOK AGENT ...`
        agent = agents.get(words[1]) if len(words) > 1 else None
        if agent is None:
            return None
        return agent_cli_command(agent, first), f"{first} {words[1]}"
    while hasattr(command, "commands") and len(words) > 1 and words[1] in command.commands:  # `corpus build`
        words = words[1:]
        command = command.commands[words[0]]
        first = f"{first} {words[0]}"
    return command, first


def flags_of(command: Any) -> set[str]:
    """Every flag name a command accepts (``--no-x`` forms included), hidden (refused) ones left out."""
    names = {"--help"}
    for param in command.params:
        if not getattr(param, "hidden", False):
            names.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("-"))
    return names


def used_flags(words: list[str]) -> list[str]:
    return [m.group(1).split("=")[0] for word in words if (m := _FLAG.match(word))]


USAGES = usages()


def test_the_scan_finds_the_documented_commands() -> None:
    fenced = {u.words[0] for u in USAGES if u.fenced and u.words}
    assert {"verify", "check", "detect", "attribute", "rank"} <= fenced, fenced


@pytest.mark.parametrize("usage", [u for u in USAGES if u.fenced], ids=str)
def test_each_documented_command_line_names_a_command_and_only_its_flags(usage: Usage) -> None:
    resolved = resolve(usage.words)
    assert resolved is not None, f"{usage}: no such command"
    command, name = resolved
    unknown = sorted(set(used_flags(usage.words)) - flags_of(command))
    assert not unknown, f"{usage}: `evigraph {name}` has no {', '.join(unknown)}"


def test_inline_command_spans_use_only_existing_flags() -> None:
    wrong = []
    for usage in (u for u in USAGES if not u.fenced):
        resolved = resolve(usage.words)
        if resolved is None:
            continue  # a pattern (`evigraph eval|score AGENT`), not a command line
        command, name = resolved
        unknown = sorted(set(used_flags(usage.words)) - flags_of(command))
        if unknown:
            wrong.append(f"{usage}: `evigraph {name}` has no {', '.join(unknown)}")
    assert not wrong, "\n".join(wrong)


def test_the_checker_catches_a_wrong_flag() -> None:
    command, _ = resolve(["check", "trace.json"])  # type: ignore[misc]
    assert "--judge" in flags_of(command) and "--generator.max-new-tokens" not in flags_of(command)
    assert used_flags(["detect", "[--task", "qa]", "--json=3"]) == ["--task", "--json"]
    assert resolve(["verfy", "x"]) is None and resolve(["eval", "no-such-agent"]) is None
    assert resolve(["corpus", "build", "x"])[1] == "corpus build"  # type: ignore[index]
