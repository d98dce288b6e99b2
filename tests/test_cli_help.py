"""What ``--help`` tells a user: every command's help is readable without the specs (no ``§`` references),
``evigraph --help`` says what each agent's own command does, and messages pick ``a`` or ``an`` by the word."""

from __future__ import annotations

import re

import pytest
import typer
from pydantic import ValidationError
from typer.testing import CliRunner

from evigraph.cli.app import app, own_command_help
from evigraph.registry import HOOKS, AgentSpec, load_agents
from evigraph.wording import with_article

AGENTS = load_agents()[0]
ROOT = typer.main.get_command(app)
ENV = {"COLUMNS": "240", "NO_COLOR": "1", "TERM": "dumb"}


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env=ENV)
    assert result.exit_code == 0, (command, result.output)
    return result.output


def _commands() -> list[tuple[str, ...]]:
    """Every command a user can ask ``--help`` of: the built-in ones and their subcommands, and each command
    an agent answers (``evigraph eval seva``, ``evigraph verify``)."""
    found: list[tuple[str, ...]] = [()]
    for name, command in ROOT.commands.items():  # type: ignore[attr-defined]
        found.append((name,))
        found.extend((name, sub) for sub in getattr(command, "commands", {}))
    for agent, spec in AGENTS.items():
        found.extend((command,) if command == spec.verb else (command, agent) for command in spec.commands())
    return list(dict.fromkeys(found))


@pytest.mark.parametrize("command", _commands(), ids=lambda c: " ".join(c) or "evigraph")
def test_help_cites_no_spec_section(command: tuple[str, ...]) -> None:
    text = _help(*command)
    assert "§" not in text, [line.strip() for line in text.splitlines() if "§" in line]


def _listed(text: str) -> dict[str, str]:
    """``command → description`` from the Commands panel of ``evigraph --help``."""
    rows = re.findall(r"^│ ([a-z][a-z0-9-]*)\s{2,}(.*?)\s*│$", text, flags=re.MULTILINE)
    return dict(rows)


def test_root_help_says_what_each_agent_command_does() -> None:
    listed = _listed(_help())
    own = {command for spec in AGENTS.values() for command in set(spec.hooks) - set(HOOKS)}
    assert {"meta-eval", "synthesize", "prepare", "annotate", "evolve", "filter"} <= own
    for command in own:
        assert listed.get(command, "").strip(), f"{command}: no description in evigraph --help"
        for name, spec in AGENTS.items():
            if command in spec.hooks:
                assert spec.command_help.get(command), f"{name} declares no command_help for {command!r}"
                assert spec.command_help[command][:40] in listed[command]


def test_own_command_help_names_each_owner_and_says_each_line_once() -> None:
    def spec(name: str, line: str | None) -> AgentSpec:
        return AgentSpec(
            name=name,
            description="d",
            hooks={"prepare": "json:dumps"},
            command_help={"prepare": line} if line else {},
        )

    agents = {"a": spec("a", "Build records."), "b": spec("b", "Build records."), "c": spec("c", None)}
    assert own_command_help("prepare", agents) == "Build records. (agents: a, b, c)"
    assert own_command_help("prepare", {"c": agents["c"]}) == "A command of the agent's own. (agent: c)"


def test_command_help_is_checked_against_the_hooks() -> None:
    with pytest.raises(ValidationError, match="only commands of the agent's own"):
        AgentSpec(name="x", description="d", hooks={"run": "json:dumps"}, command_help={"run": "Runs."})
    with pytest.raises(ValidationError, match="one non-empty line"):
        AgentSpec(name="x", description="d", hooks={"prep": "json:dumps"}, command_help={"prep": " "})


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("'eval'", "an 'eval'"),
        ("'score'", "a 'score'"),
        ("AIMessage", "an AIMessage"),
        ("ToolMessage", "a ToolMessage"),
        ("entity", "an entity"),
    ],
)
def test_with_article_picks_a_or_an_by_the_first_letter(word: str, expected: str) -> None:
    assert with_article(word) == expected


def test_a_hook_command_without_an_agent_uses_the_right_article() -> None:
    result = CliRunner().invoke(app, ["eval"], env=ENV)
    assert result.exit_code == 2
    assert "Agents with an 'eval' command:" in result.output and "a 'eval'" not in result.output
    assert "Agents with a 'score' command:" in CliRunner().invoke(app, ["score"], env=ENV).output
