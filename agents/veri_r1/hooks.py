"""Veri-R1's own commands: ``evigraph verify CLAIM`` and ``evigraph filter veri-r1``.

``eval``, ``score`` and ``reward`` come from the agent's contract (:mod:`evigraph.cli.agent_commands`); the
shared flags (``--config``, ``--generator.*``, the config's fields, ``--corpus``/``--retriever-url``) and the
settings, generator, search tool and graph come from :mod:`evigraph.cli.kit`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from evigraph.cli.kit import AgentRun, agent_command
from evigraph.errors import ConfigError

__all__ = ("filter_command", "run_command")

console = Console()
err_console = Console(stderr=True)


@agent_command(resources=("search",))
def run_command(
    run: AgentRun,
    claim: Annotated[str, typer.Argument(help="The claim to verify.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory as JSON.")] = False,
) -> None:
    """Verify one claim online (the bundled demo corpus unless --corpus or --retriever-url): print the label, the
    cited entries and the search trace."""
    from evigraph.agents.veri_r1.data import information_entries

    if run.config().offline:  # type: ignore[attr-defined]
        raise ConfigError("verify runs online; the offline variant needs given entries (evigraph eval --offline)")
    inputs = run.inputs({"claim": claim})
    graph = run.graph(search=run.resource("search", default="demo"))
    context = run.context()
    with err_console.status("verifying ..."):
        result = asyncio.run(graph.ainvoke(inputs, context=context))
    trajectory, output = result["trajectory"], result["output"]
    if as_json:
        sys.stdout.write(trajectory.model_dump_json(indent=2) + "\n")
        return
    for segment in trajectory.segments[1:]:
        style = "cyan" if segment.origin == "policy" else "dim"
        console.print(f"[{style}]{escape(segment.text.strip())}[/]")
    console.rule()
    console.print(f"[bold]Label:[/] {escape(output.label or 'no label (unparseable answer)')}")
    shown_text = {e.id: e.text for e in information_entries(trajectory.response)}
    for evidence_id in output.evidence:
        text = shown_text.get(evidence_id)
        shown = f"[[{evidence_id}]]: {text}" if text is not None else f"[[{evidence_id}]] (never retrieved)"
        console.print(f"  {escape(shown)}", soft_wrap=True)
    fails = f", failed {', '.join(output.format_failed)}" if output.format_failed else ""
    timing = trajectory.timing
    fmt = "ok" if output.format_ok else "broken"
    console.print(
        f"[dim]{output.n_searches} search(es), {output.n_turns} turn(s), format {fmt}{fails}; "
        f"{timing.wall_s:.1f} s ({timing.generated_tokens} tokens generated)[/]"
    )
    if trajectory.error is not None:
        err_console.print(f"[red]run failed in {trajectory.error.where}: {escape(trajectory.error.message)}[/]")
        raise typer.Exit(1)


@agent_command(resources=("search",), model_flags=("--teacher", "--model"))
def filter_command(
    run: AgentRun,
    data: Annotated[Path, typer.Option("--data", help="Training JSONL (records with gold label and evidence).")],
    out: Annotated[Path, typer.Option("--out", help="Run directory: teacher predictions and kept.jsonl.")],
    concurrency: Annotated[int, typer.Option("--concurrency", min=1)] = 4,
    limit: Annotated[int | None, typer.Option("--limit", min=1)] = None,
    sample_seed: Annotated[
        int | None, typer.Option("--seed", help="Random --limit subset and context shuffle.")
    ] = None,
) -> None:
    """Keep the samples an offline teacher (--teacher) gets exactly right: the label and exactly the gold
    evidence set (spec §6). Records without entries get gold entries plus top-3 others from --corpus."""
    from evigraph.agents.veri_r1.evaluation import EVALUATION, VeriR1Record
    from evigraph.agents.veri_r1.filtering import keep_record, with_offline_context
    from evigraph.evaluation.pipeline import PREDICTIONS, run_in_dir
    from evigraph.evaluation.runner import read_results

    claims = EVALUATION.load_records(data, limit=limit, seed=sample_seed)
    if any(c.gold is None for c in claims):
        missing = next(c.id for c in claims if c.gold is None)
        raise ConfigError(f"filter needs gold label and evidence; record {missing!r} in {data} has none")
    if not all(c.passages for c in claims):
        search = run.resource("search")
        if search is None:
            raise ConfigError("some records carry no entries: give --corpus to build their offline context")
        claims = with_offline_context(claims, search, seed=sample_seed or 0)
    graph = run.graph(config=run.config().model_copy(update={"offline": True}))
    context = run.context()

    async def run_one(record: object) -> VeriR1Record:
        return EVALUATION.result(record, await graph.ainvoke(EVALUATION.graph_input(record), context=context))

    run_config = {**run.describe(), "variant": "filter", "data": str(data.resolve())}
    run_in_dir(claims, run_one, id_of=lambda c: c.id, out_dir=out, run_config=run_config, concurrency=concurrency)
    results = {r.id: r for r in read_results(out / PREDICTIONS, VeriR1Record)}
    kept_ids = {c.id for c in claims if c.id in results and keep_record(results[c.id])}
    n_kept = _copy_lines(data, out / "kept.jsonl", kept_ids)
    console.print_json(json.dumps({"n": len(claims), "kept": n_kept, "kept_rate": n_kept / max(1, len(claims))}))


def _copy_lines(source: Path, target: Path, ids: set[str]) -> int:
    """Copy the kept input lines verbatim (nothing the trainer needs is lost or reformatted)."""
    from evigraph.files import atomic_writer

    count = 0
    with source.open(encoding="utf-8") as reader, atomic_writer(target) as writer:
        for line in reader:
            if line.strip() and str(json.loads(line).get("id")) in ids:
                writer.write(line if line.endswith("\n") else line + "\n")
                count += 1
    return count
