"""``evigraph eval|score|reward AGENT``, built from the agent's contract (its graph builder, evaluation adapter and
rewards) for any registered agent: an agent gets these commands by declaring the pieces, with no CLI code."""

# No `from __future__ import annotations`: the commands below are closures whose typer annotations use local
# values (the agent's reward names), so they must be evaluated where they are written.
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from evigraph.cli.kit import AgentRun, agent_command, bind_command
from evigraph.errors import ConfigError
from evigraph.registry import LoadedAgent

__all__ = ("contract_command",)

console = Console()
err_console = Console(stderr=True)


def contract_command(agent: LoadedAgent, name: str) -> Callable[..., None]:
    """The framework's ``name`` command (``eval``, ``score`` or ``reward``) for ``agent``.

    Raises:
        ConfigError: the agent does not declare what the command needs.
    """
    if name == "eval":
        return bind_command(_eval_command(agent), agent)
    if name == "score":
        return bind_command(_score_command(agent), agent)
    if name == "reward":
        return bind_command(_reward_command(agent), agent)
    raise ConfigError(f"agent {agent.name!r} has no {name!r} hook")


def _eval_command(agent: LoadedAgent) -> Callable[..., None]:
    adapter = agent.require("evaluation")
    agent.require("graph_builder")

    @agent_command(resources=agent.spec.resources, options=adapter.options)
    def eval_command(
        run: AgentRun,
        data: Annotated[Path, typer.Option("--data", help="Input JSONL: one record per line.")],
        out: Annotated[Path, typer.Option("--out", help="Run directory: predictions.jsonl, report.json, plots.")],
        concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Records in flight at once.")] = 4,
        limit: Annotated[int | None, typer.Option("--limit", min=1, help="Run only N records.")] = None,
        sample_seed: Annotated[
            int | None, typer.Option("--seed", help="Pick the --limit records at random with this seed.")
        ] = None,
        retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Re-run records whose run failed.")] = False,
    ) -> None:
        """Run the agent over every record of --data (resumable: rerun the same command after an interruption)."""
        from evigraph.evaluation.pipeline import evaluate

        records = adapter.load_records(data, limit=limit, seed=sample_seed)
        adapter.check_records(records, run.config())
        resources = {name: run.resource(name) for name in agent.spec.resources}
        run_config = {**run.describe(), "data": str(data.resolve())}
        graph = run.graph(**resources)
        report = evaluate(
            adapter,
            graph,
            records,
            out_dir=out,
            run_config=run_config,
            options=run.options,
            concurrency=concurrency,
            retry_failed=retry_failed,
            description=f"{agent.name} {data.name}",
            context=run.context(),
        )
        headline = ("n", *adapter.headline, "n_failed_runs")
        console.print_json(json.dumps({k: report[k] for k in headline if k in report}))
        err_console.print(f"[dim]{escape(str(out))}: predictions.jsonl, report.json and plots[/]")
        if report["n_failed_runs"]:
            err_console.print(f"[red]{report['n_failed_runs']} run(s) failed[/] (rerun with --retry-failed)")
            raise typer.Exit(1)

    return eval_command


def _score_command(agent: LoadedAgent) -> Callable[..., None]:
    adapter = agent.require("evaluation")

    @agent_command(options=adapter.options, generator=False, agent_config=False)
    def score_command(
        run: AgentRun,
        pred: Annotated[Path, typer.Option("--pred", help="Predictions JSONL: ours, or another system's records.")],
        gold: Annotated[Path, typer.Option("--gold", help="Gold JSONL keyed by id.")],
        out: Annotated[Path | None, typer.Option("--out", help="Also write the report here.")] = None,
    ) -> None:
        """Score any system's predictions against gold records; prints the report JSON."""
        from evigraph.evaluation.pipeline import score_report
        from evigraph.files import atomic_write

        predictions, golds = adapter.read_predictions(pred), adapter.read_gold(gold)
        if getattr(adapter, "score_needs_every_gold", False):
            scored = {str(p.id) for p in predictions}
            unscored = [i for i in golds if i not in scored]
            if unscored:
                shown = ", ".join(repr(i) for i in unscored[:5])
                raise ConfigError(f"{pred}: {len(unscored)} gold record(s) of {gold} have no prediction, e.g. {shown}")
        body, _ = score_report(adapter, predictions, golds, run.options)
        text = json.dumps(body, indent=2, ensure_ascii=False)
        if out is not None:
            atomic_write(out, text + "\n")
        sys.stdout.write(text + "\n")

    return score_command


def _reward_command(agent: LoadedAgent) -> Callable[..., None]:
    adapter = agent.require("evaluation")
    names = list(agent.rewards)
    if not names:
        raise ConfigError(f"agent {agent.name!r} declares no reward")
    options = getattr(agent.reward(None), "options", None)

    @agent_command(generator=False, agent_config=False, options=options)
    def reward_command(
        run: AgentRun,
        input_path: Annotated[
            Path, typer.Option("--input", help="Predictions JSONL; gold inline (as in a data file) or via --gold.")
        ],
        gold: Annotated[Path | None, typer.Option("--gold", help="Gold JSONL keyed by id.")] = None,
        reward_name: Annotated[
            str | None, typer.Option("--reward", help=f"Which reward: {', '.join(names)} (default: {names[0]}).")
        ] = None,
    ) -> None:
        """Each prediction's reward components as JSONL on stdout (the reward the trainer optimises)."""
        reward = agent.reward(reward_name)
        if run.options is not None and hasattr(reward, "configure"):
            reward = reward.configure(run.options)
        golds = adapter.read_gold(gold if gold is not None else input_path)
        for prediction in adapter.read_predictions(input_path):
            record_id = str(prediction.id)
            if record_id not in golds:
                raise ConfigError(f"{input_path}: record {record_id!r} has no gold answer (inline or in --gold)")
            rewards = reward(adapter.trajectory_of(prediction), _as_gold(reward, golds[record_id]))
            line: dict[str, Any] = {"id": record_id, **rewards.record()}
            sys.stdout.write(json.dumps(line) + "\n")

    return reward_command


def _as_gold(reward: Any, gold: Any) -> Any:
    """``gold`` as the reward's gold schema (the adapter's gold model may be a different one)."""
    schema = reward.gold_schema
    return gold if isinstance(gold, schema) else schema.model_validate(gold.model_dump())
