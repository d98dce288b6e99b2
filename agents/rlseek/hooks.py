"""RLSeek's own commands: ``evigraph detect`` (one response) and ``evigraph prepare rlseek`` (data sets to records).

``eval``, ``score`` and ``reward`` come from the agent's contract (:mod:`evigraph.cli.agent_commands`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from evigraph.cli.kit import AgentRun, agent_command
from evigraph.cli.render import highlighted, quoted
from evigraph.cli.text_args import INPUT, Inputs, read_inputs
from evigraph.errors import ConfigError

__all__ = ("detect_command", "prepare_command")

console = Console()
err_console = Console(stderr=True)


_SOURCE_HELP = "The grounding text (data-to-text: a JSON object): TEXT, @FILE or - (stdin); a file path is read too."


@agent_command()
def detect_command(
    run: AgentRun,
    source: Annotated[str, typer.Option("--source", metavar=INPUT, help=_SOURCE_HELP)],
    response: Annotated[
        str, typer.Option("--response", metavar=INPUT, help="The text to check (as --source takes it).")
    ],
    task: Annotated[
        str, typer.Option("--task", help="summary, qa, data-to-text or claim (or RAGTruth's Summary, QA, Data2txt).")
    ] = "summary",
    question: Annotated[
        str | None, typer.Option("--question", metavar=INPUT, help="The question (qa): TEXT, @FILE or -.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory as JSON.")] = False,
) -> None:
    """Find the hallucinated spans of one response: the response with each span highlighted, its offsets and
    the source quotes behind it."""
    texts = read_inputs(
        {"--source": source, "--response": response, "--question": question}, path_ok=("--source", "--response")
    )
    record = _record(texts, task)
    run.run_once(record.graph_input(), show=lambda output: _show(output, record), as_json=as_json)


@agent_command(generator=False, agent_config=False)
def prepare_command(
    run: AgentRun,
    out: Annotated[Path, typer.Option("--out", help="Records JSONL to write.")],
    ragtruth: Annotated[
        Path | None, typer.Option("--ragtruth", help="RAGTruth folder (response.jsonl + source_info.jsonl).")
    ] = None,
    faithbench: Annotated[Path | None, typer.Option("--faithbench", help="FaithBench folder or batch file.")] = None,
    split: Annotated[str, typer.Option("--split", help="RAGTruth split: train, test or all.")] = "test",
    tasks: Annotated[str | None, typer.Option("--tasks", help="Comma-separated tasks to keep.")] = None,
    rebalance: Annotated[
        bool, typer.Option("--rebalance", help="Equal hallucinated and clean records, tasks pooled (training).")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --rebalance.")] = 0,
    labels: Annotated[
        str, typer.Option("--labels", help="FaithBench labels counted as hallucinated (comma-separated).")
    ] = "Unwanted,Unwanted.Intrinsic,Unwanted.Extrinsic",
    min_annotators: Annotated[
        int, typer.Option("--min-annotators", min=1, help="FaithBench: annotators needed per character.")
    ] = 1,
) -> None:
    """Turn RAGTruth or FaithBench into RLSeek records (the eval and training input): RAGTruth keeps only
    responses rated good quality; FaithBench merges its annotators' spans per character."""
    # The loaders follow specs/rlseek.md §6.
    from evigraph.agents.rlseek.data import load_faithbench, load_ragtruth
    from evigraph.agents.rlseek.data import rebalance as rebalanced
    from evigraph.files import atomic_writer

    if (ragtruth is None) == (faithbench is None):
        raise ConfigError("give exactly one of --ragtruth and --faithbench")
    if split not in {"train", "test", "all"}:
        raise ConfigError(f"--split must be train, test or all, got {split!r}", source="--split")
    wanted = [t.strip() for t in tasks.split(",")] if tasks else None
    if ragtruth is not None:
        records = load_ragtruth(ragtruth, split=None if split == "all" else split, tasks=wanted)
    else:
        records = load_faithbench(
            faithbench, labels=[x.strip() for x in labels.split(",")], min_annotators=min_annotators
        )  # type: ignore[arg-type]
        records = [r for r in records if wanted is None or r.task in wanted]
    if rebalance:
        records = rebalanced(records, seed=seed)
    with atomic_writer(out) as writer:
        for record in records:
            writer.write(record.model_dump_json(exclude_defaults=False) + "\n")
    positive = sum(bool(r.gold and r.gold.spans) for r in records)
    console.print_json(json.dumps({"n": len(records), "hallucinated": positive, "clean": len(records) - positive}))


def _record(texts: Inputs, task: str) -> Any:
    from pydantic import ValidationError

    from evigraph.agents.rlseek.data import RLSeekRecord
    from evigraph.agents.rlseek.schemas import task_variant

    try:
        variant = task_variant(task)
    except ValueError as error:
        raise ConfigError(f"--task: {error}", source="--task") from None
    question = texts.text("--question")
    if question is not None and not question.strip():
        raise ConfigError("empty or blank", source="--question")
    if variant == "qa" and question is None:
        raise ConfigError("the qa task checks an answer to a question: give the question", source="--question")
    source = texts.one("--source")
    response = texts.text("--response")
    assert source is not None and response is not None  # required options
    body: str | dict[str, Any] = source.text
    if variant == "data-to-text":
        try:
            body = json.loads(source.text)
        except json.JSONDecodeError as error:
            raise ConfigError(
                f"--source {source.where}: a data-to-text source must be a JSON object ({error})"
            ) from None
    try:
        return RLSeekRecord(id="detect", task=task, source=body, response=response, question=question)
    except ValidationError as error:
        from evigraph.jsonl import format_validation_error

        raise ConfigError(f"detect: {format_validation_error(error)}") from None


def _show(output: Any, record: Any) -> None:
    """The response with its spans highlighted, then per span its offsets and the source quotes behind it."""
    if not output.parse_ok:
        console.print(Text.assemble(("no final list: ", "red"), output.parse_error or "unparseable"))
    n_spans = len(output.spans)
    title = f"response ({record.task}): " + (
        f"{n_spans} hallucinated span(s) highlighted" if n_spans else "no hallucinated span found"
    )
    shown = highlighted(record.response, [(s.start, s.end) for s in output.spans])
    console.print(Panel(shown, title=title, title_align="left", border_style="red" if n_spans else "green"))
    for number, span in enumerate(output.spans, start=1):
        console.print(Text.assemble((f"{number}. [{span.start}, {span.end}) ", "bold"), quoted(span.text, "bold red")))
        if span.steps is not None and not span.steps:
            console.print(Text("   named in no reasoning step", style="yellow"))
        elif not span.quotes:
            console.print(Text("   no quote: no step that names this span quoted the source", style="yellow"))
        for index in span.quotes:
            quote = output.quotes[index]
            where = (
                f"source [{quote.start}, {quote.end})"
                if quote.found
                else f"not in the source (LCS {quote.overlap:.0%})"
            )
            console.print(
                Text.assemble("   quote ", quoted(quote.text), (f"  {where}", "dim" if quote.found else "red"))
            )
    for string in output.unmatched:
        console.print(Text.assemble(("listed but not in the response: ", "yellow"), quoted(string)))
    n_found = sum(q.found for q in output.quotes)
    validity = "valid" if output.quotes_valid else "invalid"
    console.print(
        Text(
            f"{len(output.steps)} step(s), {len(output.quotes)} quote(s) ({n_found} found in the source), "
            f"quotation set {validity}",
            style="dim",
        )
    )
