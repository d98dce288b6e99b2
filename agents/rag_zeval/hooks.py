"""RAG-Zeval's own commands: ``evigraph rank`` (one question, several answers), ``evigraph synthesize rag-zeval``
(ranked candidate sets by context-aware decoding) and ``evigraph meta-eval rag-zeval`` (agreement with human
judgements: RAGChecker's correctness release, WikiEval's faithfulness pairs).

``eval``, ``score`` and ``reward`` come from the agent's contract (:mod:`evigraph.cli.agent_commands`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from evigraph.cli.kit import AgentRun, agent_command
from evigraph.cli.render import table
from evigraph.cli.text_args import INPUT, read_inputs

__all__ = ("meta_eval_command", "rank_command", "synthesize_command")

console = Console()
err_console = Console(stderr=True)


_ANSWERS_HELP = "Answers, two or more, each TEXT, @FILE or - (stdin); a file path is read too: --responses a.txt b.txt"


@agent_command()
def rank_command(
    run: AgentRun,
    question: Annotated[str, typer.Option("--question", metavar=INPUT, help="The question: TEXT, @FILE or -.")],
    reference: Annotated[
        str,
        typer.Option(
            "--reference",
            metavar=INPUT,
            help="Retrieved passages, or with --kind correctness the true answer: TEXT, @FILE or -.",
        ),
    ],
    responses: Annotated[list[str] | None, typer.Option("--responses", metavar=INPUT, help=_ANSWERS_HELP)] = None,
    more: Annotated[
        list[str] | None, typer.Argument(metavar="ANSWER", help="More answers.", show_default=False)
    ] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="faithfulness (reference = passages) or correctness (reference = answer).")
    ] = "faithfulness",
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory as JSON.")] = False,
) -> None:
    """Score several answers to one question against a reference, claim by claim, and rank them (tied answers
    share a place)."""
    from evigraph.errors import ConfigError

    if kind not in ("faithfulness", "correctness"):
        raise ConfigError(f"--kind must be faithfulness or correctness, got {kind!r}", source="--kind")
    given = [*(responses or ()), *(more or ())]
    if len(given) < 2:
        raise ConfigError(f"rank needs at least two answers, got {len(given)}", source="--responses")
    texts = read_inputs(
        {"--question": question, "--reference": reference, "--responses": given}, path_ok=("--responses",)
    )
    answers = texts.many("--responses")
    names = [answer.origin or f"answer {number}" for number, answer in enumerate(answers, start=1)]
    inputs = {
        "question": texts.text("--question"),
        "reference": texts.text("--reference"),
        "candidates": [answer.text.strip() for answer in answers],
    }
    run.run_once(
        {**inputs, "kind": kind},
        show=lambda output: _show(output, names, inputs["candidates"]),
        as_json=as_json,
        ok=lambda output: output.parse_mode != "failed",
        status=f"evaluating {len(answers)} answers ...",
    )


def _places(scores: Sequence[float]) -> list[tuple[int, bool]]:
    """Per candidate its place (1 + the number of better-scored candidates) and whether another shares it.

    >>> _places([0.5, 1.0, 0.5])
    [(2, True), (1, False), (2, True)]
    """
    return [(1 + sum(other > score for other in scores), list(scores).count(score) > 1) for score in scores]


def _show(output: Any, names: list[str], answers: list[str]) -> None:
    """The ranking (ties marked), then per answer, best first, its claims with their labels and evidence."""
    if output.parse_mode == "failed":
        console.print(Text.assemble(("unreadable evaluation: ", "red"), output.parse_error or ""))
        return
    if output.parse_mode == "lenient":
        console.print(Text("the reply was not valid JSON; scores come from the regex fallback", style="yellow"))
    elif not output.format_ok:
        console.print(Text.assemble(("format problems: ", "yellow"), output.parse_error or ""))
    places = _places(output.scores)
    ranking = table("place", "answer", "S", title=f"ranking by {output.kind}: S = supported claims / claims")
    for index in output.ranking:
        candidate, (place, tied) = output.candidates[index], places[index]
        ranking.add_row(
            Text(f"{place} (tie)" if tied else str(place), style="bold"),
            Text(f"{names[index]} (shown as {candidate.id})", overflow="fold"),
            Text(f"{candidate.supported}/{candidate.total} = {candidate.score:.3f}"),
        )
    console.print(ranking)
    for index in output.ranking:
        candidate = output.candidates[index]
        console.print(Text.assemble((f"{names[index]}: ", "bold"), (answers[index], "dim")), soft_wrap=True)
        if not candidate.claims:
            console.print(Text("   (labels only: the regex fallback reads no claims)", style="dim"))
            continue
        claims = table("", "claim", "evidence")
        for claim in candidate.claims:
            mark = Text("supported", style="green") if claim.is_supported else Text("unsupported", style="red")
            claims.add_row(mark, Text(claim.claim), Text(" | ".join(claim.grounding_evidence) or "-"))
        console.print(claims)


@agent_command()
def meta_eval_command(
    run: AgentRun,
    human: Annotated[
        Path | None, typer.Option("--human", help="RAGChecker's human_labeled_data.json (correctness).")
    ] = None,
    system: Annotated[
        Path | None,
        typer.Option("--system", help="Scores in baseline_ragchecker.json's shape; omitted: run our evaluator."),
    ] = None,
    score_key: Annotated[
        str | None, typer.Option("--score-key", help="The score block under model1/model2 (default: detected).")
    ] = None,
    wikieval: Annotated[
        Path | None, typer.Option("--wikieval", help="WikiEval's release (JSON/JSONL/parquet): pairwise faithfulness.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Run directory for our evaluator's runs (resumable).")
    ] = None,
    by_dataset: Annotated[bool, typer.Option("--by-dataset", help="Add correlations per dataset family.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Score only N instances / pairs.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Runs in flight.")] = 4,
) -> None:
    """Agreement with human judgements: correlations with RAGChecker's correctness preferences (Pearson, Spearman,
    Kendall; fractions, not x100) and WikiEval's best/middle/worst. Prints one JSON object."""
    from evigraph.agents.rag_zeval import ragchecker
    from evigraph.agents.rag_zeval import wikieval as wiki
    from evigraph.errors import ConfigError

    if human is None and wikieval is None:
        raise ConfigError("give --human (RAGChecker's release) and/or --wikieval (WikiEval's)", source="--human")
    if system is not None and human is None:
        raise ConfigError("--system scores need --human labels to compare with", source="--system")
    needs_runs = wikieval is not None or system is None
    if needs_runs and out is None:
        raise ConfigError("running the evaluator needs --out (a run directory; reruns resume)", source="--out")
    body: dict[str, Any] = {"scale": "fraction"}
    if human is not None:
        if system is None:
            assert out is not None
            system = _score_release(run, human, out / "ragchecker", limit=limit, concurrency=concurrency)
            score_key = "rag_zeval"
        report = ragchecker.meta_evaluate(
            ragchecker.read_human_labels(human),
            ragchecker.read_system_scores(system, score_key=score_key),
            group_by=ragchecker.dataset_family if by_dataset else None,
            require_all=limit is None,
        )
        body.update({aspect: c.model_dump() if c else None for aspect, c in report.correlations.items()})
        constant = [aspect for aspect, c in report.correlations.items() if c is None]
        if constant:
            body["note"] = (
                f"{', '.join(constant)}: the system scored both responses of every instance alike "
                "(E(r2) - E(r1) is constant), so no correlation is defined"
            )
        body["human_agreement"] = {a: c.model_dump() if c else None for a, c in report.agreement.items()}
        if by_dataset:
            body["by_dataset"] = {
                group: {a: c.model_dump() if c else None for a, c in values.items()}
                for group, values in report.by_group.items()
            }
        body["instances"], body["system"] = report.instances, str(system)
    if wikieval is not None:
        assert out is not None
        pairs = wiki.load_wikieval(wikieval)[:limit]
        scores = _score_pairs(run, pairs, out / "wikieval", concurrency=concurrency)
        body["wikieval"] = wiki.pairwise_agreement(scores).model_dump()
    sys.stdout.write(json.dumps(body, indent=2) + "\n")


def _run_inputs(run: AgentRun, inputs: list[dict[str, Any]], out: Path, *, concurrency: int) -> dict[str, Any]:
    """Our evaluator over graph inputs (resumable in ``out``); the stored result of each, by id."""
    from evigraph.agents.rag_zeval.evaluation import RagZevalPrediction
    from evigraph.evaluation.pipeline import run_in_dir
    from evigraph.evaluation.runner import read_results

    graph = run.graph()

    async def run_one(item: dict[str, Any]) -> RagZevalPrediction:
        trajectory = (await graph.ainvoke(item, context=run.context()))["trajectory"]
        output, error = trajectory.output, trajectory.error
        return RagZevalPrediction(id=item["id"], output=output, trajectory=trajectory, error=error)

    summary = run_in_dir(
        inputs, run_one, id_of=lambda i: i["id"], out_dir=out, run_config=run.describe(), concurrency=concurrency,
        description="meta-eval",
    )  # fmt: skip
    err_console.print(f"[dim]{summary.model_dump_json()}[/]")
    wanted = {i["id"] for i in inputs}
    return {r.id: r for r in read_results(out / "predictions.jsonl", RagZevalPrediction) if r.id in wanted}


def _score_release(run: AgentRun, human: Path, out: Path, *, limit: int | None, concurrency: int) -> Path:
    """Score both responses of every instance against its ground-truth answer (correctness, K = 2) and write
    the scores in ``baseline_ragchecker.json``'s shape under ``rag_zeval`` (``OUT/system_scores.json``)."""
    from evigraph.agents.rag_zeval.ragchecker import read_instances
    from evigraph.files import atomic_write

    instances = read_instances(human)[:limit]
    inputs = [
        {"id": i.instance_id, "question": i.query, "reference": i.gt_answer, "candidates": list(i.responses),
         "kind": "correctness"}
        for i in instances
    ]  # fmt: skip
    results = _run_inputs(run, inputs, out, concurrency=concurrency)
    rows = []
    for instance in instances:
        scores = _scores(results.get(instance.instance_id), 2)
        rows.append({
            "instance_id": instance.instance_id,
            "dataset": instance.dataset,
            **{f"model{k + 1}": {"rag_zeval": {"correctness_label": float(scores[k])}} for k in range(2)},
        })  # fmt: skip
    path = out / "system_scores.json"
    atomic_write(path, json.dumps(rows, indent=1) + "\n")
    return path


def _score_pairs(run: AgentRun, pairs: list[Any], out: Path, *, concurrency: int) -> list[tuple[Any, Any]]:
    """F(good), F(poor) per WikiEval pair, both scored in one call against the context (K = 2, faithfulness)."""
    inputs = [
        {"id": p.id, "question": p.question, "reference": p.context, "candidates": [p.good, p.poor],
         "kind": "faithfulness"}
        for p in pairs
    ]  # fmt: skip
    results = _run_inputs(run, inputs, out, concurrency=concurrency)
    scored = [_scores(results.get(p.id), 2) for p in pairs]
    return [(s[0], s[1]) for s in scored]


def _scores(result: Any, count: int) -> list[Any]:
    """Exact ``S`` per candidate; a failed run scores 0 for each (it judged nothing)."""
    from fractions import Fraction

    exact = result.exact() if result is not None else None
    return exact if exact is not None and len(exact) == count else [Fraction(0)] * count


_GREEDY_CAD = "context-aware decoding is greedy"


@agent_command(
    agent_config=False,
    refuses={
        "--generator.max-new-tokens": "the cap per answer is --max-new-tokens",
        "--generator.temperature": _GREEDY_CAD,
        "--generator.top-p": _GREEDY_CAD,
        "--generator.seed": f"{_GREEDY_CAD} (--seed orders the items)",
    },
)
def synthesize_command(
    run: AgentRun,
    data: Annotated[
        Path, typer.Option("--data", help="Questions with passages: HotpotQA's or {id, question, passage} lines.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Ranked candidate sets (JSONL; reruns resume).")],
    alphas: Annotated[
        str,
        typer.Option("--alphas", help="Context-aware decoding weights, one answer each, best first (comma-separated)."),
    ] = "0,-0.5,-1,-1.4",
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1, help="Token cap of each answer.")] = 256,
    max_passage_tokens: Annotated[
        int, typer.Option("--max-passage-tokens", min=1, help="Skip items whose passage has more tokens than this.")
    ] = 6000,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Stop once OUT holds N sets (items in a seeded order).")
    ] = None,
    sample_seed: Annotated[int, typer.Option("--seed", help="Order of the items with --limit.")] = 0,
) -> None:
    """Ranked candidate sets by context-aware decoding: one greedy answer per alpha from the local transformers
    model (alpha 0 reads the passage, -1 ignores it, -1.4 pushes away from it). Items with empty or identical
    answers are dropped into OUT.skipped.jsonl; reruns resume."""
    from evigraph.agents.rag_zeval.synthesis import SynthesisConfig, run_synthesis
    from evigraph.agents.rag_zeval.synthesis_data import load_items
    from evigraph.errors import ConfigError

    try:
        weights = tuple(float(a) for a in alphas.split(","))
    except ValueError:
        raise ConfigError(f"--alphas must be comma-separated numbers, got {alphas!r}", source="--alphas") from None
    config = SynthesisConfig(
        alphas=weights, max_new_tokens=max_new_tokens, max_passage_tokens=max_passage_tokens, limit=limit,
        seed=sample_seed,
    )  # fmt: skip
    items = load_items(data)
    generator = run.generator()
    model, tokenizer = getattr(generator, "model", None), getattr(generator, "tokenizer", None)
    if model is None or tokenizer is None:
        raise ConfigError(
            "context-aware decoding needs the transformers backend (--generator.backend transformers): vLLM's "
            "logits processors cannot run the second, no-context pass",
            source="--generator.backend",
        )
    with err_console.status(f"synthesising for {len(items)} item(s) ..."):
        summary = run_synthesis(config, items, model, tokenizer, out)
    sys.stdout.write(summary.model_dump_json(indent=2) + "\n")
