"""Veri-R1's own commands: ``evigraph verify CLAIM`` and ``evigraph filter veri-r1``.

``eval``, ``score`` and ``reward`` come from the agent's contract (:mod:`evigraph.cli.agent_commands`); the
shared flags (``--config``, ``--generator.*``, the config's fields, ``--corpus``/``--retriever-url``) and the
settings, generator, search tool and graph come from :mod:`evigraph.cli.kit`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from evigraph.cli.kit import AgentRun, agent_command
from evigraph.cli.render import table
from evigraph.cli.text_args import read_inputs
from evigraph.errors import ConfigError

__all__ = ("filter_command", "run_command")

console = Console()
err_console = Console(stderr=True)


@agent_command(
    resources=("search",),
    refuses={"--offline": "verify runs online; the offline variant needs given entries (evigraph eval --offline)"},
)
def run_command(
    run: AgentRun,
    claim: Annotated[
        str, typer.Argument(metavar="CLAIM", help="The claim to verify: TEXT, @FILE or - (stdin).", show_default=False)
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory as JSON.")] = False,
) -> None:
    """Verify one claim online (the bundled demo corpus unless --corpus or --retriever-url): print the search
    trace block by block, the label and the cited entries."""
    if run.config().offline:  # type: ignore[attr-defined]  # set in a config file (the flag is refused)
        raise ConfigError("verify runs online; the offline variant needs given entries (evigraph eval --offline)")
    text = read_inputs({"CLAIM": claim}).text("CLAIM")
    inputs = run.inputs({"claim": text})  # a blank claim is refused before the search tool opens
    run.run_once(
        inputs,
        show_trajectory=_show,
        as_json=as_json,
        resources={"search": run.resource("search", default="demo")},
        status="verifying ...",
    )


_BLOCK_STYLES = {"plan": "magenta", "search": "cyan", "think": "blue", "answer": "bold green"}


def _show(output: Any, trajectory: Any) -> None:
    """The run block by block (plan, search, the entries it returned with the cited ones marked, think,
    answer), then the label, the cited entries and a summary line."""
    from evigraph.agents.veri_r1.data import information_entries
    from evigraph.agents.veri_r1.protocol import VERI_R1_PROTOCOL

    cited = set(output.evidence)
    trace = table("", "", title="search trace")
    trace.show_header = False
    for segment in trajectory.segments[1:]:
        if segment.origin == "environment":
            for entry in information_entries(segment.text):
                mark = "cited" if entry.id in cited else ""
                shown = Text.assemble((f"[[{entry.id}]]", "bold" if mark else "dim"), ": ", entry.text)
                trace.add_row(Text(f"result {mark}".strip(), style="green" if mark else "dim"), shown)
            continue
        blocks = [b for b in VERI_R1_PROTOCOL.parse(segment.text, writer="policy").blocks if b.depth == 0]
        for block in blocks:
            trace.add_row(Text(block.tag, style=_BLOCK_STYLES.get(block.tag, "")), Text(block.content.strip()))
        if not blocks and segment.text.strip():
            trace.add_row(Text("(text)", style="yellow"), Text(segment.text.strip()))
    console.print(trace)
    confidence = f" (confidence {output.confidence:.2f})" if output.confidence is not None else ""
    label = output.label or "no label (unparseable answer)"
    console.print(Text.assemble(("Label: ", "bold"), (label, "bold"), confidence))
    shown_text = {e.id: e.text for e in information_entries(trajectory.response)}
    for evidence_id in output.evidence:
        text = shown_text.get(evidence_id)
        shown = f"[[{evidence_id}]]: {text}" if text is not None else f"[[{evidence_id}]] (never retrieved)"
        console.print(Text("  " + shown), soft_wrap=True)
    fails = f", failed {', '.join(output.format_failed)}" if output.format_failed else ""
    timing = trajectory.timing
    fmt = "ok" if output.format_ok else "broken"
    console.print(
        Text(
            f"{output.n_searches} search(es), {output.n_turns} turn(s), format {fmt}{fails}; "
            f"{timing.wall_s:.1f} s ({timing.generated_tokens} tokens generated)",
            style="dim",
        )
    )


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
    evidence set. Records without entries get gold entries plus top-3 others from --corpus."""
    # The training-data filter of specs/veri-r1.md §6.
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
