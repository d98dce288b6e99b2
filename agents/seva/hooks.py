"""SEVA's own commands: ``evigraph attribute`` (one pair), ``evigraph annotate seva`` (teacher SFT data) and
``evigraph evolve seva`` (the Verify → Reflect → Probe → Refine loop).

``eval``, ``score`` and ``reward`` come from the agent's contract (:mod:`evigraph.cli.agent_commands`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from evigraph.cli.kit import AgentRun, agent_command, text_or_file

__all__ = ("annotate_command", "attribute_command", "evolve_command")

console = Console()
err_console = Console(stderr=True)


@agent_command()
def attribute_command(
    run: AgentRun,
    claim: Annotated[str, typer.Option("--claim", help="The claim (or @FILE).")],
    source: Annotated[str, typer.Option("--source", help="The source text (or @FILE).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory as JSON.")] = False,
) -> None:
    """Is the claim attributable to the source? A structured verdict: alignments, reasoning, label, diagnosis."""
    inputs = {"claim": text_or_file(claim), "source": text_or_file(source)}
    run.run_once(inputs, show=_show, as_json=as_json, ok=lambda output: output.parse_ok)


def _show(output: object) -> None:
    from evigraph.agents.seva.schemas import SevaOutput

    assert isinstance(output, SevaOutput)
    if not output.parse_ok:
        console.print(f"[red]unreadable verdict: {escape(output.parse_error or '')}[/]")
        console.print(escape(output.raw), soft_wrap=True)
        return
    colour = "green" if output.label == "Attributable" else "red"
    console.print(f"[bold {colour}]{output.label or 'no valid label'}[/] (confidence {output.confidence:.2f})")
    if output.error_type:
        console.print(f"error: {escape(output.error_type)}; fix: {escape(output.fix_suggestion or '-')}")
    parsed = output.parsed or {}
    for step in parsed.get("reasoning_chain") or []:
        if isinstance(step, dict):
            console.print(f"  - {escape(str(step.get('claim_part')))}: {escape(str(step.get('judgment')))}")
    missing = [c.text for c in output.source_spans if not c.found]
    if missing:
        console.print(f"[yellow]{len(missing)} quoted source span(s) not in the source:[/] {escape(repr(missing[:3]))}")
    if output.format_score < 1.0:
        console.print(f"[yellow]format level {output.format_score} (a field is missing or malformed)[/]")


@agent_command(agent_config=False, model_flags=("--teacher",))
def annotate_command(
    run: AgentRun,
    data: Annotated[Path, typer.Option("--data", help="Labelled pairs (any format `eval seva` reads).")],
    out: Annotated[Path, typer.Option("--out", help="SFT JSONL to write (accepted examples).")],
    attempts: Annotated[int, typer.Option("--attempts", min=1, help="Teacher attempts per pair.")] = 3,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Annotate only N pairs.")] = None,
    sample_seed: Annotated[int | None, typer.Option("--seed", help="Pick the --limit pairs with this seed.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Teacher calls in flight.")] = 4,
) -> None:
    """Teacher annotation: structured verdicts for labelled pairs, validated (four checks and the gold label, up
    to --attempts tries), written as SFT examples in the verifier's prompt format; rejects go to OUT.rejected.jsonl."""
    from evigraph.agents.seva.evaluation import EVALUATION
    from evigraph.agents.seva.teacher_job import annotate
    from evigraph.files import atomic_writer

    records = EVALUATION.load_records(data, limit=limit, seed=sample_seed)
    teacher, params = run.generator(), run.sampling()

    async def collect() -> list:
        return [a async for a in annotate(teacher, records, params, attempts=attempts, concurrency=concurrency)]

    with err_console.status(f"annotating {len(records)} pair(s) ..."):
        results = asyncio.run(collect())
    accepted = [a for a in results if a.accepted]
    with atomic_writer(out) as handle:
        for annotation in accepted:
            handle.write(json.dumps(annotation.sft, ensure_ascii=False) + "\n")
    rejected_path = out.with_name(out.name.removesuffix(".jsonl") + ".rejected.jsonl")
    with atomic_writer(rejected_path) as handle:
        for annotation in results:
            if not annotation.accepted:
                handle.write(annotation.model_dump_json(exclude={"sft"}) + "\n")
    console.print_json(
        json.dumps({
            "n": len(results),
            "accepted": len(accepted),
            "acceptance_rate": len(accepted) / len(results) if results else 0.0,
            "mean_attempts": sum(a.attempts for a in results) / len(results) if results else 0.0,
            "out": str(out),
            "rejected": str(rejected_path),
        })
    )  # fmt: skip


@agent_command()
def evolve_command(
    run: AgentRun,
    data: Annotated[Path, typer.Option("--data", help="Labelled pairs (any format `eval seva` reads).")],
    out: Annotated[Path, typer.Option("--out", help="Loop directory (round-N/ folders; rerun to resume).")],
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Verify-Reflect-Probe-Refine rounds.")] = 1,
    budget: Annotated[int, typer.Option("--budget", min=0, help="Probes to generate per round.")] = 30,
    floor: Annotated[float, typer.Option("--floor", min=0.0, help="Budget share every category gets first.")] = 0.0,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Start from N pairs of --data.")] = None,
    sample_seed: Annotated[int | None, typer.Option("--seed", help="Pick --limit pairs and probes with it.")] = None,
    probe_model: Annotated[
        str | None, typer.Option("--probe-model", help="Generator spec writing probes no rule can make.")
    ] = None,
    checker: Annotated[
        str | None, typer.Option("--checker", help="Generator spec cross-checking each probe's error type.")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Verify runs in flight.")] = 4,
) -> None:
    """The self-evolution loop: verify, profile the weaknesses per error type, probe them with targeted
    perturbations, and write the next training set (round-N/train.jsonl for `evigraph train seva`)."""
    from evigraph.agents.seva.data import load_seva_records
    from evigraph.agents.seva.evaluation import EVALUATION
    from evigraph.agents.seva.evolution_job import RoundSettings, run_round

    records = list(EVALUATION.load_records(data, limit=limit, seed=sample_seed))
    settings = RoundSettings(budget=budget, floor=floor, seed=sample_seed or 0, concurrency=concurrency)
    run_config = {**run.describe(), "data": str(data.resolve())}
    writer = run.generator_for(probe_model) if probe_model else None
    cross = run.generator_for(checker) if checker else None
    graph, context = run.graph(), run.context()
    summaries = []
    for index in range(rounds):
        summary = run_round(index, records, out, settings, graph=graph, context=context, run_config=run_config,
                            probe_writer=writer, checker=cross)  # fmt: skip
        summaries.append(summary.model_dump(mode="json"))
        err_console.print(
            f"[dim]round {index}: macro-F1 {summary.macro_f1}, format {summary.format_rate}, "
            f"{summary.probes_accepted}/{summary.probes_attempted} probes accepted, {summary.wall_s:.0f} s[/]"
        )
        records = load_seva_records(out / f"round-{index}" / "next.jsonl").records
    console.print_json(json.dumps({"rounds": summaries, "train": str(out / f"round-{rounds - 1}" / "train.jsonl")}))
