"""Veri-R1's CLI hooks: ``evigraph verify|eval|score|reward|filter veri-r1 ...``.

Each function is a typer command; it parses flags, calls library functions and renders. Shared generator
flags come from :mod:`evigraph.cli.options`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from evigraph.cli.options import (
    ConfigOpt,
    ConstrainedOpt,
    MaxNewTokensOpt,
    ModelOpt,
    NumThreadsOpt,
    SeedOpt,
    TemperatureOpt,
    TopPOpt,
    generator_overrides,
)
from evigraph.errors import ConfigError

__all__ = ("eval_command", "filter_command", "reward_command", "run_command", "score_command")

console = Console()
err_console = Console(stderr=True)

_SEARCH = "Search"
CorpusOpt = Annotated[
    str | None,
    typer.Option(
        "--corpus", help="BM25 corpus: a name (`evigraph corpus list`) or a corpus directory.", rich_help_panel=_SEARCH
    ),
]
RetrieverUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--retriever-url", help="A Search-R1 style /retrieve server instead of a local corpus.", rich_help_panel=_SEARCH
    ),
]
RestrictOpt = Annotated[
    bool,
    typer.Option("--restrict-to-retrieved", help="Drop cited ids that no information block showed (spec §9 #12)."),
]
CompatOpt = Annotated[
    bool,
    typer.Option("--compat", help="Score exactly like the reference Veri-R1 evaluator (quirks included)."),
]
MaxSearchesOpt = Annotated[int, typer.Option("--max-searches", help="Search budget per claim.")]


def _settings(config: Path | None, overrides: dict[str, Any]) -> Any:
    from evigraph.config import load_settings

    return load_settings(overrides, config_path=config)


def _generator(settings: Any) -> tuple[Any, Any]:
    """The configured generator and its sampling parameters."""
    from evigraph.generators.factory import make_generator, sampling_params

    with err_console.status(f"loading {settings.generator.model} ..."):
        generator = make_generator(settings.generator)
    return generator, sampling_params(settings.generator)


def _search_tool(corpus: str | None, retriever_url: str | None) -> Any:
    if corpus and retriever_url:
        raise ConfigError("give --corpus or --retriever-url, not both")
    if retriever_url:
        from evigraph.tools.remote_search import RemoteSearch

        return RemoteSearch(retriever_url)
    if not corpus:
        raise ConfigError("online verification needs --corpus NAME|DIR or --retriever-url URL (or --offline)")
    from evigraph.corpora.registry import resolve_corpus
    from evigraph.tools.search import BM25Search

    with err_console.status(f"opening corpus {corpus} ..."):
        return BM25Search(resolve_corpus(corpus), name=corpus)


def _config(settings: Any, overrides: dict[str, Any], **fields: Any) -> Any:
    """The agent config: the per-turn cap only when given on the command line (else the spec's 512)."""
    from evigraph.agents.veri_r1.schemas import VeriR1Config

    fields["constrained"] = settings.generator.constrained
    max_new_tokens = overrides.get("generator.max_new_tokens")
    if max_new_tokens is not None:
        fields["max_new_tokens"] = fields["offline_max_new_tokens"] = max_new_tokens
    return VeriR1Config(**fields)


def run_command(
    claim: Annotated[str, typer.Argument(help="The claim to verify.")],
    corpus: CorpusOpt = None,
    retriever_url: RetrieverUrlOpt = None,
    max_searches: MaxSearchesOpt = 3,
    restrict_to_retrieved: RestrictOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole trajectory as JSON.")] = False,
    config: ConfigOpt = None,
    model: ModelOpt = None,
    max_new_tokens: MaxNewTokensOpt = None,
    temperature: TemperatureOpt = None,
    top_p: TopPOpt = None,
    seed: SeedOpt = None,
    num_threads: NumThreadsOpt = None,
    constrained: ConstrainedOpt = None,
) -> None:
    """Verify one claim online: print the label, the cited entries and the search trace."""
    from evigraph.graphs.veri_r1 import build_veri_r1_graph, flat_response

    search = _search_tool(corpus or (None if retriever_url else "demo"), retriever_url)
    overrides = generator_overrides(model, max_new_tokens, temperature, top_p, seed, num_threads, constrained)
    settings = _settings(config, overrides)
    agent_config = _config(settings, overrides, max_searches=max_searches, restrict_to_retrieved=restrict_to_retrieved)
    generator, sampling = _generator(settings)
    graph = build_veri_r1_graph(generator, search, agent_config, sampling=sampling)
    with err_console.status("verifying ..."):
        state = asyncio.run(graph.ainvoke({"claim": claim}))
    trajectory, output = state["trajectory"], state["output"]
    if as_json:
        sys.stdout.write(trajectory.model_dump_json(indent=2) + "\n")
        return
    for segment in trajectory.segments[1:]:
        style = "cyan" if segment.origin == "policy" else "dim"
        console.print(f"[{style}]{escape(segment.text.strip())}[/]")
    console.rule()
    label = output.label or "no label (unparseable answer)"
    console.print(f"[bold]Label:[/] {escape(label)}")
    from evigraph.agents.veri_r1.data import information_entries

    shown_text = {e.id: e.text for e in information_entries(flat_response(trajectory.segments))}
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
        console.print(f"[red]run failed in {trajectory.error.where}: {escape(trajectory.error.message)}[/]")


def _load_claims(data: Path, limit: int | None, seed: int | None) -> list[Any]:
    from evigraph.agents.veri_r1.data import claim_record_from_mapping
    from evigraph.evaluation.records import load_records

    return load_records(data, claim_record_from_mapping, id_of=lambda r: r.id, limit=limit, shuffle_seed=seed)


def _run_graph_over(
    claims: list[Any],
    graph: Any,
    out_dir: Path,
    run_config: dict[str, Any],
    *,
    concurrency: int,
    retry_failed: bool,
    description: str,
) -> Any:
    from evigraph.agents.veri_r1.evaluation import run_claim
    from evigraph.evaluation.pipeline import run_in_dir

    async def run_one(record: Any) -> Any:
        return await run_claim(graph, record)

    return run_in_dir(
        claims,
        run_one,
        id_of=lambda r: r.id,
        out_dir=out_dir,
        run_config=run_config,
        concurrency=concurrency,
        retry_failed=retry_failed,
        description=description,
    )


def eval_command(
    data: Annotated[
        Path, typer.Option("--data", help="Eval JSONL (shared eval files as they are, or {id, claim, ...}).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Run directory: predictions.jsonl, report.json, plots.")],
    corpus: CorpusOpt = None,
    retriever_url: RetrieverUrlOpt = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Offline variant: entries given in each record, no search.")
    ] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Claims in flight at once.")] = 4,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Run only N records.")] = None,
    sample_seed: Annotated[
        int | None, typer.Option("--seed", help="Pick the --limit records at random with this seed (else the first N).")
    ] = None,
    max_searches: MaxSearchesOpt = 3,
    restrict_to_retrieved: RestrictOpt = False,
    compat: CompatOpt = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Re-run records whose run failed.")] = False,
    config: ConfigOpt = None,
    model: ModelOpt = None,
    max_new_tokens: MaxNewTokensOpt = None,
    temperature: TemperatureOpt = None,
    top_p: TopPOpt = None,
    seed: SeedOpt = None,
    num_threads: NumThreadsOpt = None,
    constrained: ConstrainedOpt = None,
) -> None:
    """Verify every claim of --data (resumable: rerun the same command after an interruption)."""
    from pydantic import RootModel

    from evigraph.agents.veri_r1.evaluation import VeriR1Record, gold_of, run_report, write_plots
    from evigraph.evaluation.runner import read_results, write_report
    from evigraph.graphs.veri_r1 import build_offline_graph, build_veri_r1_graph

    claims = _load_claims(data, limit, sample_seed)
    if offline and not all(c.passages for c in claims):
        missing = next(c.id for c in claims if not c.passages)
        raise ConfigError(f"--offline needs the entries in every record; record {missing!r} in {data} has none")
    overrides = generator_overrides(model, max_new_tokens, temperature, top_p, seed, num_threads, constrained)
    settings = _settings(config, overrides)
    agent_config = _config(settings, overrides, max_searches=max_searches, restrict_to_retrieved=restrict_to_retrieved)
    run_config = {
        "agent": "veri-r1",
        "variant": "offline" if offline else "online",
        "data": str(data.resolve()),
        "corpus": corpus,
        "retriever_url": retriever_url,
        "generator": settings.generator.model_dump(mode="json", exclude={"num_threads"}),
        "config": agent_config.model_dump(mode="json"),
    }
    search = None if offline else _search_tool(corpus, retriever_url)
    generator, sampling = _generator(settings)
    if offline:
        graph = build_offline_graph(generator, agent_config, sampling=sampling)
    else:
        graph = build_veri_r1_graph(generator, search, agent_config, sampling=sampling)
    summary = _run_graph_over(
        claims,
        graph,
        out,
        run_config,
        concurrency=concurrency,
        retry_failed=retry_failed,
        description=f"veri-r1 {data.name}",
    )
    wanted = {c.id for c in claims}
    records = [r for r in read_results(out / "predictions.jsonl", VeriR1Record) if r.id in wanted]
    report, metrics = run_report(records, gold_of(claims), summary, compat=compat)
    if metrics is not None:
        write_plots(metrics, out)
    write_report(out, RootModel[dict[str, Any]](report))
    console.print_json(json.dumps({k: report[k] for k in _HEADLINE if k in report}))
    err_console.print(f"[dim]{escape(str(out))}: predictions.jsonl, report.json and plots[/]")


_HEADLINE = (
    "n",
    "label_accuracy",
    "verification_accuracy",
    "joint_accuracy",
    "evidence_score",
    "format_rate",
    "n_failed_runs",
)


def score_command(
    pred: Annotated[Path, typer.Option("--pred", help="Predictions JSONL: id + response (raw model text).")],
    gold: Annotated[Path, typer.Option("--gold", help="Gold JSONL (the shared eval files as they are).")],
    compat: CompatOpt = False,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the report here.")] = None,
) -> None:
    """Score any system's outputs; prints the report JSON to stdout."""
    from evigraph.agents.veri_r1.evaluation import read_predictions, score_predictions
    from evigraph.agents.veri_r1.gold import read_gold

    result = score_predictions(read_predictions(pred), read_gold(gold), compat=compat)
    text = json.dumps(result.report_json(), indent=2, ensure_ascii=False)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")


def reward_command(
    input_path: Annotated[
        Path, typer.Option("--input", help="JSONL with id + response; gold inline (label/evidence) or via --gold.")
    ],
    gold: Annotated[Path | None, typer.Option("--gold", help="Gold JSONL keyed by id.")] = None,
    compat: Annotated[
        bool, typer.Option("--compat", help="The reference training reward (half credit at ⌈|G|/2⌉ hits).")
    ] = False,
) -> None:
    """Per-record reward components as JSONL on stdout."""
    from evigraph.agents.veri_r1.evaluation import prediction_of, read_predictions
    from evigraph.agents.veri_r1.gold import GoldRecord, gold_evidence, read_gold
    from evigraph.agents.veri_r1.rewards import compat_training_reward, final_reward

    golds = read_gold(gold if gold is not None else input_path)
    for record in read_predictions(input_path):
        if record.id not in golds:
            raise ConfigError(f"{input_path}: record {record.id!r} has no gold label (inline or in --gold)")
        target: GoldRecord = golds[record.id]
        prediction = prediction_of(record)
        reward = compat_training_reward if compat else final_reward
        breakdown = reward(
            pred_label=prediction.label,
            pred_evidence=prediction.evidence,
            gold_label=target.label,
            gold_evidence=gold_evidence(target, compat=compat),
            format_ok=prediction.format_ok,
        )
        sys.stdout.write(json.dumps({"id": record.id, **breakdown.model_dump()}) + "\n")


def filter_command(
    data: Annotated[Path, typer.Option("--data", help="Training JSONL (records with gold label and evidence).")],
    out: Annotated[Path, typer.Option("--out", help="Run directory: teacher predictions and kept.jsonl.")],
    teacher: Annotated[str, typer.Option("--teacher", help="Teacher generator spec (as --model).")],
    corpus: Annotated[
        str | None,
        typer.Option("--corpus", help="Corpus for records without given entries: gold entries + top-3 others."),
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1)] = 4,
    limit: Annotated[int | None, typer.Option("--limit", min=1)] = None,
    sample_seed: Annotated[
        int | None, typer.Option("--seed", help="Random --limit subset and context shuffle.")
    ] = None,
    config: ConfigOpt = None,
    max_new_tokens: MaxNewTokensOpt = None,
    num_threads: NumThreadsOpt = None,
) -> None:
    """Keep the samples an offline teacher gets exactly right: label and the exact gold evidence set (spec §6)."""
    from evigraph.agents.veri_r1.evaluation import VeriR1Record
    from evigraph.agents.veri_r1.filtering import keep_record, with_offline_context
    from evigraph.evaluation.runner import read_results
    from evigraph.graphs.veri_r1 import build_offline_graph

    claims = _load_claims(data, limit, sample_seed)
    if any(c.gold is None for c in claims):
        missing = next(c.id for c in claims if c.gold is None)
        raise ConfigError(f"filter needs gold label and evidence; record {missing!r} in {data} has none")
    if not all(c.passages for c in claims):
        if corpus is None:
            raise ConfigError("some records carry no entries: give --corpus to build their offline context")
        claims = with_offline_context(claims, _search_tool(corpus, None), seed=sample_seed or 0)
    overrides = generator_overrides(teacher, max_new_tokens, None, None, None, num_threads)
    settings = _settings(config, overrides)
    agent_config = _config(settings, overrides)
    generator, sampling = _generator(settings)
    graph = build_offline_graph(generator, agent_config, sampling=sampling)
    run_config = {
        "agent": "veri-r1",
        "variant": "filter",
        "data": str(data.resolve()),
        "teacher": teacher,
        "config": agent_config.model_dump(mode="json"),
    }
    _run_graph_over(claims, graph, out, run_config, concurrency=concurrency, retry_failed=False, description="filter")
    results = {r.id: r for r in read_results(out / "predictions.jsonl", VeriR1Record)}
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
