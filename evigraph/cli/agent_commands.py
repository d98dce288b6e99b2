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
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from evigraph.cli.kit import AgentRun, agent_command, bind_command
from evigraph.errors import ConfigError
from evigraph.evaluation.records import check_gold, gold_fields
from evigraph.inputs import required_keys
from evigraph.jsonl import iter_json_objects
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
    gold_schema = _gold_schema(agent)
    scorer = f"the scorer of {agent.name}"

    @agent_command(resources=agent.spec.resources, options=adapter.options)
    def eval_command(
        run: AgentRun,
        data: Annotated[Path, typer.Option("--data", help=_data_help(agent, gold_schema))],
        out: Annotated[Path, typer.Option("--out", help="Run directory: predictions.jsonl, report.json, plots.")],
        concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Records in flight at once.")] = 4,
        limit: Annotated[int | None, typer.Option("--limit", min=1, help="Run only N records.")] = None,
        sample_seed: Annotated[
            int | None, typer.Option("--seed", help="Pick the --limit records at random with this seed.")
        ] = None,
        retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Re-run records whose run failed.")] = False,
    ) -> None:
        """Run the agent over every record of --data (resumable: rerun the same command after an interruption)."""
        from evigraph.evaluation.pipeline import PREDICTIONS, evaluate

        records = adapter.load_records(data, limit=limit, seed=sample_seed)
        scored = check_gold(
            data,
            records,
            id_of=lambda r: str(r.id),
            has_gold=lambda r: adapter.gold_of(r) is not None,
            schema=gold_schema,
            scorer=scorer,
        )
        if not scored:
            needed = _gold_words(gold_schema) if gold_schema is not None else "gold answers"
            err_console.print(f"[dim]no record has {escape(needed)}: the report will hold no metrics[/]")
        adapter.check_records(records, run.config())
        resources = {name: run.resource(name) for name in agent.spec.resources}
        run_config = {**run.describe(), "data": str(data.resolve())}
        graph = run.graph(**resources)
        try:
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
        except KeyboardInterrupt:
            # typer would turn Ctrl-C into a silent exit 130; say what is kept and how to go on.
            predictions = out / PREDICTIONS
            kept = _kept(predictions, {str(r.id) for r in records})
            err_console.print(
                f"interrupted: {kept} of {len(records)} records are done and kept in {escape(str(predictions))}; "
                "run the same command to resume (it skips them)",
                soft_wrap=True,
            )
            raise typer.Exit(130) from None
        headline = ("n", *adapter.headline, "n_failed_runs")
        console.print_json(json.dumps({k: report[k] for k in headline if k in report}))
        err_console.print(f"[dim]{escape(str(out))}: predictions.jsonl, report.json and plots[/]")
        if report["n_failed_runs"]:
            err_console.print(f"[red]{report['n_failed_runs']} run(s) failed[/] (rerun with --retry-failed)")
            raise typer.Exit(1)

    return eval_command


def _kept(predictions: Path, wanted: set[str]) -> int:
    """How many of the ``wanted`` ids have a line in ``predictions`` (a line torn by the interrupt not counted)."""
    if not predictions.is_file():
        return 0
    done = {str(data.get("id")) for _, data in iter_json_objects(predictions, tolerate_truncated_tail=True)}
    return len(done & wanted)


def _gold_schema(agent: LoadedAgent) -> type[BaseModel] | None:
    """The gold schema of the agent's scorer: its default reward's, else its adapter's gold lines' (if any)."""
    if agent.rewards:
        schema: type[BaseModel] = agent.reward().gold_schema
        return schema
    return getattr(agent.evaluation, "gold_model", None)


def _gold_words(schema: type[BaseModel]) -> str:
    """The gold fields a record needs, in words: ``label`` or ``one of em, golds``."""
    fields, all_needed = gold_fields(schema)
    named = ", ".join(name for name in fields if name != "id")
    return named if all_needed or len(fields) == 1 else f"one of {named}"


def _data_help(agent: LoadedAgent, gold_schema: type[BaseModel] | None) -> str:
    """``--data``'s help: the fields each record needs, read from the agent's input and gold schemas."""
    inputs = ["id", *(name for name in _required_inputs(agent.input_schema) if name not in {"id", "gold"})]
    text = f"Input JSONL, one record per line, with {', '.join(inputs)}"
    if gold_schema is None:
        return text + "."
    return text + f"; for a report with metrics every record also needs its gold: {_gold_words(gold_schema)}."


def _required_inputs(schema: type | None) -> tuple[str, ...]:
    """The required keys of a graph input schema (a TypedDict or a pydantic model)."""
    if schema is None:
        return ()
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return tuple(name for name, field in schema.model_fields.items() if field.is_required())
    return required_keys(schema)


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
