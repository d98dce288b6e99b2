"""SEVA's own commands: ``evigraph attribute`` (one pair), ``evigraph annotate seva`` (teacher SFT data) and
``evigraph evolve seva`` (the Verify → Reflect → Probe → Refine loop).

``eval``, ``score`` and ``reward`` come from the agent's contract (:mod:`evigraph.cli.agent_commands`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from evigraph.cli.kit import AgentRun, agent_command
from evigraph.cli.render import table
from evigraph.cli.text_args import INPUT, read_inputs
from evigraph.event_loop import run_sync

__all__ = ("annotate_command", "attribute_command", "evolve_command")

console = Console()
err_console = Console(stderr=True)


@agent_command()
def attribute_command(
    run: AgentRun,
    claim: Annotated[str, typer.Option("--claim", metavar=INPUT, help="The claim: TEXT, @FILE or - (stdin).")],
    source: Annotated[str, typer.Option("--source", metavar=INPUT, help="The source text: TEXT, @FILE or - (stdin).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory as JSON.")] = False,
) -> None:
    """Is the claim attributable to the source? A structured verdict: alignments, reasoning, label, diagnosis."""
    texts = read_inputs({"--claim": claim, "--source": source})
    inputs = {"claim": texts.text("--claim"), "source": texts.text("--source")}
    run.run_once(inputs, show=_show, as_json=as_json, ok=lambda output: output.parse_ok)


def _cell(value: object) -> Text:
    return Text("" if value is None else str(value))


def _show(output: object) -> None:
    """The verdict line (an error type and fix only with Not Attributable), the evidence alignments with where
    each quoted source span is, and the reasoning chain."""
    from evigraph.agents.seva.decoding import display_text
    from evigraph.agents.seva.schemas import SevaOutput

    assert isinstance(output, SevaOutput)
    if not output.parse_ok:
        console.print(Text.assemble(("unreadable verdict: ", "red"), output.parse_error or ""))
        console.print(Text(output.raw), soft_wrap=True)
        return
    colour = "green" if output.label == "Attributable" else "red"
    # A reply that states no confidence shows none: 0.00 would read as a confidence the verdict never gave.
    stated = "" if output.confidence is None else f" (confidence {output.confidence:.2f})"
    verdict = Text.assemble((output.label or "no valid label", f"bold {colour}"), stated)
    if output.label == "Not Attributable" and output.error_type:  # an Attributable verdict has no error
        fix = display_text(output.fix_suggestion) if output.fix_suggestion else "-"
        verdict.append_text(Text.assemble(" · error: ", (output.error_type, "bold"), f" · fix: {fix}"))
    console.print(verdict)
    parsed = output.parsed or {}
    found = {c.index: c for c in output.source_spans if c.field == "evidence_alignment"}
    alignments = table("claim span", "source span", "status", "in the source", title="evidence alignment")
    for index, item in enumerate(parsed.get("evidence_alignment") or []):
        if isinstance(item, dict):
            check = found.get(index)
            where = "-" if check is None else f"[{check.start}, {check.end})" if check.found else "not found"
            alignments.add_row(
                _cell(item.get("claim_span")), _cell(item.get("source_span")), _cell(item.get("status")), Text(where)
            )
    if alignments.row_count:
        console.print(alignments)
    chain = table("claim part", "judgment", "explanation", title="reasoning")
    for step in parsed.get("reasoning_chain") or []:
        if isinstance(step, dict):
            explanation = step.get("explanation")
            shown = display_text(explanation) if isinstance(explanation, str) else explanation
            chain.add_row(_cell(step.get("claim_part")), _cell(step.get("judgment")), _cell(shown))
    if chain.row_count:
        console.print(chain)
    missing = [c.text for c in output.source_spans if not c.found]
    if missing:
        console.print(Text(f"{len(missing)} quoted source span(s) not in the source: {missing[:3]!r}", style="yellow"))
    if output.format_score < 1.0:
        console.print(Text(f"format level {output.format_score} (a field is missing or malformed)", style="yellow"))


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
        results = run_sync(collect)
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
        str | None, typer.Option("--probe-model", help="Model spec writing probes no rule can make.")
    ] = None,
    checker: Annotated[
        str | None, typer.Option("--checker", help="Model spec cross-checking each probe's error type.")
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
